// Speed of the simulator, and the cost of the deadline policies on real spot traces.
//
//   sim_bench [Google Benchmark flags]   events per second and Monte Carlo runs per second for a
//                                        24-hour job on 32 spot servers with trace-driven
//                                        revocations
//   sim_bench --policy-costs [TRACE...]  each deadline policy's cost on every trace of
//                                        spot-traces/aws-availability-2022-10 as a ratio to
//                                        `optimal`, beside on-demand-only; `market-aware` knows
//                                        the trace without the run's own 36 h (its prior), and
//                                        `market-aware (in-sample)` the whole trace, as
//                                        `transient simulate` gives it
//   sim_bench --multi-region             the same, the job free to move between the two zones
//                                        of each server's traces, against the multi-region optimum
//   sim_bench --lifetime-costs [--deadline-h=H] [CDF...]
//                                        each deadline policy's cost on GCE preemptible lifetimes
//                                        (every CDF of spot-traces/gcp-preemptible-lifetimes, each
//                                        server's lifetime its own), 40 seeds each, against the
//                                        optimum that knows the server of each request; 24 h of
//                                        work by H hours (36)
//   sim_bench --node-costs               the same on Bamboo's spot fleets (aws-node-events): 4 h
//                                        of work by 6 h from offsets every hour, 20 seeds each
//   sim_bench --policy-schedules TRACE [OFFSET_H...]
//                                        where a gap comes from: for runs from these offsets (all,
//                                        every 12 h, when none), market-aware's cost / optimal on
//                                        the optimum's tick accounting, and with offsets given the
//                                        trace and both schedules tick by tick
//   sim_bench --model-gap TRACE [RUNS]   what foresight is worth on a market that is exactly the
//                                        model market-aware plans with: RUNS (400) runs of 36 h
//                                        drawn from the model fitted to TRACE, each policy's cost
//                                        / optimal, and the plan's own expected cost
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "transient/market/availability_trace_model.h"
#include "transient/market/lifetime_model.h"
#include "transient/market/node_trace_model.h"
#include "transient/market/registry.h"
#include "transient/perf/table_throughput_model.h"
#include "transient/sim/availability_prior.h"
#include "transient/sim/expected_cost_plan.h"
#include "transient/sim/market_policy.h"
#include "transient/sim/monte_carlo.h"
#include "transient/sim/multi_region.h"
#include "transient/sim/optimal_schedule.h"
#include "transient/sim/simulator.h"

