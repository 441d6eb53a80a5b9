// Deadline-aware market policies and the offline optimum.
#include <gtest/gtest.h>

#include <vector>

#include "sim/test_models.h"
#include "transient/core/error.h"
#include "transient/market/availability_trace_model.h"
#include "transient/market/exponential_model.h"
#include "transient/market/node_trace_model.h"
#include "transient/sim/optimal_schedule.h"
#include "transient/sim/simulator.h"

namespace transient::sim {
namespace {

// Worked by hand: ticks of 100 s, spot [1, 0, 1, 1], 150 s of work, changeovers 10 s, notice
// 5 s, spot $1/s, on-demand $3/s.
OfflineMarket hand_market(double deadline_s) {
  OfflineMarket m;
  m.spot_ticks = {1, 0, 1, 1, 1};
  m.tick_s = 100;
  m.work_s = 150;
  m.deadline_s = deadline_s;
  m.spot_changeover_s = 10;
  m.on_demand_changeover_s = 10;
  m.notice_s = 5;
  m.spot_usd_per_s = 1;
  m.on_demand_usd_per_s = 3;
  return m;
}

TEST(OptimalSchedule, HandWorkedCases) {
  // Loose deadline: wait for the long spot window: tick 2 gives 90 s of work ($100), tick 3
  // finishes the last 60 s ($60).
  const OptimalSchedule loose = optimal_schedule(hand_market(400));
  ASSERT_TRUE(loose.feasible);
  EXPECT_NEAR(loose.cost_usd, 160.0, 1e-9);
  EXPECT_NEAR(loose.finish_s, 360.0, 1e-9);
  EXPECT_EQ(loose.ticks, (std::vector<ClusterMode>{ClusterMode::idle, ClusterMode::idle,
                                                   ClusterMode::spot, ClusterMode::spot}));
  // By 300 s: spot in tick 0 (85 s kept: 10 s changeover, 5 s lost after the notice, $100),
  // wait out tick 1, and finish 65 s of work in tick 2 after a changeover ($75).
  const OptimalSchedule tight = optimal_schedule(hand_market(300));
  ASSERT_TRUE(tight.feasible);
  EXPECT_NEAR(tight.cost_usd, 175.0, 1e-9);
  EXPECT_NEAR(tight.finish_s, 275.0, 1e-9);
  EXPECT_EQ(tight.ticks,
            (std::vector<ClusterMode>{ClusterMode::spot, ClusterMode::idle, ClusterMode::spot}));
  // By 150 s only on-demand can finish: 10 s changeover + 150 s of work misses it.
  EXPECT_FALSE(optimal_schedule(hand_market(150)).feasible);
  // By 170 s: on demand from the start, $3 x 160 s.
  const OptimalSchedule on_demand = optimal_schedule(hand_market(170));
  ASSERT_TRUE(on_demand.feasible);
  EXPECT_NEAR(on_demand.cost_usd, 480.0, 1e-9);
}

// Servers had and revoked one by one (OfflineMarket::spot_server), worked by hand: ticks of 100
// s, 150 s of work, changeovers 10 s, notice 5 s, spot $1/s, on-demand $3/s. The first spot
// request of tick 0 gets a server revoked 50 s later; every other request one never revoked.
TEST(OptimalSchedule, ServerByServerHandWorkedCases) {
  OfflineMarket m = hand_market(400);
  m.spot_server = [](double request_s, int n) {
    return SpotServer{request_s, request_s < 100 && n == 0 ? request_s + 50 : INFINITY};
  };
  // Loose deadline: wait out tick 0, then spot from 100 s: 110..260 s ($160).
  const OptimalSchedule loose = optimal_schedule(m);
  ASSERT_TRUE(loose.feasible);
  EXPECT_NEAR(loose.cost_usd, 160.0, 1e-9);
  EXPECT_NEAR(loose.finish_s, 260.0, 1e-9);
  EXPECT_EQ(loose.ticks,
            (std::vector<ClusterMode>{ClusterMode::idle, ClusterMode::spot, ClusterMode::spot}));
  // By 200 s: spot at once (35 s kept of 10..50 s, the notice's 5 s lost), revoked at 50 s and
  // asked for again at once; the second server trains 60..175 s. $50 + $125.
  m.deadline_s = 200;
  const OptimalSchedule tight = optimal_schedule(m);
  ASSERT_TRUE(tight.feasible);
  EXPECT_NEAR(tight.cost_usd, 175.0, 1e-9);
  EXPECT_NEAR(tight.finish_s, 175.0, 1e-9);
  EXPECT_EQ(tight.ticks, (std::vector<ClusterMode>{ClusterMode::spot, ClusterMode::spot}));
  ASSERT_EQ(tight.after_revocation.size(), 2u);
  EXPECT_EQ(tight.after_revocation[0], (std::vector<ClusterMode>{ClusterMode::spot}));
  // A request that waits: spot can be had from 130 s only. By 400 s: spot from 130 s, trains
  // 140..290 s ($160, billed from when it is had).
  m.deadline_s = 400;
  m.spot_server = [](double request_s, int) {
    return SpotServer{std::max(request_s, 130.0), INFINITY};
  };
  const OptimalSchedule waits = optimal_schedule(m);
  ASSERT_TRUE(waits.feasible);
  EXPECT_NEAR(waits.cost_usd, 160.0, 1e-9);
  EXPECT_NEAR(waits.finish_s, 290.0, 1e-9);
  // A server revoked exactly at the end of its tick (one that lives a cap of whole ticks) is
  // gone, its notice's loss taken, before the next tick's decision: it cannot be released
  // gracefully then. By 200 s, no spot after 100 s: spot 10..100 s keeps 85 s, on demand
  // 110..175 s. $100 + $225.
  m.deadline_s = 200;
  m.spot_server = [](double request_s, int) {
    return request_s < 100 ? SpotServer{request_s, request_s + 100} : SpotServer{INFINITY};
  };
  const OptimalSchedule capped = optimal_schedule(m);
  ASSERT_TRUE(capped.feasible);
  EXPECT_NEAR(capped.cost_usd, 325.0, 1e-9);
  EXPECT_NEAR(capped.finish_s, 175.0, 1e-9);
  EXPECT_EQ(capped.ticks, (std::vector<ClusterMode>{ClusterMode::spot, ClusterMode::on_demand}));
}

// Two spot K80 workers (2 steps/s), a parameter server, 3 h of work and a 6 h deadline on a
// random trace of 10-minute ticks.
Scenario deadline_scenario(const std::vector<std::uint8_t>& ticks, const std::string& policy) {
  Scenario s = testing::base_scenario(2);
  s.total_steps = 2.0 * 3 * 3600;
  s.deadline_s = 6 * 3600;
  s.parameter_servers.push_back({testing::cpu(), cloud::Market::on_demand, 1});
  s.startup.spot_mean_s = 60;
  s.startup.on_demand_mean_s = 45;
  s.market = std::make_shared<market::AvailabilityTraceModel>(ticks, 600.0, 0.0, market::kNever,
                                                              "random test trace");
  s.market_policy = policy;
  return s;
}

TEST(DeadlinePolicies, OptimalNeverCostsMoreThanAnyPolicyOnTheSameTrace) {
  Rng rng(2024);
  const std::vector<std::string> others = {"spot-only", "on-demand-only", "greedy",
                                           "uniform-progress"};
  for (int trial = 0; trial < 40; ++trial) {
    // Runs of availability with random lengths: 1 with probability 0.4..0.9 per tick.
    const double p_up = 0.4 + 0.5 * rng.uniform();
    std::vector<std::uint8_t> ticks(60);
    std::uint8_t state = 1;
    for (auto& tick : ticks) {
      if (rng.uniform() < 0.3) state = rng.uniform() < p_up ? 1 : 0;
      tick = state;
    }
    Simulator optimal(deadline_scenario(ticks, "optimal"));
    const RunResult best = optimal.run(1);
    EXPECT_TRUE(best.finished);
    EXPECT_FALSE(best.missed_deadline) << "trial " << trial;
    for (const auto& policy : others) {
      const RunResult r = Simulator(deadline_scenario(ticks, policy)).run(1);
      if (r.missed_deadline) continue;
      EXPECT_LE(best.cost_usd, r.cost_usd + 1e-9) << "trial " << trial << " policy " << policy;
    }
  }
}

TEST(DeadlinePolicies, SimulatedOptimalCostsWhatTheProgrammeSays) {
  const std::vector<std::uint8_t> ticks = {1, 1, 0, 0, 1, 1, 1, 0, 1, 1, 1, 1, 0, 0,
                                           0, 0, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1,
                                           1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  const Scenario s = deadline_scenario(ticks, "optimal");
  OfflineMarket m;
  m.spot_ticks = ticks;
  m.spot_ticks.push_back(1);
  m.tick_s = 600;
  m.work_s = 3 * 3600;
  m.deadline_s = 6 * 3600;
  m.spot_changeover_s = 60 + 5;  // start-up + in-place re-form
  m.on_demand_changeover_s = 45 + 5;
  m.notice_s = 30;
  m.spot_usd_per_s = 2 * 0.0001;
  m.on_demand_usd_per_s = 2 * 0.0002;
  m.fixed_usd_per_s = 0.0001;
  const OptimalSchedule plan = optimal_schedule(m);
  ASSERT_TRUE(plan.feasible);
  const RunResult r = Simulator(s).run(1);
  EXPECT_NEAR(r.cost_usd, plan.cost_usd, 1e-9);
  EXPECT_NEAR(r.time_s, plan.finish_s, 1e-6);
}

// One spot K80 worker, 3 h of work, a 6 h deadline, 10-minute ticks, on a market that draws each
// server's lifetime on its own.
Scenario one_worker_scenario(std::shared_ptr<const market::RevocationModel> model,
                             const std::string& policy) {
  Scenario s = deadline_scenario(std::vector<std::uint8_t>(60, 1), policy);
  s.workers[0].count = 1;
  s.total_steps = 1.0 * 3 * 3600;
  s.market = std::move(model);
  return s;
}

// A fleet of `nodes` spot nodes over 8 h, each present for periods of 40 min on average with
// absences of 20 min between them (every node's periods from `seed`).
std::shared_ptr<const market::NodeTraceModel> random_fleet(int nodes, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<market::NodeTraceModel::Presence> presences;
  for (int node = 0; node < nodes; ++node) {
    for (double t = rng.exponential(1.0 / 1200.0); t < 8 * 3600.0;) {
      const double removed = t + rng.exponential(1.0 / 2400.0);
      presences.push_back({node, t, removed});
      t = removed + rng.exponential(1.0 / 1200.0);
    }
  }
  double last_s = 0.0;
  for (const auto& p : presences) last_s = std::max(last_s, p.removed_s);
  return std::make_shared<market::NodeTraceModel>(std::move(presences), nodes, last_s, 0.0,
                                                  market::kNever, "a random fleet");
}

// The check of the test below, with start-ups of a fixed length or varied around their mean.
void expect_optimal_is_the_bound_per_server(bool varied_startup) {
  const std::vector<std::shared_ptr<const market::RevocationModel>> models = {
      std::make_shared<market::ExponentialModel>(1800.0, market::kNever, "30 min on average"),
      std::make_shared<market::ExponentialModel>(4 * 3600.0, 3 * 3600.0, "4 h, capped at 3 h"),
      std::make_shared<market::AvailabilityTraceModel>(
          std::vector<std::uint8_t>{1, 1, 0, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1},
          600.0, 0.0, 1500.0, "a trace whose servers live 25 min at most"),
      random_fleet(3, 11), random_fleet(6, 12)};
  const std::vector<std::string> others = {"spot-only", "on-demand-only", "greedy",
                                           "uniform-progress", "market-aware"};
  int cheaper_than_greedy = 0;
  for (const auto& model : models) {
    ASSERT_TRUE(model->spot_by_launch());
    ASSERT_TRUE(optimum_is_a_bound(one_worker_scenario(model, "optimal")));
    const auto scenario = [&](const std::string& policy) {
      Scenario s = one_worker_scenario(model, policy);
      if (varied_startup) {
        s.startup.spot_std_s = 40;
        s.startup.on_demand_std_s = 20;
      }
      return s;
    };
    Simulator optimal(scenario("optimal"));
    std::vector<Simulator> policies;
    for (const auto& name : others) policies.emplace_back(scenario(name));
    for (std::uint64_t seed = 1; seed <= 25; ++seed) {
      const RunResult best = optimal.run(seed);
      EXPECT_FALSE(best.missed_deadline) << model->describe() << " seed " << seed;
      for (std::size_t p = 0; p < others.size(); ++p) {
        const RunResult r = policies[p].run(seed);
        if (r.missed_deadline) continue;
        EXPECT_LE(best.cost_usd, r.cost_usd + 1e-9)
            << model->describe() << " seed " << seed << " policy " << others[p];
        if (others[p] == "greedy" && best.cost_usd < r.cost_usd - 1e-6) ++cheaper_than_greedy;
      }
    }
  }
  EXPECT_GT(cheaper_than_greedy, 10);  // it is no copy of a policy
  // Several workers each revoked on its own: the optimum is no bound there.
  Scenario two = one_worker_scenario(models[0], "optimal");
  two.workers[0].count = 2;
  EXPECT_FALSE(optimum_is_a_bound(two));
}

// Where each server draws its own lifetime, the optimum knows the server of every request (its
// n-th in a tick draws from a stream of its own, in the run and in the programme alike): no run
// of a policy that meets the deadline costs less, and the optimum never misses it. On a fleet's
// node events the one server of the job is given a node among those present (the one it held
// before, released, is free again). Start-ups that vary (as CM-DARE's measured ones do, which
// `transient plan` uses) are each request's own as well: with the mean in the programme, a run
// whose servers started faster than the mean came out cheaper than the optimum.
TEST(DeadlinePolicies, OptimalIsTheBoundWhereEachServerDrawsItsOwnLifetime) {
  for (const bool varied_startup : {false, true}) {
    SCOPED_TRACE(varied_startup ? "start-ups that vary" : "fixed start-ups");
    expect_optimal_is_the_bound_per_server(varied_startup);
  }
}

// A fleet of one node, present for 10 h: the job's one server holds it.
std::shared_ptr<const market::NodeTraceModel> one_node_fleet(double cap_s) {
  return std::make_shared<market::NodeTraceModel>(
      std::vector<market::NodeTraceModel::Presence>{{0, 0.0, 10 * 3600.0}}, 1, 10 * 3600.0, 0.0,
      cap_s, "one node");
}

// The server holding a fleet's only node keeps it: spot is not gone because no other node is
// free (every deadline-safe policy stays on its first server, as spot-only does).
TEST(DeadlinePolicies, AServerHoldingTheFleetsOnlyNodeIsKept) {
  const RunResult spot =
      Simulator(one_worker_scenario(one_node_fleet(market::kNever), "spot-only")).run(1);
  ASSERT_TRUE(spot.finished);
  EXPECT_EQ(spot.requests, 1);
  for (const std::string policy : {"greedy", "uniform-progress", "market-aware"}) {
    const RunResult r =
        Simulator(one_worker_scenario(one_node_fleet(market::kNever), policy)).run(1);
    EXPECT_FALSE(r.missed_deadline) << policy;
    EXPECT_EQ(r.requests, 1) << policy;
    EXPECT_NEAR(r.cost_usd, spot.cost_usd, 1e-9) << policy;
  }
}

// A server revoked by the cap while its node stays gives the node back: the next request has
// it again (a fleet of one node, servers capped at 1 h, 3 h of work: four servers, no wait).
TEST(DeadlinePolicies, AServerRevokedByTheCapFreesItsNode) {
  const RunResult r = Simulator(one_worker_scenario(one_node_fleet(3600.0), "spot-only")).run(1);
  EXPECT_FALSE(r.missed_deadline);
  EXPECT_EQ(r.revocations, 3);
  EXPECT_EQ(r.requests, 4);
  EXPECT_LT(r.time_s, 4 * 3600.0);
}

TEST(DeadlinePolicies, OnDemandOnlyAndGreedyMeetTheDeadline) {
  const std::vector<std::uint8_t> never(60, 0);
  const RunResult od = Simulator(deadline_scenario(never, "on-demand-only")).run(1);
  // 45 s start-up + 5 s re-form + 3 h; two workers at $0.0002/s and the server at $0.0001/s.
  EXPECT_NEAR(od.time_s, 50 + 3 * 3600, 1e-6);
  EXPECT_NEAR(od.cost_usd, (50 + 3 * 3600) * (2 * 0.0002) + od.time_s * 0.0001, 1e-9);
  const RunResult greedy = Simulator(deadline_scenario(never, "greedy")).run(1);
  EXPECT_TRUE(greedy.finished);
  EXPECT_FALSE(greedy.missed_deadline);
  const RunResult spot = Simulator(deadline_scenario(never, "spot-only")).run(1);
  EXPECT_FALSE(spot.finished);
  EXPECT_TRUE(spot.missed_deadline);
  const RunResult up = Simulator(deadline_scenario(never, "uniform-progress")).run(1);
  EXPECT_FALSE(up.missed_deadline);
}

TEST(DeadlinePolicies, NeedOneHomogeneousGroup) {
  Scenario s = deadline_scenario(std::vector<std::uint8_t>(10, 1), "greedy");
  s.workers.push_back(s.workers[0]);
  EXPECT_THROW(Simulator{s}, InputError);
}

}  // namespace
}  // namespace transient::sim
