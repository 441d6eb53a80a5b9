#include <gtest/gtest.h>

#include <limits>

#include "sim/test_models.h"
#include "transient/sim/monte_carlo.h"
#include "transient/sim/simulator.h"

namespace transient::sim {
namespace {

Scenario random_scenario() {
  Scenario s = testing::base_scenario(4);
  s.total_steps = 20000;
  s.market = std::make_shared<testing::ExponentialTestModel>(1200.0);
  s.startup.spot_std_s = 4.0;
  s.checkpoint_interval_s = 300;
  s.deadline_s = 5150;
  s.parameter_servers.push_back({testing::cpu(), cloud::Market::on_demand, 1});
  return s;
}

TEST(MonteCarlo, ResultsDoNotDependOnTheThreadCount) {
  const Scenario s = random_scenario();
  MonteCarloOptions options;
  options.runs = 101;
  options.seed = 42;
  options.threads = 1;
  const auto one = run_many(s, options);
  options.threads = 2;
  const auto two = run_many(s, options);
  options.threads = 3;
  const auto three = run_many(s, options);
  ASSERT_EQ(one.size(), 101u);
  for (std::size_t i = 0; i < one.size(); ++i) {
    for (const auto* other : {&two, &three}) {
      EXPECT_EQ(one[i].time_s, (*other)[i].time_s) << i;
      EXPECT_EQ(one[i].cost_usd, (*other)[i].cost_usd) << i;
      EXPECT_EQ(one[i].revocations, (*other)[i].revocations) << i;
      EXPECT_EQ(one[i].redone_steps, (*other)[i].redone_steps) << i;
      EXPECT_EQ(one[i].events, (*other)[i].events) << i;
    }
  }
  const MonteCarloSummary a = summarize(one);
  const MonteCarloSummary b = summarize(two);
  EXPECT_EQ(a.time_s.p95, b.time_s.p95);
  EXPECT_EQ(a.cost_usd.mean, b.cost_usd.mean);
  EXPECT_EQ(a.deadline_miss_probability, b.deadline_miss_probability);
  EXPECT_GT(a.mean_revocations, 0.0);
  EXPECT_GT(a.deadline_miss_probability, 0.0);
  EXPECT_LT(a.deadline_miss_probability, 1.0);
}

TEST(MonteCarlo, RunIUsesSeedBasePlusI) {
  const Scenario s = random_scenario();
  MonteCarloOptions options;
  options.runs = 5;
  options.seed = 100;
  const auto results = run_many(s, options);
  Simulator sim(s);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(results[i].time_s, sim.run(100 + i).time_s);
}

TEST(MonteCarlo, NearestRankStatistics) {
  std::vector<RunResult> results(100);
  for (int i = 0; i < 100; ++i) {
    results[i].finished = i < 90;
    results[i].missed_deadline = i >= 90;
    results[i].time_s = i + 1;
    results[i].cost_usd = 100 - i;
    results[i].revocations = i % 2;
  }
  const MonteCarloSummary s = summarize(results);
  EXPECT_EQ(s.finished, 90);
  EXPECT_DOUBLE_EQ(s.unfinished_share(), 0.1);
  EXPECT_DOUBLE_EQ(s.time_s.mean, 45.5);  // over the finished runs, 1..90
  EXPECT_DOUBLE_EQ(s.time_s.p50, 50);     // the 50th of all 100 runs
  EXPECT_DOUBLE_EQ(s.time_quantile_s(0.90), 90);
  // 10% of the runs never finished: the 91st to 100th times are infinite, and so is p95.
  EXPECT_EQ(s.time_s.p95, std::numeric_limits<double>::infinity());
  EXPECT_EQ(s.time_quantile_s(0.95), s.time_s.p95);
  EXPECT_DOUBLE_EQ(s.cost_usd.p99, 99);
  EXPECT_DOUBLE_EQ(s.mean_revocations, 0.5);
  EXPECT_DOUBLE_EQ(s.revocations.p50, 0.0);  // 50 zeros, then 50 ones
  EXPECT_DOUBLE_EQ(s.revocations.p95, 1.0);
  EXPECT_DOUBLE_EQ(s.deadline_miss_probability, 0.1);
}

// The p-quantile of n runs is the ceil(p n)-th, p n taken as the whole number it is: 0.55 of 100
// runs (55.000000000000007 in doubles) is the 55th, not the 56th.
TEST(MonteCarlo, AQuantileOfAWholeRankTakesThatRun) {
  std::vector<RunResult> results(100);
  for (int i = 0; i < 100; ++i) {
    results[i].finished = true;
    results[i].time_s = i + 1;
  }
  const MonteCarloSummary s = summarize(results);
  EXPECT_DOUBLE_EQ(s.time_quantile_s(0.55), 55);
  EXPECT_DOUBLE_EQ(s.time_quantile_s(0.07), 7);  // 7.000000000000001
  EXPECT_DOUBLE_EQ(s.time_quantile_s(0.551), 56);
  EXPECT_DOUBLE_EQ(s.time_quantile_s(0.996), 100);
  EXPECT_DOUBLE_EQ(s.time_quantile_s(0.01), 1);
}

// An unfinished run is not a fast run: the p95 time stays finite only while at most 5% of the
// runs did not finish, whichever way they ended (at the horizon or failed).
TEST(MonteCarlo, UnfinishedRunsCountAsInfinitelyLong) {
  std::vector<RunResult> results(20);
  for (int i = 0; i < 20; ++i) {
    results[i].finished = true;
    results[i].time_s = 100.0 + i;
  }
  results[3].finished = false;  // gave up at the horizon, which came early
  results[3].time_s = 1.0;
  EXPECT_DOUBLE_EQ(summarize(results).time_s.p95, 119.0);  // 1 of 20 = 5%: the 19th of 19 finite
  results[7].finished = false;
  results[7].failed = true;
  const MonteCarloSummary s = summarize(results);
  EXPECT_EQ(s.time_s.p95, std::numeric_limits<double>::infinity());
  EXPECT_DOUBLE_EQ(s.time_s.p50, 111.0);  // the 10th of 100, 101, 102, 104, 105, 106, 108, ...
  EXPECT_EQ(s.failed, 1);
  EXPECT_DOUBLE_EQ(s.unfinished_share(), 0.1);

  for (auto& r : results) r.finished = false;
  const MonteCarloSummary none = summarize(results);
  EXPECT_EQ(none.time_s.mean, std::numeric_limits<double>::infinity());
  EXPECT_EQ(none.time_s.p50, std::numeric_limits<double>::infinity());
  EXPECT_DOUBLE_EQ(none.unfinished_share(), 1.0);
}

}  // namespace
}  // namespace transient::sim

namespace transient::sim {
namespace {

// The histograms `transient simulate --json` prints for `transient report`.
TEST(MonteCarloReportHistogram, CountsEveryValueOnceInEqualBins) {
  const Histogram h = histogram({1.0, 2.0, 2.5, 3.0, 5.0}, 4);
  EXPECT_EQ(h.edges, (std::vector<double>{1.0, 2.0, 3.0, 4.0, 5.0}));
  EXPECT_EQ(h.counts, (std::vector<int>{1, 2, 1, 1}));  // 3.0 opens bin 3; 5.0 closes the last
  const Histogram same = histogram({7.0, 7.0}, 20);
  EXPECT_EQ(same.edges, (std::vector<double>{7.0, 7.0}));
  EXPECT_EQ(same.counts, (std::vector<int>{2}));
  EXPECT_TRUE(histogram({}, 20).counts.empty());
}

}  // namespace
}  // namespace transient::sim