namespace {

using namespace transient;

constexpr double kStepsPerWorkerPerS = 10.0;

cloud::InstanceType p3_2xlarge() {
  cloud::InstanceType type;
  type.name = "p3.2xlarge";
  type.gpu = "V100";
  type.gpus = 1;
  type.on_demand_usd_per_h = 3.06;
  type.spot_usd_per_h = 0.918;
  return type;
}

std::shared_ptr<const perf::ThroughputModel> linear_v100() {
  std::vector<perf::TablePoint> points;
  for (int n = 1; n <= 32; ++n) points.push_back({"V100", n, kStepsPerWorkerPerS * n});
  return std::make_shared<perf::TableThroughputModel>(points, "linear V100");
}

std::shared_ptr<const market::RevocationModel> trace(const std::string& file) {
  market::ModelParams params;
  params.values["file"] = file;
  params.values["offset"] = "random";
  market::ModelContext context;
  context.data_dir = TRANSIENT_SHARED_DATA_DIR;
  return market::create_revocation_model("trace", params, context);
}

// A 24-hour job (at full size) on 32 spot V100 servers, in-place recovery, revoked servers
// replaced, checkpoints every 10 minutes.
sim::Scenario day_on_32_servers(const std::string& trace_file) {
  sim::Scenario s;
  s.name = "24 h on 32 servers, " + trace_file;
  s.workers.push_back({p3_2xlarge(), cloud::Market::spot, 32});
  s.total_steps = 24 * 3600.0 * 32 * kStepsPerWorkerPerS;
  s.architecture = perf::Architecture::allreduce;
  s.throughput = linear_v100();
  s.market = trace(trace_file);
  s.startup.spot_mean_s = 90;
  s.startup.on_demand_mean_s = 90;
  s.notice_s = 120;
  s.checkpoint_interval_s = 600;
  s.recovery = "in-place";
  s.replacement = "same";
  return s;
}

void simulated_events(benchmark::State& state, const std::string& trace_file) {
  sim::Simulator simulator(day_on_32_servers(trace_file));
  std::uint64_t seed = 1;
  std::uint64_t events = 0;
  std::uint64_t runs = 0;
  double revocations = 0;
  for (auto _ : state) {
    const sim::RunResult r = simulator.run(seed++);
    events += r.events;
    revocations += r.revocations;
    ++runs;
    benchmark::DoNotOptimize(r.cost_usd);
  }
  state.counters["events/s"] = benchmark::Counter(events, benchmark::Counter::kIsRate);
  state.counters["runs/s"] = benchmark::Counter(runs, benchmark::Counter::kIsRate);
  state.counters["events/run"] = static_cast<double>(events) / runs;
  state.counters["revocations/run"] = revocations / runs;
}
BENCHMARK_CAPTURE(simulated_events, bamboo_p3_nodes, std::string("p3"))
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(simulated_events, aws_v100_8_zone, std::string("us-west-2a_v100_8"))
    ->Unit(benchmark::kMicrosecond);

void monte_carlo(benchmark::State& state) {
  const sim::Scenario scenario = day_on_32_servers("p3");
  sim::MonteCarloOptions options;
  options.runs = 256;
  options.threads = static_cast<int>(state.range(0));
  std::uint64_t runs = 0;
  std::uint64_t events = 0;
  for (auto _ : state) {
    const sim::MonteCarloSummary s = sim::run_monte_carlo(scenario, options);
    options.seed += options.runs;
    runs += s.runs;
    events += s.events;
  }
  state.counters["runs/s"] = benchmark::Counter(runs, benchmark::Counter::kIsRate);
  state.counters["events/s"] = benchmark::Counter(events, benchmark::Counter::kIsRate);
}
BENCHMARK(monte_carlo)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

// 24 h of work by a 36 h deadline on 10-minute ticks, spot up 40 minutes of every 70.
sim::OfflineMarket flickering_day_and_a_half() {
  sim::OfflineMarket market;
  market.spot_ticks.assign(217, 1);
  for (std::size_t i = 0; i < market.spot_ticks.size(); ++i) market.spot_ticks[i] = (i % 7) < 4;
  market.work_s = 24 * 3600.0;
  market.deadline_s = 36 * 3600.0;
  market.spot_changeover_s = market.on_demand_changeover_s = 310;
  market.notice_s = 120;
  market.spot_usd_per_s = 0.3;
  market.on_demand_usd_per_s = 1.0;
  return market;
}

// The time of one decision of each market policy (it runs live in the coordinator), over the
// states of a day on a flickering market; `optimal` plans the whole run in begin_run (timed
// apart below) and only looks the tick up here.
void policy_decision(benchmark::State& state, const std::string& policy_name) {
  auto policy = sim::create_market_policy(policy_name);
  const sim::OfflineMarket market = flickering_day_and_a_half();
  // market-aware plans once with its prior (at its first decision, as in a run; kept after).
  policy->know_market(std::make_shared<sim::AvailabilityPrior>(market.spot_ticks, market.tick_s));
  policy->begin_run(policy->needs_offline_market() ? &market : nullptr);
  std::vector<sim::DeadlineState> states;
  for (int i = 0; i < 216; ++i) {
    sim::DeadlineState s;
    s.now_s = i * 600.0;
    s.progress_steps = std::min(24 * 3600.0, i * 600.0 * 0.7);
    s.total_steps = 24 * 3600.0;
    s.deadline_s = 36 * 3600.0;
    s.steps_per_s = 1.0;
    s.spot_changeover_s = s.on_demand_changeover_s = 310;
    s.decision_interval_s = 600;
    s.spot_available = market.spot_ticks[i] != 0;
    s.mode = s.spot_available ? sim::ClusterMode::spot : sim::ClusterMode::on_demand;
    s.notice_s = 120;
    s.spot_usd_per_s = 0.3;
    s.on_demand_usd_per_s = 1.0;
    states.push_back(s);
  }
  std::size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(policy->decide(states[i]));
    if (++i == states.size()) {
      // A new day: policies that learn in a run start again (optimal's plan stays).
      i = 0;
      if (!policy->needs_offline_market()) policy->begin_run(nullptr);
    }
  }
}
BENCHMARK_CAPTURE(policy_decision, greedy, std::string("greedy"));
BENCHMARK_CAPTURE(policy_decision, uniform_progress, std::string("uniform-progress"));
BENCHMARK_CAPTURE(policy_decision, market_aware, std::string("market-aware"));
BENCHMARK_CAPTURE(policy_decision, optimal, std::string("optimal"));

// `optimal`'s plan of one run: the dynamic programme over a 36 h deadline on 10-minute ticks.
void optimal_plan(benchmark::State& state) {
  const sim::OfflineMarket market = flickering_day_and_a_half();
  for (auto _ : state) benchmark::DoNotOptimize(sim::optimal_schedule(market).cost_usd);
}
BENCHMARK(optimal_plan)->Unit(benchmark::kMillisecond);

// `market-aware`'s plan (ExpectedCostPlan, made once per policy instance): the expected-cost
// programme over the same 36 h deadline, with the prior counted on the same ticks.
void market_aware_plan(benchmark::State& state) {
  const sim::OfflineMarket market = flickering_day_and_a_half();
  const sim::AvailabilityPrior prior(market.spot_ticks, market.tick_s);
  for (auto _ : state) {
    benchmark::DoNotOptimize(sim::ExpectedCostPlan(market, prior).expected_cost_usd(true));
  }
}
BENCHMARK(market_aware_plan)->Unit(benchmark::kMillisecond);

// The ticks of a trace on its own grid, from its start to its end.
std::vector<std::uint8_t> trace_ticks(const market::AvailabilityTraceModel& trace) {
  Rng rng(1);
  auto timeline = trace.start_run(0.0, rng);
  const int n = static_cast<int>(std::lround(trace.duration_s() / trace.gap_s()));
  std::vector<std::uint8_t> ticks(n);
  for (int i = 0; i < n; ++i) ticks[i] = timeline->available_at(i * trace.gap_s());
  return ticks;
}

