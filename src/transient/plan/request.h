// What a user asks the planner for: train N steps by a deadline and/or within a budget. Plain
// value type; the one place that decides whether a plan's time and cost meet the request, so the
// programme's candidates, the baselines and the risk check judge plans alike.
#pragma once

#include <limits>
#include <string>

#include "transient/sim/scenario.h"

namespace transient::plan {

struct Request {
  double total_steps = 0.0;                                     // global steps, > 0
  double deadline_s = sim::kNoDeadline;                         // kNoDeadline = none
  double budget_usd = std::numeric_limits<double>::infinity();  // infinity = none

  bool has_deadline() const { return deadline_s != sim::kNoDeadline; }
  bool has_budget() const { return budget_usd != std::numeric_limits<double>::infinity(); }

  // The plan finishes, and by the deadline if there is one. An infinite time (a run that never
  // finishes, or a quantile of runs too many of which never finish) never meets a request.
  bool in_time(double time_s) const { return time_s < sim::kNoDeadline && time_s <= deadline_s; }
  // The plan costs no more than the budget (anything does without one).
  bool within_budget(double cost_usd) const { return cost_usd <= budget_usd; }
  // Both: the "meets the deadline and the budget" of every decision of the planner.
  bool met_by(double time_s, double cost_usd) const {
    return in_time(time_s) && within_budget(cost_usd);
  }

  // "64,000 steps in 2.00 h for $5.00", the parts it has.
  std::string text() const;
};

// "64,000".
std::string format_steps(double steps);
// "64,000 steps", "1 step".
std::string format_step_count(double steps);
// "20 s" (under a minute), "41 min", "3.91 h", "never" (infinity).
std::string format_hours(double seconds);
// "$2.50".
std::string format_usd(double usd);
// The quantile `share` (in (0, 1)) as a percentile with the decimals it needs: "p95", "p99.6".
std::string format_quantile(double share);

}  // namespace transient::plan
