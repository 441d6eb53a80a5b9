// The multi-region model: its optimum by hand, against every policy on random markets of up to
// nine regions, and the deadline promise of the deadline-safe policies when they may move.
#include "transient/sim/multi_region.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "sim/test_models.h"
#include "transient/core/random.h"

namespace transient::sim {
namespace {

// Ticks of 100 s, 150 s of work, changeovers 10 s, a move 20 s and $5, notice 5 s, spot $1/s,
// on-demand $3/s.
MultiRegionMarket hand_market(double deadline_s) {
  MultiRegionMarket m;
  m.spot_ticks = {{1, 0, 0, 0}, {0, 1, 0, 0}};
  m.tick_s = 100;
  m.work_s = 150;
  m.deadline_s = deadline_s;
  m.spot_changeover_s = 10;
  m.on_demand_changeover_s = 10;
  m.move_s = 20;
  m.move_usd = 5;
  m.notice_s = 5;
  m.spot_usd_per_s = 1;
  m.on_demand_usd_per_s = 3;
  return m;
}

TEST(MultiRegionSimulation, HandWorkedOptimum) {
  // Spot in region 0 for tick 0 (85 s kept, $100), then move to region 1: a changeover and the
  // move (30 s) and the last 65 s of work, $95 + $5 for the move.
  const MultiRegionResult best = optimal_multi_region(hand_market(300));
  ASSERT_TRUE(best.finished);
  EXPECT_NEAR(best.cost_usd, 200.0, 1e-9);
  EXPECT_NEAR(best.finish_s, 195.0, 1e-9);
  EXPECT_EQ(best.moves, 1);
  EXPECT_EQ(best.ticks, (std::vector<RegionTick>{{ClusterMode::spot, 0}, {ClusterMode::spot, 1}}));
  // With a longer spot period in region 1, waiting out tick 0 there beats the move: 90 s + 60 s
  // for $160.
  MultiRegionMarket later = hand_market(300);
  later.spot_ticks = {{1, 0, 0, 0}, {0, 1, 1, 1}};
  const MultiRegionResult wait = optimal_multi_region(later);
  ASSERT_TRUE(wait.finished);
  EXPECT_NEAR(wait.cost_usd, 160.0, 1e-9);
  EXPECT_EQ(wait.moves, 0);
  // Replaying the schedule costs what the programme says.
  const MultiRegionResult replayed = replay_multi_region(hand_market(300), best.ticks);
  EXPECT_TRUE(replayed.finished);
  EXPECT_NEAR(replayed.cost_usd, best.cost_usd, 1e-9);
  EXPECT_NEAR(replayed.finish_s, best.finish_s, 1e-9);
  // By 150 s nothing finishes.
  EXPECT_FALSE(optimal_multi_region(hand_market(150)).finished);
}

// Spot that comes or goes inside a tick (a trace off the decision grid), by hand: ticks of 600 s,
// 1000 s of work, spot $1/s, on-demand $3/s, no notice.
MultiRegionMarket inside_tick_market(double changeover_s, double deadline_s) {
  MultiRegionMarket m;
  m.tick_s = 600;
  m.work_s = 1000;
  m.deadline_s = deadline_s;
  m.spot_changeover_s = changeover_s;
  m.on_demand_changeover_s = changeover_s;
  m.spot_usd_per_s = 1;
  m.on_demand_usd_per_s = 3;
  return m;
}

TEST(MultiRegionSimulation, SpotThatLeavesInsideATickIsUsedUntilThenAndTheJobGoesOnDemandAtOnce) {
  // Spot for the first 300 s only. Spot from 0 (ready at 60, 240 s trained), revoked at 300,
  // on demand at once (ready at 360, 760 s left): done at 1120 for $300 + 820 x $3 = $2760. On
  // demand only from the next tick would finish at 1420, after the 1200 s deadline; on demand
  // throughout costs $3180.
  MultiRegionMarket m = inside_tick_market(60, 1200);
  m.spot_ticks = {{0, 0, 0}};
  m.spot_from_s = {{0, 0, 0}};
  m.spot_to_s = {{300, 0, 0}};
  const MultiRegionResult best = optimal_multi_region(m);
  ASSERT_TRUE(best.finished);
  EXPECT_NEAR(best.cost_usd, 2760.0, 1e-9);
  EXPECT_NEAR(best.finish_s, 1120.0, 1e-9);
  ASSERT_FALSE(best.ticks.empty());
  EXPECT_EQ(best.ticks[0], (RegionTick{ClusterMode::spot, 0, ClusterMode::on_demand}));
  const MultiRegionResult replayed = replay_multi_region(m, best.ticks);
  EXPECT_NEAR(replayed.cost_usd, best.cost_usd, 1e-9);
  EXPECT_NEAR(replayed.finish_s, best.finish_s, 1e-9);
}

TEST(MultiRegionSimulation, SpotThatComesInsideATickIsWaitedForAndItsStartUpRunsIntoTheNext) {
  // Spot from 400 s on, a 300 s start-up: requested in tick 0, billed from 400, ready at 700 (in
  // tick 1), done at 1700 for $1300. Requested at tick 1 instead: done at 1900, after the 1800 s
  // deadline.
  MultiRegionMarket m = inside_tick_market(300, 1800);
  m.spot_ticks = {{0, 1, 1, 1}};
  m.spot_from_s = {{400, 0, 0, 0}};
  m.spot_to_s = {{600, 600, 600, 600}};
  const MultiRegionResult best = optimal_multi_region(m);
  ASSERT_TRUE(best.finished);
  EXPECT_NEAR(best.cost_usd, 1300.0, 1e-9);
  EXPECT_NEAR(best.finish_s, 1700.0, 1e-9);
  EXPECT_EQ(best.ticks[0].mode, ClusterMode::spot);
  m.deadline_s = 1650;  // by then the job must start on demand (and go to spot in tick 1)
  const MultiRegionResult on_demand = optimal_multi_region(m);
  ASSERT_TRUE(on_demand.finished);
  EXPECT_EQ(on_demand.ticks[0].mode, ClusterMode::on_demand);
}

// A market of `regions` random regions on 10-minute ticks: 4 h of work, 6 h of deadline.
MultiRegionMarket random_market(Rng& rng, int regions, double work_s, double deadline_s) {
  MultiRegionMarket m;
  m.tick_s = 600;
  m.work_s = work_s;
  m.deadline_s = deadline_s;
  m.spot_changeover_s = 310;
  m.on_demand_changeover_s = 310;
  m.move_s = 60;
  m.move_usd = 0.01;
  m.notice_s = 120;
  m.spot_usd_per_s = 0.3 / 3600;
  m.on_demand_usd_per_s = 1.0 / 3600;
  const int ticks = static_cast<int>(std::ceil(deadline_s / m.tick_s)) + 1;
  for (int r = 0; r < regions; ++r)
    m.spot_ticks.push_back(testing::random_availability(rng, ticks));
  return m;
}

TEST(MultiRegionSimulation, OptimumIsALowerBoundAndTheSafePoliciesNeverMiss) {
  Rng rng(9);
  int checked = 0;
  for (int trial = 0; trial < 150; ++trial) {
    const int regions = 1 + trial % 9;
    const double work_s = 3600.0 * (1.0 + 3.0 * rng.uniform());
    const double deadline_s = 310.0 + work_s * (1.0 + rng.uniform());
    const MultiRegionMarket m = random_market(rng, regions, work_s, deadline_s);
    const MultiRegionResult best = optimal_multi_region(m);
    // On demand from the start always makes it here, so the optimum exists.
    ASSERT_TRUE(best.finished) << "trial " << trial;
    const MultiRegionResult replayed = replay_multi_region(m, best.ticks);
    EXPECT_NEAR(replayed.cost_usd, best.cost_usd, 1e-9) << "trial " << trial;
    EXPECT_FALSE(replayed.missed_deadline) << "trial " << trial;
    for (const std::string name :
         {"spot-only", "on-demand-only", "greedy", "uniform-progress", "market-aware"}) {
      auto policy = create_market_policy(name);
      const MultiRegionResult r = run_multi_region(m, *policy);
      const bool safe = name != "spot-only";
      if (safe) {
        ++checked;
        EXPECT_FALSE(r.missed_deadline) << "trial " << trial << " " << name;
      }
      if (!r.missed_deadline) {
        EXPECT_LE(best.cost_usd, r.cost_usd + 1e-9) << "trial " << trial << " " << name;
      }
    }
  }
  EXPECT_EQ(checked, 600);
}

TEST(MultiRegionSimulation, MoreRegionsNeverCostTheOptimumMore) {
  Rng rng(3);
  MultiRegionMarket m = random_market(rng, 9, 4 * 3600.0, 6 * 3600.0);
  double previous = INFINITY;
  for (int n = 1; n <= 9; ++n) {
    MultiRegionMarket first = m;
    first.spot_ticks.resize(n);
    const MultiRegionResult best = optimal_multi_region(first);
    ASSERT_TRUE(best.finished);
    EXPECT_LE(best.cost_usd, previous + 1e-12) << n << " regions";
    previous = best.cost_usd;
  }
}

}  // namespace
}  // namespace transient::sim