// `ticks` without the run's stretch from `offset_s` to `offset_s + span_s`.
std::vector<std::uint8_t> without_the_run(const std::vector<std::uint8_t>& ticks, double tick_s,
                                          double offset_s, double span_s) {
  const auto from = static_cast<std::size_t>(std::lround(offset_s / tick_s));
  const auto to = std::min(ticks.size(), from + static_cast<std::size_t>(span_s / tick_s) + 1);
  std::vector<std::uint8_t> rest(ticks.begin(), ticks.begin() + from);
  rest.insert(rest.end(), ticks.begin() + to, ticks.end());
  return rest;
}

// What a policy may know of a market before a run from `offset_s` to `offset_s + span_s`: the
// trace without that stretch (held out, so the run's own future is not in its prior).
std::shared_ptr<const sim::AvailabilityPrior> held_out_prior(const std::vector<std::uint8_t>& ticks,
                                                             double tick_s, double offset_s,
                                                             double span_s) {
  return std::make_shared<sim::AvailabilityPrior>(without_the_run(ticks, tick_s, offset_s, span_s),
                                                  tick_s);
}

// The same for a job that moves between zones: each zone's trace without that stretch.
std::shared_ptr<const sim::AvailabilityPrior> held_out_following_prior(
    const std::vector<std::vector<std::uint8_t>>& zones, double tick_s, double offset_s,
    double span_s) {
  std::vector<std::vector<std::uint8_t>> rest;
  for (const auto& ticks : zones) rest.push_back(without_the_run(ticks, tick_s, offset_s, span_s));
  return std::make_shared<sim::AvailabilityPrior>(sim::AvailabilityPrior::following(rest, tick_s));
}

// "1.234 (5 miss)": a policy's mean cost / optimal over `runs` runs and its missed deadlines.
std::string ratio_cell(double ratio_sum, int runs, int missed) {
  char text[64];
  std::snprintf(text, sizeof text, "%.3f (%d miss)", ratio_sum / runs, missed);
  return text;
}

// The pooled row of a policy-cost table (after `label`, already printed) and the bound check:
// returns 0 when no run of a policy met the deadline for less than the optimum, else 1.
int print_pooled(const std::vector<std::string>& policies, std::map<std::string, double>& ratio,
                 std::map<std::string, int>& missed, int runs, int below_optimal) {
  for (const auto& policy : policies) {
    std::printf(" %14s", ratio_cell(ratio[policy], runs, missed[policy]).c_str());
  }
  std::printf("  1.000\n");
  std::printf("runs in which a policy met the deadline for less than optimal: %d\n", below_optimal);
  return below_optimal == 0 ? 0 : 1;
}

