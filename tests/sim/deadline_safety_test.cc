// The promise of the deadline-safe policies (greedy, uniform-progress, market-aware): on any
// availability trace they finish by the deadline whenever on-demand servers alone could still
// have made it. Checked on random traces and on adversarial ones that flicker around every
// decision, with the trace's ticks finer than the decisions so that a revocation can fall
// anywhere between two of them.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "sim/test_models.h"
#include "transient/core/random.h"
#include "transient/market/availability_trace_model.h"
#include "transient/sim/simulator.h"

namespace transient::sim {
namespace {

constexpr double kTraceTickS = 30.0;
constexpr double kDecisionS = 600.0;

// One V100-like server as in issue 17: 350 s of start-up, 10 s to re-form, a 2-minute notice.
Scenario safety_scenario(const std::vector<std::uint8_t>& ticks, double work_s, double deadline_s,
                         const std::string& policy) {
  Scenario s = testing::base_scenario(1);
  s.total_steps = work_s;  // one step per second on one K80 (test_models.h)
  s.deadline_s = deadline_s;
  s.startup.spot_mean_s = 350;
  s.startup.on_demand_mean_s = 350;
  s.recovery_options.reform_s = 10;
  s.notice_s = 120;
  s.decision_interval_s = kDecisionS;
  s.market = std::make_shared<market::AvailabilityTraceModel>(ticks, kTraceTickS, 0.0,
                                                              market::kNever, "safety trace");
  s.market_policy = policy;
  return s;
}

// Spot up for most of each decision interval and gone in a window around every decision (or the
// reverse), so that the policy always sees the market just before or just after it changes.
std::vector<std::uint8_t> flicker_trace(Rng& rng, int ticks) {
  const int per_decision = static_cast<int>(kDecisionS / kTraceTickS);
  const int before = static_cast<int>(rng.uniform() * 6);  // ticks gone before a decision
  const int after = static_cast<int>(rng.uniform() * 16);  // ticks gone after it
  const bool inverted = rng.uniform() < 0.3;
  std::vector<std::uint8_t> trace(ticks);
  for (int i = 0; i < ticks; ++i) {
    const int phase = i % per_decision;
    const bool gone = phase < after || phase >= per_decision - before;
    trace[i] = gone == inverted;
  }
  return trace;
}

double measure_misses(const std::vector<std::uint8_t>& trace, double work_s, double deadline_s,
                      const std::string& policy, int* checked) {
  const RunResult on_demand =
      Simulator(safety_scenario(trace, work_s, deadline_s, "on-demand-only")).run(1);
  if (on_demand.missed_deadline) return 0;  // no promise when on demand alone cannot make it
  ++*checked;
  return Simulator(safety_scenario(trace, work_s, deadline_s, policy)).run(1).missed_deadline;
}

class DeadlineSafety : public ::testing::TestWithParam<std::string> {};

TEST_P(DeadlineSafety, NeverMissesWhenOnDemandAloneCouldMakeIt) {
  Rng rng(17);
  int checked = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const bool flicker = trial % 2 == 1;
    // 1 to 6 h of work; slack from none to as much again, so that many runs end at the net.
    const double work_s = 3600.0 * (1.0 + 5.0 * rng.uniform());
    const double deadline_s = 360.0 + work_s * (1.0 + rng.uniform()) + 300.0 * rng.uniform();
    const int ticks = static_cast<int>(std::ceil(deadline_s / kTraceTickS)) + 1;
    const auto trace =
        flicker ? flicker_trace(rng, ticks) : testing::random_availability(rng, ticks);
    EXPECT_EQ(measure_misses(trace, work_s, deadline_s, GetParam(), &checked), 0)
        << (flicker ? "flicker" : "random") << " trial " << trial << ": work " << work_s
        << " s, deadline " << deadline_s << " s";
  }
  // Most trials must be ones where the promise applies, or the test shows nothing.
  EXPECT_GT(checked, 300);
}

INSTANTIATE_TEST_SUITE_P(SimulatedPolicies, DeadlineSafety,
                         ::testing::Values("greedy", "uniform-progress", "market-aware"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (auto& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace transient::sim
