// The planner: which cluster to rent to train N steps by a deadline and/or within a budget, how
// sure that is, and how to run it (docs/plan.md).
//
// plan(): (1) every GPU offer of the catalog ranked by FLOPP; (2) candidate enumeration: a
// mixed-integer programme (cluster_mip.h, COIN-OR CBC) picks server counts per (type, market) in
// the cheapest zone of each, homogeneous and heterogeneous, minimising cost under the deadline
// (and budget) or time under the budget; no-good cuts give the top-k, a sweep of speed floors the
// Pareto front; (3) evaluation: the candidates are ranked on paper, and the best of them and the
// baselines are simulated (sim/monte_carlo.h); (4) choice: a plan whose --confidence quantile of
// time misses the deadline, or whose expected cost breaks the budget (Request::met_by), is not
// recommended, and the best of the others is. evaluate(): the figures of one given configuration,
// the same as the plan's (and, for its Monte Carlo figures, as `transient simulate`'s: both are
// sim::summarize()'s).
//
// Expected outcomes are values: a request nothing meets is a PlanResult with feasible = false
// and a reason. InputError for bad requests (no deadline and no budget, a deadline <= 0, ...).
// A Planner is used by one thread (Monte Carlo runs may use more, PlanOptions::threads).
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "transient/cloud/catalog.h"
#include "transient/market/revocation_model.h"
#include "transient/perf/throughput_model.h"
#include "transient/plan/configuration.h"
#include "transient/plan/flopp.h"
#include "transient/plan/request.h"
#include "transient/plan/run_policy.h"
#include "transient/sim/scenario.h"

namespace transient::plan {
namespace internal {
struct Candidates;
struct Offer;
}  // namespace internal

// The revocation model of spot servers of a type (null: never revoked).
using MarketModelFor =
    std::function<std::shared_ptr<const market::RevocationModel>(const cloud::InstanceType&)>;

struct PlanOptions {
  // The job (request() gathers the request).
  double total_steps = 0.0;                                     // global steps, > 0
  double deadline_s = sim::kNoDeadline;                         // kNoDeadline = none
  double budget_usd = std::numeric_limits<double>::infinity();  // infinity = none
  perf::Architecture architecture = perf::Architecture::async_ps;

  // The search.
  std::vector<std::string> zones;  // zones or regions to rent in; empty = all
  int max_regions = 1;             // regions one cluster may span; 0 = any number
  int max_servers = 16;            // workers at most
  // All-reduce with a global batch of G samples: at most G workers, so that each trains on a
  // sample at least (JobBatch::max_workers, as `transient train` requires); a cluster of more is
  // not acceptable. 0 = any.
  int max_workers_for_batch = 0;
  int top_k = 5;              // candidates kept from the programme
  int pareto_points = 16;     // speed floors swept (Pareto front, candidates)
  bool heterogeneous = true;  // also mixes of types (else homogeneous only)

  // The risk check.
  double confidence = 0.95;                    // quantile of time that must meet the deadline
  int runs = 200;                              // Monte Carlo runs per candidate; 0 = no simulation
  std::uint64_t seed = 1;                      // run i uses seed + i
  int threads = 1;                             // Monte Carlo threads
  MarketModelFor market_for;                   // spot revocations; null = never revoked
  sim::StartupOptions startup;                 // start-up delays (zero = none)
  std::string replacement = "same";            // replacement policy of revoked servers
  double notice_s = sim::Scenario{}.notice_s;  // warning before a revocation (EC2: 120 s)