// --policy-costs: every deadline policy on every availability trace, from offsets every 12 h
// (on the trace's 10-minute grid), one server, 24 h of work, a 36 h deadline.
// `only`: these traces (all when empty).
int policy_costs(std::vector<std::string> files) {
  const std::string dir =
      std::string(TRANSIENT_SHARED_DATA_DIR) + "/spot-traces/aws-availability-2022-10/";
  if (files.empty()) {
    files = {"us-west-2a_k80_1", "us-west-2a_k80_8", "us-west-2a_v100_1", "us-west-2a_v100_8",
             "us-west-2b_k80_1", "us-west-2b_k80_8", "us-west-2b_v100_1", "us-west-2b_v100_8"};
  }
  // "market-aware (in-sample)" is market-aware with the whole trace as its prior.
  const std::string in_sample = "market-aware (in-sample)";
  const std::vector<std::string> policies = {"on-demand-only",   "spot-only",    "greedy",
                                             "uniform-progress", "market-aware", in_sample,
                                             "optimal"};
  // AWS on-demand list prices; spot at 30% of them (the traces carry no prices).
  const std::map<std::string, std::pair<std::string, double>> servers = {
      {"k80_1", {"p2.xlarge", 0.90}},
      {"k80_8", {"p2.8xlarge", 7.20}},
      {"v100_1", {"p3.2xlarge", 3.06}},
      {"v100_8", {"p3.16xlarge", 24.48}}};
  constexpr double kWorkS = 24 * 3600.0;
  constexpr double kDeadlineS = 36 * 3600.0;
  constexpr double kOffsetStepS = 12 * 3600.0;
  std::printf("%-20s %7s  %14s %14s %14s %14s %14s %14s  %s\n", "trace", "offsets",
              "on-demand-only", "spot-only", "greedy", "uniform-prog.", "market-aware",
              "m-a in-sample", "optimal $ (mean)");
  std::map<std::string, double> total_ratio;
  std::map<std::string, int> total_missed;
  int total_runs = 0;
  int below_optimal = 0;
  for (const auto& file : files) {
    const auto key = file.substr(file.find('_') + 1);
    const auto& [server_name, on_demand_usd_per_h] = servers.at(key);
    cloud::InstanceType type;
    type.name = server_name;
    type.gpu = key.substr(0, key.find('_')) == "k80" ? "K80" : "V100";
    type.on_demand_usd_per_h = on_demand_usd_per_h;
    type.spot_usd_per_h = 0.3 * on_demand_usd_per_h;
    auto probe = market::AvailabilityTraceModel::read(dir + file + ".json", 0.0, market::kNever);
    const double duration_s = probe->duration_s();
    const std::vector<std::uint8_t> ticks = trace_ticks(*probe);
    const auto whole_trace = std::make_shared<sim::AvailabilityPrior>(ticks, probe->gap_s());
    std::map<std::string, double> ratio;
    std::map<std::string, int> missed;
    double optimal_usd = 0.0;
    int runs = 0;
    for (double offset = 0.0; offset + kDeadlineS <= duration_s; offset += kOffsetStepS) {
      sim::Scenario s;
      s.name = file;
      s.workers.push_back({type, cloud::Market::spot, 1});
      s.throughput = std::make_shared<perf::TableThroughputModel>(
          std::vector<perf::TablePoint>{{type.gpu, 1, 1.0}}, "one step per second");
      s.total_steps = kWorkS;
      s.deadline_s = kDeadlineS;
      s.market = market::AvailabilityTraceModel::read(dir + file + ".json", offset, market::kNever);
      s.startup.spot_mean_s = 300;
      s.startup.on_demand_mean_s = 300;
      s.notice_s = 120;
      s.recovery = "in-place";
      s.decision_interval_s = 600;
      std::map<std::string, sim::RunResult> results;
      for (const auto& policy : policies) {
        s.market_policy = policy == in_sample ? "market-aware" : policy;
        s.market_prior = policy == in_sample
                             ? whole_trace
                             : held_out_prior(ticks, probe->gap_s(), offset, kDeadlineS);
        results[policy] = sim::Simulator(s).run(1);
      }
      const double best = results["optimal"].cost_usd;
      if (results["optimal"].missed_deadline) {
        std::fprintf(stderr, "optimal missed the deadline on %s at offset %.0f s\n", file.c_str(),
                     offset);
        return 1;
      }
      optimal_usd += best;
      for (const auto& policy : policies) {
        ratio[policy] += results[policy].cost_usd / best;
        missed[policy] += results[policy].missed_deadline;
        // The optimum is a lower bound for every run that meets the deadline.
        if (!results[policy].missed_deadline && results[policy].cost_usd < best - 1e-9) {
          ++below_optimal;
        }
      }
      ++runs;
    }
    auto cell = [&](const std::string& policy) {
      return ratio_cell(ratio[policy], runs, missed[policy]);
    };
    std::printf("%-20s %7d  %14s %14s %14s %14s %14s %14s  %.2f\n", file.c_str(), runs,
                cell("on-demand-only").c_str(), cell("spot-only").c_str(), cell("greedy").c_str(),
                cell("uniform-progress").c_str(), cell("market-aware").c_str(),
                cell(in_sample).c_str(), optimal_usd / runs);
    for (const auto& policy : policies) {
      total_ratio[policy] += ratio[policy];
      total_missed[policy] += missed[policy];
    }
    total_runs += runs;
  }
  std::printf("%-20s %7d", "all traces", total_runs);
  return print_pooled(
      {"on-demand-only", "spot-only", "greedy", "uniform-progress", "market-aware", in_sample},
      total_ratio, total_missed, total_runs, below_optimal);
}

