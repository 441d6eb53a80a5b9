// A plan as a scenario file (the TOML that sim/scenario_loader.h reads, docs/scenarios.md): the
// recommended cluster, its run policy (run_policy.h) and the models the plan was made with, so
// that `transient simulate FILE` runs the plan unchanged. The planner holds its models as
// objects; how they are named in a file is the CLI's knowledge, passed in ScenarioModels.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "transient/cloud/instance_type.h"
#include "transient/perf/throughput_model.h"
#include "transient/plan/configuration.h"
#include "transient/plan/run_policy.h"

namespace transient::plan {

// The plan's models by their registry names and parameters.
struct ScenarioModels {
  std::string catalog;  // built-in name or an absolute CSV path
  // The rows of `catalog`. A server of the plan is written as the row the scenario loader finds
  // for its type and zone when that row is the server's type; any other (a provider's default
  // support server, support_server.h, which the catalog lacks) as an [[instance_types]] table.
  std::vector<cloud::InstanceType> catalog_types;
  std::string throughput;                                // throughput model, e.g. "analytic"
  std::map<std::string, std::string> throughput_params;  // e.g. workload = resnet-32
  std::string market = "none";                           // revocation model of the spot servers
  std::map<std::string, std::string> market_params;      // e.g. gpu = K80
  double notice_s = 30.0;                                // warning before a revocation
  std::string startup = "default";                       // "cmdare" or "default" (both markets)
};

struct ScenarioFile {
  std::string name;          // the scenario's name
  std::string comment;       // first line(s) of the file, without "#"
  double total_steps = 0.0;  // a whole number > 0
  double deadline_s = 0.0;   // sim::kNoDeadline = none
  perf::Architecture architecture = perf::Architecture::allreduce;
  Configuration configuration;  // workers and support servers
  RunPolicy policy;             // as the planner filled it
  ScenarioModels models;
};

// The TOML text. The periodic checkpoints are those of the policy's advice when a market policy
// was chosen by simulation (its figures are then what `simulate` reproduces), else the plan's.
// Throws InputError when a scenario cannot say it (steps that are not a whole number, two types
// of one name that are not the same).
std::string scenario_toml(const ScenarioFile& file);

}  // namespace transient::plan
