// Report pages of studies made before renting: the output of `transient simulate --json` (the
// distributions of time and cost over the Monte Carlo runs, one run's timeline, or where one run
// of several regions ran) and of `transient plan --json` (the Pareto front of time against cost,
// and the candidates).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "transient/report/report_options.h"

namespace transient::report {

// True if `json` is the shape of `transient simulate --json` / `transient plan --json` output.
bool is_simulation_output(const nlohmann::json& json);
bool is_plan_output(const nlohmann::json& json);

// The page of a `transient simulate --json` output read from the file `name`. Throws InputError
// naming `name` if a figure the page needs is missing or of the wrong type, or if Chart.js cannot
// be read.
std::string render_simulation_report(const nlohmann::json& json, const std::string& name,
                                     const ReportOptions& options);

// The page of a `transient plan --json` output read from the file `name`; errors as above.
std::string render_plan_report(const nlohmann::json& json, const std::string& name,
                               const ReportOptions& options);

}  // namespace transient::report