// --multi-region: Can't Be Late's multi-region setting on the same traces: for each server the
// job may move between the zones that have a trace of it (us-west-2a and -2b), a move costing a
// changeover plus a minute to move the checkpoint; 24 h of work, a 36 h deadline, offsets every
// 12 h, every online policy against the multi-region optimum.
int multi_region_costs() {
  const std::string dir =
      std::string(TRANSIENT_SHARED_DATA_DIR) + "/spot-traces/aws-availability-2022-10/";
  const std::vector<std::string> zones = {"us-west-2a", "us-west-2b"};
  const std::vector<std::pair<std::string, double>> servers = {
      {"k80_1", 0.90}, {"k80_8", 7.20}, {"v100_1", 3.06}, {"v100_8", 24.48}};
  const std::vector<std::string> policies = {"on-demand-only", "spot-only", "greedy",
                                             "uniform-progress", "market-aware"};
  constexpr double kTickS = 600.0;
  std::printf("%-10s %7s ", "server", "offsets");
  for (const auto& p : policies) std::printf(" %16s", p.c_str());
  std::printf("  %s\n", "optimal $ (mean), moves");
  std::map<std::string, double> total_ratio;
  std::map<std::string, int> total_missed;
  int total_runs = 0;
  int below_optimal = 0;
  for (const auto& [server, on_demand_usd_per_h] : servers) {
    std::vector<std::unique_ptr<market::AvailabilityTraceModel>> traces;
    double duration_s = market::kNever;
    for (const auto& zone : zones) {
      traces.push_back(market::AvailabilityTraceModel::read(dir + zone + "_" + server + ".json",
                                                            0.0, market::kNever));
      duration_s = std::min(duration_s, traces.back()->duration_s());
    }
    // Each zone's ticks: market-aware's prior follows spot from zone to zone as
    // run_multi_region does.
    std::vector<std::vector<std::uint8_t>> zone_ticks;
    for (const auto& trace : traces) zone_ticks.push_back(trace_ticks(*trace));
    std::map<std::string, double> ratio;
    std::map<std::string, int> missed;
    double optimal_usd = 0.0;
    double moves = 0.0;
    int runs = 0;
    for (double offset = 0.0; offset + 36 * 3600.0 <= duration_s; offset += 12 * 3600.0) {
      sim::MultiRegionMarket m;
      m.tick_s = kTickS;
      m.work_s = 24 * 3600.0;
      m.deadline_s = 36 * 3600.0;
      m.spot_changeover_s = m.on_demand_changeover_s = 310;  // 5 min start-up + 10 s re-form
      m.move_s = 60;
      m.notice_s = 120;
      m.spot_usd_per_s = 0.3 * on_demand_usd_per_h / 3600;
      m.on_demand_usd_per_s = on_demand_usd_per_h / 3600;
      const int ticks = static_cast<int>(m.deadline_s / kTickS) + 1;
      for (const auto& trace : traces) {
        Rng rng(1);
        auto timeline = trace->start_run(0.0, rng);
        std::vector<std::uint8_t> spot(ticks);
        for (int i = 0; i < ticks; ++i) spot[i] = timeline->available_at(offset + i * kTickS);
        m.spot_ticks.push_back(spot);
      }
      const sim::MultiRegionResult best = sim::optimal_multi_region(m);
      if (!best.finished) {
        std::fprintf(stderr, "no schedule meets the deadline on %s at offset %.0f s\n",
                     server.c_str(), offset);
        return 1;
      }
      optimal_usd += best.cost_usd;
      moves += best.moves;
      for (const auto& name : policies) {
        auto policy = sim::create_market_policy(name);
        policy->know_market(held_out_following_prior(zone_ticks, kTickS, offset, m.deadline_s));
        const sim::MultiRegionResult r = sim::run_multi_region(m, *policy);
        ratio[name] += r.cost_usd / best.cost_usd;
        missed[name] += r.missed_deadline;
        if (!r.missed_deadline && r.cost_usd < best.cost_usd - 1e-9) ++below_optimal;
      }
      ++runs;
    }
    std::printf("%-10s %7d ", server.c_str(), runs);
    for (const auto& name : policies) {
      std::printf(" %16s", ratio_cell(ratio[name], runs, missed[name]).c_str());
      total_ratio[name] += ratio[name];
      total_missed[name] += missed[name];
    }
    std::printf("  %.2f, %.1f\n", optimal_usd / runs, moves / runs);
    total_runs += runs;
  }
  std::printf("%-10s %7d ", "all", total_runs);
  for (const auto& name : policies) {
    std::printf(" %16s", ratio_cell(total_ratio[name], total_runs, total_missed[name]).c_str());
  }
  std::printf("\nruns in which a policy met the deadline for less than optimal: %d\n",
              below_optimal);
  return below_optimal == 0 ? 0 : 1;
}

// The online deadline policies and the optimum, and their tally over runs where the optimum
// knows each request's server (one worker on a market that draws each server on its own).
const std::vector<std::string> kOnlinePolicies = {"on-demand-only", "spot-only", "greedy",
                                                  "uniform-progress", "market-aware"};

struct ServerByServerTally {
  std::map<std::string, double> ratio;  // sum of cost / optimal, by policy
  std::map<std::string, int> missed;    // missed deadlines, by policy
  double optimal_usd = 0.0;             // sum of the optimum's cost
  int runs = 0;
  int below_optimal = 0;  // runs where a policy met the deadline for less than the optimum

  // Runs every policy and the optimum on `s` for seeds 1..seeds and adds them up; false (and one
  // line on stderr) where the optimum missed the deadline.
  bool add(sim::Scenario s, int seeds) {
    std::map<std::string, std::vector<sim::RunResult>> results;
    std::vector<std::string> policies = kOnlinePolicies;
    policies.push_back("optimal");
    for (const auto& policy : policies) {
      s.market_policy = policy;
      sim::Simulator simulator(s);
      for (int seed = 1; seed <= seeds; ++seed) results[policy].push_back(simulator.run(seed));
    }
    for (int i = 0; i < seeds; ++i) {
      const sim::RunResult& best = results["optimal"][i];
      if (best.missed_deadline) {
        std::fprintf(stderr, "optimal missed the deadline on %s, seed %d\n", s.name.c_str(), i + 1);
        return false;
      }
      optimal_usd += best.cost_usd;
      for (const auto& policy : kOnlinePolicies) {
        const sim::RunResult& r = results[policy][i];
        ratio[policy] += r.cost_usd / best.cost_usd;
        missed[policy] += r.missed_deadline;
        if (!r.missed_deadline && r.cost_usd < best.cost_usd - 1e-9) {
          std::fprintf(stderr, "%s, seed %d: %s cost $%.6f, optimal $%.6f\n", s.name.c_str(), i + 1,
                       policy.c_str(), r.cost_usd, best.cost_usd);
          ++below_optimal;
        }
      }
    }
    runs += seeds;
    return true;
  }

  // One row: `label`, the runs, every online policy's cell, the optimum's mean cost.
  void print_row(const std::string& label) {
    std::printf("%-16s %5d ", label.c_str(), runs);
    for (const auto& policy : kOnlinePolicies) {
      std::printf(" %14s", ratio_cell(ratio[policy], runs, missed[policy]).c_str());
    }
    std::printf("  %.2f\n", optimal_usd / runs);
    std::fflush(stdout);
  }

  void add(const ServerByServerTally& o) {
    for (const auto& policy : kOnlinePolicies) {
      ratio[policy] += o.ratio.count(policy) ? o.ratio.at(policy) : 0.0;
      missed[policy] += o.missed.count(policy) ? o.missed.at(policy) : 0;
    }
    optimal_usd += o.optimal_usd;
    runs += o.runs;
    below_optimal += o.below_optimal;
  }
};

