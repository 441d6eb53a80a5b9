// What market-aware knows of the market (AvailabilityPrior) and the plan it makes with it
// (ExpectedCostPlan): hand-counted hazards, hand-checked decisions, and the plan's expected cost
// against the simulator's on markets drawn from the prior's own model.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "sim/test_models.h"
#include "transient/market/availability_trace_model.h"
#include "transient/market/node_trace_model.h"
#include "transient/sim/availability_prior.h"
#include "transient/sim/expected_cost_plan.h"
#include "transient/sim/simulator.h"

namespace transient::sim {
namespace {

TEST(AvailabilityPrior, CountsHowLongPeriodsLastGivenTheirAge) {
  // Spot periods of 3, 1 and 2 ticks; outages of 1 and 3.
  const AvailabilityPrior prior({1, 1, 1, 0, 1, 0, 0, 0, 1, 1}, 600);
  // Spot: 6 ticks, 3 followed by spot: 0.5 pooled (the unknown age). At age 0 all 3 periods
  // were seen and 2 went on, with one pseudo-observation at 0.5: 2.5 / 4.
  EXPECT_DOUBLE_EQ(prior.holds(true, AvailabilityPrior::kUnknownAge), 0.5);
  EXPECT_DOUBLE_EQ(prior.holds(true, 0), 2.5 / 4);
  // At age 1 the periods of 3 and 2 were seen, the one of 3 went on: 1.5 / 3.
  EXPECT_DOUBLE_EQ(prior.holds(true, 1), 1.5 / 3);
  // Outages: 4 ticks, 2 followed by an outage; at age 0 one of 2 went on: 1.5 / 3.
  EXPECT_DOUBLE_EQ(prior.holds(false, AvailabilityPrior::kUnknownAge), 0.5);
  EXPECT_DOUBLE_EQ(prior.holds(false, 0), 1.5 / 3);
  EXPECT_DOUBLE_EQ(prior.available_fraction(), 0.6);
  // Never seen ending is not taken for certain.
  const AvailabilityPrior always({1, 1, 1}, 600);
  EXPECT_GT(always.holds(true, 2), 0.99);
  EXPECT_LT(always.holds(true, 2), 1.0);
}

// A fleet's node events sampled for a month: the trace, over and over (after its last event the
// fleet would stay as it was), each tick's probe server handed back (its node free for the
// next). One node, present for 2 h, gone for 1 h, present for 2 h, then the trace ends: 4 of every
// 5 hours have spot, but for the two ticks that end where the node is removed.
TEST(AvailabilityPrior, SampledFromAFleetIsTheTraceOverAndOver) {
  using Presence = market::NodeTraceModel::Presence;
  const market::NodeTraceModel fleet({Presence{0, 0.0, 7200.0}, Presence{0, 10800.0, 18000.0}}, 1,
                                     18000.0, 0.0, market::kNever, "one node");
  const AvailabilityPrior prior = AvailabilityPrior::sample(fleet, 0.0, 600.0, 30 * 86400.0);
  // Per 5 h (30 ticks): ticks 0-11 and 18-29 have the node; a probe at each holds to the tick's
  // end, the tick ending at the removal included (a server revoked at a tick's end held it).
  EXPECT_NEAR(prior.available_fraction(), 24.0 / 30, 1e-3);
}

TEST(ZoneFollower, StaysWhileItsZoneHasSpotThenMovesToTheOneUpLongest) {
  ZoneFollower follower(3);
  // Tick 0: zones 1 and 2 up, neither seen changing: the first of them.
  EXPECT_EQ(follower.next(0, {0, 1, 1}), 1);
  EXPECT_EQ(follower.since(), -1);            // begun before the first tick
  EXPECT_EQ(follower.next(1, {1, 1, 1}), 1);  // zone 0 comes up: stays in zone 1
  // Zone 1 ends: zone 2 has been up since before tick 0, zone 0 since tick 1.
  EXPECT_EQ(follower.next(2, {1, 0, 1}), 2);
  EXPECT_TRUE(follower.moved_on());
  EXPECT_EQ(follower.since(), 2);
  EXPECT_EQ(follower.next(3, {1, 0, 1}), 2);
  EXPECT_FALSE(follower.moved_on());
  // An outage of every zone, then spot again: where it was last while that has spot.
  EXPECT_EQ(follower.next(4, {0, 0, 0}), -1);
  EXPECT_FALSE(follower.moved_on());
  EXPECT_EQ(follower.since(), 4);
  EXPECT_EQ(follower.next(5, {0, 0, 0}), -1);
  EXPECT_EQ(follower.since(), 4);
  EXPECT_EQ(follower.next(6, {1, 1, 1}), 2);
  EXPECT_EQ(follower.since(), 6);
}

TEST(AvailabilityPrior, FollowingZonesCountsStaysAndMovingOn) {
  // Zone 0: up 3 ticks, then down. Zone 1: up from tick 2 to 5. Followed: zone 0 for ticks 0-2,
  // zone 1 for 3-5 (moved on), then an outage of 2 ticks, then zone 0 for 2.
  const std::vector<std::vector<std::uint8_t>> zones = {{1, 1, 1, 0, 0, 0, 0, 0, 1, 1},
                                                        {0, 0, 1, 1, 1, 1, 0, 0, 0, 0}};
  const AvailabilityPrior prior = AvailabilityPrior::following(zones, 600);
  // Stays of 3, 3 and 2 ticks: 8 ticks, 5 followed by the same stay; one outage of 2.
  EXPECT_DOUBLE_EQ(prior.holds(true, AvailabilityPrior::kUnknownAge), 5.0 / 8);
  // All 3 stays reached age 1 (their second tick) and 2 went on, with one pseudo-observation.
  EXPECT_DOUBLE_EQ(prior.holds(true, 1), (2.0 + 5.0 / 8) / 4);
  EXPECT_DOUBLE_EQ(prior.holds(false, AvailabilityPrior::kUnknownAge), 0.5);
  EXPECT_DOUBLE_EQ(prior.available_fraction(), 0.8);
  // Of the two stays that ended, one moved on to another zone.
  EXPECT_DOUBLE_EQ(prior.moves_on(), 0.5);
  // One zone: the prior of its ticks, never moving on.
  const AvailabilityPrior one = AvailabilityPrior::following({zones[0]}, 600);
  const AvailabilityPrior plain(zones[0], 600);
  EXPECT_EQ(one.moves_on(), 0.0);
  for (int age = AvailabilityPrior::kUnknownAge; age <= AvailabilityPrior::kMaxAge; ++age) {
    EXPECT_DOUBLE_EQ(one.holds(true, age), plain.holds(true, age));
    EXPECT_DOUBLE_EQ(one.holds(false, age), plain.holds(false, age));
  }
}

// 3 h of work by a 6 h deadline on 10-minute ticks, 310 s changeovers, a 2-minute notice, spot
// at 30% of on demand.
OfflineMarket three_hours_by_six(double deadline_s = 6 * 3600) {
  OfflineMarket job;
  job.tick_s = 600;
  job.work_s = 3 * 3600;
  job.deadline_s = deadline_s;
  job.spot_changeover_s = job.on_demand_changeover_s = 310;
  job.notice_s = 120;
  job.spot_usd_per_s = 0.3;
  job.on_demand_usd_per_s = 1.0;
  return job;
}

TEST(ExpectedCostPlan, DecidesWhatTheMarketIsWorth) {
  // Spot that stays: take it at once.
  const ExpectedCostPlan steady(three_hours_by_six(), AvailabilityPrior({1, 1, 1, 1}, 600));
  EXPECT_EQ(steady.decide(0, 0, ClusterMode::idle, true, AvailabilityPrior::kUnknownAge),
            ClusterMode::spot);
  // Spot that never lasts beyond one tick buys 170 s of work for 600 s (310 s changeover, 120 s
  // lost at the revocation); at half the on-demand price that is dearer than on demand. With
  // plenty of slack the plan neither takes it nor pays for on demand early; once waiting no
  // longer keeps the deadline it runs on demand.
  std::vector<std::uint8_t> flicker;
  for (int i = 0; i < 200; ++i) flicker.push_back(i % 2);
  OfflineMarket half_price = three_hours_by_six();
  half_price.spot_usd_per_s = 0.5;
  const ExpectedCostPlan flickering(half_price, AvailabilityPrior(flicker, 600));
  EXPECT_EQ(flickering.decide(0, 0, ClusterMode::idle, true, 0), ClusterMode::idle);
  EXPECT_EQ(flickering.decide(17, 0, ClusterMode::idle, true, 0), ClusterMode::on_demand);
  // No slack: on demand from the start, whatever the market.
  const ExpectedCostPlan tight(three_hours_by_six(3 * 3600 + 310),
                               AvailabilityPrior({1, 1, 1, 1}, 600));
  EXPECT_EQ(tight.decide(0, 0, ClusterMode::idle, true, AvailabilityPrior::kUnknownAge),
            ClusterMode::on_demand);
  // Past the deadline's ticks, or behind what any schedule could catch up: on demand.
  EXPECT_EQ(steady.decide(36, 0, ClusterMode::idle, true, 3), ClusterMode::on_demand);
  EXPECT_EQ(steady.decide(20, 0, ClusterMode::idle, true, 3), ClusterMode::on_demand);
  EXPECT_TRUE(steady.made_for(three_hours_by_six()));
  EXPECT_FALSE(steady.made_for(three_hours_by_six(7 * 3600)));
  OfflineMarket moved = three_hours_by_six();
  moved.spot_changeover_s += 60;  // moving the checkpoint to another region
  EXPECT_TRUE(steady.made_for(moved));
}

TEST(ExpectedCostPlan, SpotThatMovesOnToAnotherZoneIsWorthMore) {
  // Spot periods of two ticks at half the on-demand price: 770 s of work (310 s changeover, 120
  // s lost at the revocation) for 1200 s of spot, cheaper than on demand. In one zone each is
  // followed by an outage as long, too many to finish 3 h of work by 6 h on spot alone; in two
  // zones whose periods take turns each stay moves on at once to the other zone's, and the job
  // can run on spot throughout: the plan expects to pay less.
  std::vector<std::uint8_t> zone_a;
  std::vector<std::uint8_t> zone_b;
  for (int i = 0; i < 200; ++i) {
    zone_a.push_back(i % 4 < 2);
    zone_b.push_back(i % 4 >= 2);
  }
  const AvailabilityPrior moving = AvailabilityPrior::following({zone_a, zone_b}, 600);
  EXPECT_GT(moving.moves_on(), 0.99);
  EXPECT_LT(moving.holds(true, 1), 0.01);
  OfflineMarket half_price = three_hours_by_six();
  half_price.spot_usd_per_s = 0.5;
  const ExpectedCostPlan one_zone(half_price, AvailabilityPrior(zone_a, 600));
  const ExpectedCostPlan two_zones(half_price, moving);
  EXPECT_LT(two_zones.expected_cost_usd(true), one_zone.expected_cost_usd(true));
  EXPECT_LT(one_zone.expected_cost_usd(true), 3 * 3600 + 310);  // spot pays in one zone too
  EXPECT_EQ(two_zones.decide(0, 0, ClusterMode::idle, true, 0), ClusterMode::spot);
}

// Availability in periods of random lengths, spot up about half the time.
std::vector<std::uint8_t> semi_markov_trace(Rng& rng, int ticks) {
  std::vector<std::uint8_t> trace;
  std::uint8_t state = 1;
  while (static_cast<int>(trace.size()) < ticks) {
    // Short periods are common, long ones rare: 1 tick (40%), 2-4 (30%), 5-30 (30%).
    const double u = rng.uniform();
    const int length = u < 0.4   ? 1
                       : u < 0.7 ? 2 + static_cast<int>(rng.below(3))
                                 : 5 + static_cast<int>(rng.below(26));
    trace.insert(trace.end(), length, state);
    state = 1 - state;
  }
  trace.resize(ticks);
  return trace;
}

TEST(ExpectedCostPlan, SimulatedRunsCostWhatThePlanExpectsAndNeverMiss) {
  // A long trace from one model: the prior is made from it, and each run replays it from a
  // random tick, so the runs are draws from (nearly) the prior's own model, on the decision grid
  // where the optimum is exact.
  Rng rng(17);
  const std::vector<std::uint8_t> ticks = semi_markov_trace(rng, 20000);
  auto prior = std::make_shared<AvailabilityPrior>(ticks, 600);
  Scenario s = testing::base_scenario(1);
  s.total_steps = 3 * 3600;  // one step per second: 3 h of work
  s.deadline_s = 6 * 3600;
  s.startup.spot_mean_s = s.startup.on_demand_mean_s = 305;  // + 5 s re-form: 310 s changeovers
  s.notice_s = 120;
  s.market_prior = prior;
  OfflineMarket job = three_hours_by_six();
  job.spot_usd_per_s = 0.0001;
  job.on_demand_usd_per_s = 0.0002;
  const ExpectedCostPlan plan(job, *prior);
  const double expected_usd = prior->available_fraction() * plan.expected_cost_usd(true) +
                              (1 - prior->available_fraction()) * plan.expected_cost_usd(false);

  const int runs = 400;
  double policy_usd = 0.0;
  double optimal_usd = 0.0;
  for (int run = 0; run < runs; ++run) {
    s.market = std::make_shared<market::AvailabilityTraceModel>(
        ticks, 600.0, 600.0 * rng.below(ticks.size() - 40), market::kNever, "test trace");
    s.market_policy = "market-aware";
    const RunResult r = Simulator(s).run(1);
    s.market_policy = "optimal";
    const RunResult best = Simulator(s).run(1);
    EXPECT_FALSE(r.missed_deadline) << "run " << run;
    EXPECT_GE(r.cost_usd, best.cost_usd - 1e-9) << "run " << run;
    policy_usd += r.cost_usd / runs;
    optimal_usd += best.cost_usd / runs;
  }
  // The prior is a model of the trace, not the trace (a run's first period is of unknown age,
  // ages beyond kMaxAge share one hazard): agreement within a few percent.
  EXPECT_NEAR(policy_usd / expected_usd, 1.0, 0.04);
  EXPECT_LT(policy_usd, 1.25 * optimal_usd);
}

}  // namespace
}  // namespace transient::sim
