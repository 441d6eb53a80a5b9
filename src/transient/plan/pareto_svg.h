// The picture of a plan: the Pareto front of predicted time against predicted cost, the
// candidates, the baselines and the recommendation, as a self-contained SVG document.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "transient/plan/planner.h"

namespace transient::plan {

// What the request asked for, drawn as dashed lines: the deadline (a vertical line at its time)
// and the budget (a horizontal one at its cost); either may be absent.
struct ParetoLimits {
  std::optional<double> deadline_s;
  std::optional<double> budget_usd;
};

// An SVG document (text); `title` is drawn at the top.
std::string render_pareto_svg(const PlanResult& result, const std::string& title,
                              const ParetoLimits& limits = {});

// The ticks of an axis from 0 that reaches at least `max` (> 0): 4 to 8 steps of 1, 2, 2.5 or 5
// times a power of ten, so that each reads as a round number (0, 0.5, 1, 1.5, 2).
std::vector<double> axis_ticks(double max);

}  // namespace transient::plan