// One spot server of `type` (one step a second) with `work_h` of work by `deadline_h`, 5 minutes
// of start-up, `notice_s`, in-place recovery, 10-minute decision ticks; no market yet.
sim::Scenario one_server_job(const cloud::InstanceType& type, double work_h, double deadline_h,
                             double notice_s) {
  sim::Scenario s;
  s.workers.push_back({type, cloud::Market::spot, 1});
  s.throughput = std::make_shared<perf::TableThroughputModel>(
      std::vector<perf::TablePoint>{{type.gpu, 1, 1.0}}, "one step per second");
  s.total_steps = work_h * 3600.0;
  s.deadline_s = deadline_h * 3600.0;
  s.startup.spot_mean_s = 300;
  s.startup.on_demand_mean_s = 300;
  s.notice_s = notice_s;
  s.recovery = "in-place";
  s.decision_interval_s = 600;
  return s;
}

void print_header(const std::string& first) {
  std::printf("%-16s %5s  %14s %14s %14s %14s %14s  %s\n", first.c_str(), "runs", "on-demand-only",
              "spot-only", "greedy", "uniform-prog.", "market-aware", "optimal $ (mean)");
}

// --lifetime-costs: every deadline policy on GCE preemptible lifetimes (each server's lifetime
// drawn on its own from a CDF of spot-traces/gcp-preemptible-lifetimes, 24 h cap), 40 runs
// (seeds) per CDF: one K80 server, 24 h of work, a deadline of `deadline_h` hours, 5 minutes of
// start-up, GCE's 30-second notice, in-place recovery, February 2019 prices. `optimal` knows the
// server each request gets (OfflineMarket::spot_server). `market-aware` plans with the model
// sampled for 30 days, as `transient simulate` gives it. `only`: these CDFs (all when empty).
int lifetime_costs(std::vector<std::string> files, double deadline_h) {
  const std::string dir =
      std::string(TRANSIENT_SHARED_DATA_DIR) + "/spot-traces/gcp-preemptible-lifetimes/";
  if (files.empty()) {
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      if (entry.path().extension() == ".txt") files.push_back(entry.path().stem().string());
    }
    std::sort(files.begin(), files.end());
  }
  cloud::InstanceType type;
  type.name = "n1-standard-4+k80";
  type.gpu = "K80";
  type.on_demand_usd_per_h = 0.723;
  type.spot_usd_per_h = 0.256;
  print_header("lifetimes");
  ServerByServerTally total;
  for (const auto& file : files) {
    sim::Scenario s = one_server_job(type, 24.0, deadline_h, 30.0);
    s.name = file;
    s.market = market::LifetimeModel::from_cdf_file(dir + file + ".txt", 24 * 3600.0);
    ServerByServerTally cdf;
    if (!cdf.add(s, 40)) return 1;
    cdf.print_row(file);
    total.add(cdf);
  }
  std::printf("%-16s %5d ", "all CDFs", total.runs);
  return print_pooled(kOnlinePolicies, total.ratio, total.missed, total.runs, total.below_optimal);
}

// --node-costs: every deadline policy on Bamboo's spot fleets (spot-traces/aws-node-events: a
// server takes a node present and free, drawn at random, and is revoked when the node is
// removed). The traces last about 11 h, so the job is Can't Be Late's scaled by a sixth: one
// server, 4 h of work, a 6 h deadline, from offsets every hour, 20 seeds (node draws) each; 5
// minutes of start-up, AWS's 2-minute notice, spot at 30% of the on-demand price (p3.2xlarge's
// V100 $3.06/h, g4dn.xlarge's T4 $0.526/h). `optimal` knows the node each request gets.
// `market-aware` plans with the trace from the run's offset to its end, as `transient simulate`
// gives it (in-sample: 11 h leave nothing to hold out).
int node_costs() {
  const std::string dir = std::string(TRANSIENT_SHARED_DATA_DIR) + "/spot-traces/aws-node-events/";
  const std::vector<std::tuple<std::string, std::string, double>> fleets = {{"p3", "V100", 3.06},
                                                                            {"g4dn", "T4", 0.526}};
  print_header("fleet, offset");
  ServerByServerTally total;
  for (const auto& [fleet, gpu, on_demand_usd_per_h] : fleets) {
    cloud::InstanceType type;
    type.name = fleet;
    type.gpu = gpu;
    type.on_demand_usd_per_h = on_demand_usd_per_h;
    type.spot_usd_per_h = 0.3 * on_demand_usd_per_h;
    const std::string file = dir + fleet + "-trace.csv";
    const double duration_s = market::NodeTraceModel::read(file, 0.0, market::kNever)->duration_s();
    ServerByServerTally trace;
    for (double offset_h = 0.0; (offset_h + 6.0) * 3600.0 <= duration_s; offset_h += 1.0) {
      sim::Scenario s = one_server_job(type, 4.0, 6.0, 120.0);
      s.name = fleet + " from " + std::to_string(static_cast<int>(offset_h)) + " h";
      s.market = market::NodeTraceModel::read(file, offset_h * 3600.0, market::kNever);
      ServerByServerTally offset;
      if (!offset.add(s, 20)) return 1;
      offset.print_row(s.name);
      trace.add(offset);
    }
    trace.print_row(fleet + ", all");
    total.add(trace);
  }
  std::printf("%-16s %5d ", "both fleets", total.runs);
  return print_pooled(kOnlinePolicies, total.ratio, total.missed, total.runs, total.below_optimal);
}