  Request request() const { return {total_steps, deadline_s, budget_usd}; }
};

// One configuration judged.
struct Evaluation {
  std::string label;  // "plan 1", "all on-demand", "evaluate", ...
  Configuration configuration;
  double steps_per_s = 0.0;         // the throughput model's speed
  double step_time_s = 0.0;         // its step time (perf::Prediction::step_time_s; 0 = unknown)
  std::string bottleneck;           // the model's bottleneck, if it says
  double predicted_time_s = 0.0;    // start-up + steps / speed, no revocations
  double predicted_cost_usd = 0.0;  // the same time at the configuration's price
  // The figures below come from Monte Carlo runs, as sim::summarize() defines them; without
  // runs they are the prediction's.
  bool simulated = false;
  double expected_time_s = 0.0;            // mean over finished runs (infinity if none finished)
  double quantile_time_s = 0.0;            // the confidence quantile (an unfinished run: infinity)
  double expected_cost_usd = 0.0;          // mean over all runs
  double deadline_miss_probability = 0.0;  // runs not finished by the deadline (0 without one)
  double expected_revocations = 0.0;
  double unfinished_share = 0.0;   // runs that failed or never finished
  double budget_stop_share = 0.0;  // of them, runs stopped at the budget (RunPolicy::stop_at_usd)
  // Request::met_by(quantile_time_s, expected_cost_usd): meets the deadline at the quantile and
  // the budget (on paper when not simulated).
  bool acceptable = false;
  std::string verdict;              // why (not) acceptable, one line
  std::optional<RunPolicy> policy;  // how to run it, for acceptable plans
};

struct PlanResult {
  bool feasible = false;               // some configuration is recommended
  std::string reason;                  // why not, or what the recommendation rests on
  std::vector<FloppEntry> flopp;       // the offers, best FLOPP first
  std::vector<Evaluation> candidates;  // from the programme, best first by its objective
  std::vector<Evaluation> baselines;   // all on-demand, cheapest spot, DeepVM cost/perf first
  std::vector<Evaluation> pareto;      // non-dominated (predicted time, predicted cost), by time
  // Its policy's advice (RunPolicy::advice) is filled with a deadline, for a plan of one group of
  // spot workers.
  std::optional<Evaluation> recommended;
  int mip_solves = 0;  // CBC solves
};

class Planner {
 public:
  // Throws InputError for a bad request: no total steps, a deadline <= 0, a budget <= 0,
  // max_servers < 1, max_regions < 0, a confidence outside (0, 1), a region without a support
  // server (support_server.h).
  Planner(cloud::Catalog catalog, std::shared_ptr<const perf::ThroughputModel> throughput,
          PlanOptions options);

  // InputError when the request has neither a deadline nor a budget.
  PlanResult plan();
  // The figures of one configuration (simulated if options.runs > 0): its Monte Carlo figures are
  // sim::summarize() of sim::run_many(scenario_for(configuration, label), {runs, seed, threads}),
  // what `transient simulate` prints for that scenario, seed and runs.
  Evaluation evaluate(const Configuration& configuration, const std::string& label) const;
  // evaluate() and, as for a recommended plan, the market policy advised for the configuration
  // (a deadline, one group on spot, runs > 0): what `plan --evaluate` prints and its
  // --emit-scenario writes, so that `transient simulate` of that scenario gives the advice.
  Evaluation evaluate_with_advice(const Configuration& configuration,
                                  const std::string& label) const;
  // The scenario evaluate() simulates: the request's job on `configuration`, under the market
  // model of its largest spot group, the start-up delays, the architecture's recovery model,
  // 10-minute checkpoints, the replacement policy of the options and, where the plan's policy
  // says to stop renting at the budget (RunPolicy::stop_at_usd), that budget stop.
  sim::Scenario scenario_for(const Configuration& configuration, const std::string& label) const;
  // The on-demand CPU server that holds the parameters (async-ps) or the coordinator (allreduce)
  // of each region with GPU servers in the zones (support_server.h); a plan's is that of the
  // region of its largest worker group.
  const SupportServers& support_servers() const { return support_; }

 private:
  // Evaluation: the throughput model's prediction, the Monte Carlo figures, the verdict.
  Evaluation predicted(const Configuration& configuration, const std::string& label) const;
  Evaluation simulated(Evaluation e) const;
  Evaluation judged(Evaluation e) const;
  // predicted() and judged(), without simulating.
  Evaluation on_paper(const Configuration& configuration, const std::string& label) const;

  // Choice, in plan()'s order.
  std::vector<Configuration> shortlist(const internal::Candidates& found) const;
  std::vector<std::pair<std::string, Configuration>> baselines(
      const std::vector<internal::Offer>& offers) const;
  Configuration homogeneous_best(const internal::Offer& offer, const std::string& label) const;
  std::vector<Evaluation> simulated_candidates(const std::vector<Configuration>& chosen) const;
  std::optional<Evaluation> recommended(const PlanResult& result) const;
  std::string reason(const PlanResult& result, const internal::Candidates& found,
                     bool any_chosen) const;

  std::optional<PolicyAdvice> advise_policy(const Configuration& configuration) const;
  // The market policy advised for `e`'s configuration set in its policy (a plan recommended, or
  // one evaluated), when advise_policy() gives one.
  void advise(Evaluation& e) const;
  double predicted_time_s(const Configuration& c, double steps_per_s) const;
  bool objective_less(const Evaluation& a, const Evaluation& b) const;
  RunPolicy policy_for(const Evaluation& e) const;
  // Whether `c` is run under "stop renting at the budget": a budget, no deadline, spot workers.
  bool stops_at_budget(const Configuration& c) const;
  // "in-place" for allreduce (our trainer), "async-ps-chief" for the research's TensorFlow.
  std::string recovery_name() const;

  cloud::Catalog catalog_;
  std::shared_ptr<const perf::ThroughputModel> throughput_;
  PlanOptions options_;
  Request request_;  // options_.request()
  SupportServers support_;
  double start_pause_s_ = 0.0;  // the recovery model's pause before the first step
};

}  // namespace transient::plan
