// The picture of a plan: the Pareto front of predicted time against predicted cost, the
// candidates, the baselines and the recommendation, as a self-contained SVG document.
#pragma once

#include <string>

#include "transient/plan/planner.h"

namespace transient::plan {

// An SVG document (text); `title` is drawn at the top.
std::string render_pareto_svg(const PlanResult& result, const std::string& title);

}  // namespace transient::plan