// The on-demand price per hour of the server of an AWS availability trace ("us-west-2a_v100_8":
// v100_8); 0 for an unknown one.
double trace_on_demand_usd_per_h(const std::string& trace) {
  const std::map<std::string, double> on_demand_usd_per_h = {
      {"k80_1", 0.90}, {"k80_8", 7.20}, {"v100_1", 3.06}, {"v100_8", 24.48}};
  const auto price = on_demand_usd_per_h.find(trace.substr(trace.find('_') + 1));
  return price == on_demand_usd_per_h.end() ? 0.0 : price->second;
}

// The job of --policy-costs on the optimum's tick accounting, without its spot ticks.
sim::MultiRegionMarket cant_be_late_job(double on_demand_usd_per_h) {
  sim::MultiRegionMarket m;
  m.tick_s = 600.0;
  m.work_s = 24 * 3600.0;
  m.deadline_s = 36 * 3600.0;
  m.spot_changeover_s = m.on_demand_changeover_s = 310;
  m.notice_s = 120;
  m.on_demand_usd_per_s = on_demand_usd_per_h / 3600;
  m.spot_usd_per_s = 0.3 * m.on_demand_usd_per_s;
  return m;
}

// --policy-schedules: the runs of --policy-costs on one trace, on the optimum's accounting (one
// region of multi_region.h): market-aware with its held-out prior against the optimum, and with
// offsets given, the ticks: trace (1 spot, _ none), optimal and market-aware (s spot, D on
// demand, . idle).
int policy_schedules(const std::string& file, const std::vector<double>& offsets_h) {
  const std::string dir =
      std::string(TRANSIENT_SHARED_DATA_DIR) + "/spot-traces/aws-availability-2022-10/";
  const double price_usd_per_h = trace_on_demand_usd_per_h(file);
  if (price_usd_per_h <= 0.0) {
    std::fprintf(stderr, "unknown trace %s\n", file.c_str());
    return 1;
  }
  auto probe = market::AvailabilityTraceModel::read(dir + file + ".json", 0.0, market::kNever);
  const std::vector<std::uint8_t> ticks = trace_ticks(*probe);
  constexpr double kTickS = 600.0;
  constexpr double kDeadlineS = 36 * 3600.0;
  const int span = static_cast<int>(kDeadlineS / kTickS) + 1;
  std::vector<double> offsets = offsets_h;
  if (offsets.empty()) {
    for (double h = 0; (h + 36) * 3600 <= probe->duration_s(); h += 12) offsets.push_back(h);
  }
  auto letter = [](sim::ClusterMode m) {
    return m == sim::ClusterMode::spot ? 's' : m == sim::ClusterMode::on_demand ? 'D' : '.';
  };
  double total = 0.0;
  for (const double h : offsets) {
    const int from = static_cast<int>(std::lround(h * 3600 / kTickS));
    if (from < 0 || from + span > static_cast<int>(ticks.size())) {
      std::fprintf(stderr, "offset %.0f h is outside the trace\n", h);
      return 1;
    }
    sim::MultiRegionMarket m = cant_be_late_job(price_usd_per_h);
    m.spot_ticks.emplace_back(ticks.begin() + from, ticks.begin() + from + span);
    const sim::MultiRegionResult best = sim::optimal_multi_region(m);
    auto policy = sim::create_market_policy("market-aware");
    policy->know_market(held_out_prior(ticks, kTickS, h * 3600, kDeadlineS));
    const sim::MultiRegionResult run = sim::run_multi_region(m, *policy);
    const double ratio = run.cost_usd / best.cost_usd;
    total += ratio;
    std::printf("%s from %4.0f h: market-aware $%.2f, optimal $%.2f: %.3f%s\n", file.c_str(), h,
                run.cost_usd, best.cost_usd, ratio, run.missed_deadline ? " (missed)" : "");
    if (offsets_h.empty()) continue;
    std::string trace, optimal, aware;
    for (int i = 0; i < span; ++i) trace += m.spot_ticks[0][i] ? '1' : '_';
    for (const auto& t : best.ticks) optimal += letter(t.mode);
    for (const auto& t : run.ticks) aware += letter(t.mode);
    std::printf("  trace        %s\n  optimal      %s\n  market-aware %s\n", trace.c_str(),
                optimal.c_str(), aware.c_str());
  }
  std::printf("mean cost / optimal over %zu runs: %.4f\n", offsets.size(), total / offsets.size());
  return 0;
}

