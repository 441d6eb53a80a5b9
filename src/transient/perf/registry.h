// The registry of throughput models: names, one-line descriptions and parameters, and the
// factory that builds one from text parameters (a scenario's `[throughput]` table, CLI flags).
// Issue 5's `analytic` and `fitted` models register here beside `table`.
//
// Built models are immutable and may be shared between threads. Every bad name or parameter is
// an InputError naming where it was written and what is accepted.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "transient/core/registry.h"
#include "transient/perf/throughput_model.h"

namespace transient::perf {

// A model's parameters as text, as a user wrote them, e.g. {"workload": "resnet-32"}. An error
// about one parameter names its own line where `lines` has it (a scenario's [throughput] table),
// else `line`.
struct ThroughputParams : PluginParams {
  std::map<std::string, int> lines;  // parameter name -> its line in `file`
};

// Every registered model, in a stable order.
const std::vector<PluginInfo>& throughput_models();

// Builds the model called `name`. Throws InputError for an unknown name (listing the valid
// ones) or a bad parameter (listing what is accepted).
std::unique_ptr<ThroughputModel> create_throughput_model(const std::string& name,
                                                         const ThroughputParams& params);

}  // namespace transient::perf
