// How to run a plan, as data: what replaces a revoked server, when the job falls back to on-demand
// servers, which deadline policy of the simulator decides the market (and what it cost against
// the offline optimum on the market the plan was made with). The planner fills it; `plan` prints
// text() for people, writes the fields to --json, and turns them into a scenario
// (scenario_writer.h) and trainer flags. Every field is in the units the simulator's policies use
// (sim/market_policy.h: seconds, steps per second, dollars). Plain value type.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "transient/sim/scenario.h"

namespace transient::plan {

// One market policy (sim/market_policy.h) simulated on the market the plan was made with,
// against the offline optimum on the same runs: a deadline-safe one, or `none` (the workers stay
// on spot, nothing guards the deadline).
struct PolicyFigures {
  std::string name;                  // a market policy of the registry, or none
  double expected_cost_usd = 0.0;    // mean over the runs
  double cost_over_optimal = 0.0;    // mean of cost / optimal cost, run by run (0: unknown)
  double deadline_miss_share = 0.0;  // runs that missed the deadline
};

// The deadline policy to run the recommended plan with, chosen by simulation.
struct PolicyAdvice {
  // The cheapest safe policy of those that missed fewest deadlines; `none` instead where it
  // missed fewer, or as few and the safe one costs over 5% more (planner.cc, kGuaranteeWorth).
  std::string recommended;
  // Every safe policy, then `none`, then `optimal` (if it could run).
  std::vector<PolicyFigures> policies;
  int runs = 0;  // Monte Carlo runs behind the figures
  bool optimal_exact =
      false;  // `optimal` is the exact optimum (a replayed trace), else a heuristic
  double checkpoint_interval_s = 0.0;  // the periodic checkpoints of the runs (0 = none)
  // Why `optimal` is not in `policies` (empty where it is): its programme would take too long
  // over the deadline's horizon (planner.cc, kServerOptimumMaxTicks), or it could not run.
  std::string no_optimum_reason;
  // The request's budget (0 = none): the plan met it as simulated without a market policy, and
  // the recommended policy's expected cost may still pass it, which text() then says.
  double budget_usd = 0.0;

  // Whether the recommended policy's expected cost is within the budget (true without one).
  bool within_budget() const;
  // The recommended policy's figures; null if it is not in `policies` (a bug).
  const PolicyFigures* chosen() const;
  // The figures of `optimal`, or null when it could not run.
  const PolicyFigures* optimal() const;
  // "run with the `greedy` market policy: expected $2.47, at the offline optimum ($2.47) (or
  // "3.1% above" it) on average over 20 runs of the market planned with; 0% missed the deadline",
  // "; not compared with the offline optimum: WHY" without it, and "; above the budget ($2.40)"
  // when it is. For `none`: "run without a market policy (...):
  // expected
  // ...; the cheapest deadline-safe one, `greedy`, expected $2.92".
  std::string text() const;
};

// The safety net of the deadline-safe market policies (sim::spot_unsafe): the job goes on demand
// once the time left to the deadline, less the work left at the full cluster's speed, falls
// below reserve_s() (plus the work a revocation could lose).
struct Fallback {
  int servers = 0;                      // the same workers, bought on demand
  double steps_per_s = 0.0;             // the full cluster's speed (either market)
  double on_demand_changeover_s = 0.0;  // on-demand start-up (mean) + the restart pause
  double decision_interval_s = 0.0;     // seconds between the policy's decisions
  double margin_s = 0.0;                // deadline - the plan's time without revocations, >= 0

  // Slack (s) below which the job runs on demand: one decision interval and one changeover.
  double reserve_s() const { return decision_interval_s + on_demand_changeover_s; }
};

struct RunPolicy {
  // Recovery and checkpoints, as the plan was simulated.
  std::string recovery;                // recovery model (sim/recovery_model.h), e.g. "in-place"
  double checkpoint_interval_s = 0.0;  // periodic checkpoints, 0 = none

  // What replaces a revoked spot server: a replacement policy of the registry
  // (sim/replacement_policy.h) and, for `same`, the groups it re-buys (type and market).
  std::string replacement = "none";               // "none" when nothing is on spot
  std::vector<sim::ServerGroup> replaced_groups;  // the spot groups, as they are replaced
  std::string support_server;                     // the on-demand server that holds the job
  bool parameter_server = false;                  // it holds the parameters (async-ps)

  // The market: "none" (the cluster stays as bought) or a deadline-safe market policy.
  std::string market_policy = "none";
  bool deadline = false;               // the job has a deadline
  int worker_groups = 0;               // groups of workers (a market policy moves only one)
  std::optional<Fallback> fallback;    // with a deadline and one group of spot workers
  double stop_at_usd = 0.0;            // without a deadline: stop renting there (0 = no rule)
  std::optional<PolicyAdvice> advice;  // how the market policy was chosen, with its figures

  // The policy for people, one line (what `plan` prints after "policy:").
  std::string text() const;
};

}  // namespace transient::plan