// --model-gap: what the optimum's foresight is worth on a market that is exactly the model
// `market-aware` plans with. Runs of 36 h are drawn from the semi-Markov model fitted to a whole
// trace (AvailabilityPrior: each tick's availability holds with the chance its age gives, the
// first period's age unknown), the job of --policy-costs; market-aware plans with that same
// model, so no online policy does better in expectation on these runs (up to the plan's grid),
// and its mean cost / optimal is the part of the gap that only knowing the future closes.
int model_gap(const std::string& file, int runs) {
  const std::string dir =
      std::string(TRANSIENT_SHARED_DATA_DIR) + "/spot-traces/aws-availability-2022-10/";
  const double price_usd_per_h = trace_on_demand_usd_per_h(file);
  if (price_usd_per_h <= 0.0 || runs < 1) {
    std::fprintf(stderr, "unknown trace %s or runs < 1\n", file.c_str());
    return 1;
  }
  auto probe = market::AvailabilityTraceModel::read(dir + file + ".json", 0.0, market::kNever);
  constexpr double kTickS = 600.0;
  constexpr double kDeadlineS = 36 * 3600.0;
  const int span = static_cast<int>(kDeadlineS / kTickS) + 1;
  const auto prior = std::make_shared<sim::AvailabilityPrior>(trace_ticks(*probe), kTickS);
  const std::vector<std::string> policies = {"greedy", "uniform-progress", "market-aware"};
  // The plan's own expected cost (the least any online policy can expect on the model, up to the
  // plan's grid), to hold market-aware's mean cost on the drawn runs against.
  const sim::MultiRegionMarket base = cant_be_late_job(price_usd_per_h);
  sim::OfflineMarket job;
  job.tick_s = base.tick_s;
  job.work_s = base.work_s;
  job.deadline_s = base.deadline_s;
  job.spot_changeover_s = base.spot_changeover_s;
  job.on_demand_changeover_s = base.on_demand_changeover_s;
  job.notice_s = base.notice_s;
  job.on_demand_usd_per_s = base.on_demand_usd_per_s;
  job.spot_usd_per_s = base.spot_usd_per_s;
  const sim::ExpectedCostPlan plan(job, *prior);
  std::map<std::string, double> ratio;
  std::map<std::string, double> cost_usd;
  std::map<std::string, double> cost_usd2;  // sums of squares, for the standard error
  std::map<std::string, int> missed;
  double optimal_usd = 0.0;
  double expected_usd = 0.0;
  for (int r = 0; r < runs; ++r) {
    Rng rng(static_cast<std::uint64_t>(r) + 1);
    std::vector<std::uint8_t> spot(span);
    bool available = rng.uniform() < prior->available_fraction();
    int age = sim::AvailabilityPrior::kUnknownAge;
    for (int i = 0; i < span; ++i) {
      spot[i] = available;
      if (rng.uniform() < prior->holds(available, age)) {
        if (age >= 0) age = std::min(age + 1, sim::AvailabilityPrior::kMaxAge);
      } else {
        available = !available;
        age = 0;
      }
    }
    sim::MultiRegionMarket m = base;
    m.spot_ticks.push_back(spot);
    const sim::MultiRegionResult best = sim::optimal_multi_region(m);
    optimal_usd += best.cost_usd;
    expected_usd += plan.expected_cost_usd(spot[0] != 0);
    for (const auto& name : policies) {
      auto policy = sim::create_market_policy(name);
      policy->know_market(prior);
      const sim::MultiRegionResult run = sim::run_multi_region(m, *policy);
      ratio[name] += run.cost_usd / best.cost_usd;
      cost_usd[name] += run.cost_usd;
      cost_usd2[name] += run.cost_usd * run.cost_usd;
      missed[name] += run.missed_deadline;
    }
  }
  std::printf(
      "%s, %d runs drawn from its model (spot %.2f of ticks): optimal $%.2f a run, the "
      "plan expects $%.2f\n",
      file.c_str(), runs, prior->available_fraction(), optimal_usd / runs, expected_usd / runs);
  for (const auto& name : policies) {
    const double mean = cost_usd[name] / runs;
    const double variance = std::max(0.0, cost_usd2[name] / runs - mean * mean);
    std::printf("  %-16s %s, $%.2f a run (standard error $%.2f)\n", name.c_str(),
                ratio_cell(ratio[name], runs, missed[name]).c_str(), mean,
                std::sqrt(variance / std::max(1, runs - 1)));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--policy-costs") == 0) {
      return policy_costs(std::vector<std::string>(argv + i + 1, argv + argc));
    }
    if (std::strcmp(argv[i], "--multi-region") == 0) return multi_region_costs();
    if (std::strcmp(argv[i], "--model-gap") == 0 && i + 1 < argc) {
      return model_gap(argv[i + 1], i + 2 < argc ? std::atoi(argv[i + 2]) : 400);
    }
    if (std::strcmp(argv[i], "--node-costs") == 0) return node_costs();
    if (std::strcmp(argv[i], "--lifetime-costs") == 0) {
      std::vector<std::string> files;
      double deadline_h = 36.0;
      for (int j = i + 1; j < argc; ++j) {
        if (std::strncmp(argv[j], "--deadline-h=", 13) == 0) {
          deadline_h = std::atof(argv[j] + 13);
        } else {
          files.emplace_back(argv[j]);
        }
      }
      if (!(deadline_h > 24.0)) {
        std::fprintf(stderr, "--deadline-h: hours > 24 (the job has 24 h of work)\n");
        return 2;
      }
      return lifetime_costs(files, deadline_h);
    }
    if (std::strcmp(argv[i], "--policy-schedules") == 0 && i + 1 < argc) {
      std::vector<double> offsets_h;
      for (int j = i + 2; j < argc; ++j) offsets_h.push_back(std::atof(argv[j]));
      return policy_schedules(argv[i + 1], offsets_h);
    }
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
