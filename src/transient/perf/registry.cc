#include "transient/perf/registry.h"

#include <filesystem>

#include "transient/core/error.h"
#include "transient/perf/analytic_throughput_model.h"
#include "transient/perf/fitted_throughput_model.h"
#include "transient/perf/table_throughput_model.h"
#include "transient/perf/throughput_fitting.h"
#include "transient/perf/workload.h"

namespace transient::perf {
namespace {

[[noreturn]] void fail(const ThroughputParams& params, const std::string& message) {
  if (params.file.empty()) throw InputError(message);
  throw InputError(params.file, params.line, message);
}

std::unique_ptr<ThroughputModel> create_table(const ThroughputParams& params) {
  for (const auto& [key, value] : params.values) {
    if (key != "workload" && key != "table") {
      fail(params, "unknown parameter \"" + key +
                       "\" of the table throughput model; accepted: workload, table");
    }
  }
  const auto workload = params.values.find("workload");
  const auto table = params.values.find("table");
  if ((workload == params.values.end()) == (table == params.values.end())) {
    fail(params,
         "the table throughput model needs exactly one of workload (a CM-DARE workload: "
         "resnet-15, resnet-32, shake-shake-small, shake-shake-big) or table (a CSV file "
         "gpu,workers,steps_per_s)");
  }
  try {
    if (workload != params.values.end()) {
      return std::make_unique<TableThroughputModel>(TableThroughputModel::cmdare(workload->second));
    }
    std::filesystem::path path = table->second;
    if (path.is_relative() && !params.base_dir.empty()) path = params.base_dir / path;
    return std::make_unique<TableThroughputModel>(TableThroughputModel::from_csv(path.string()));
  } catch (const InputError& error) {
    if (!error.file().empty()) throw;
    fail(params, error.message());
  }
}

// The workload (workload=NAME or profile=FILE) and the model file (model=FILE) of the analytic
// and fitted models.
struct WorkloadAndModel {
  Workload workload;
  PerfModelFile model;
};

WorkloadAndModel read_workload_and_model(const ThroughputParams& params, const char* name) {
  for (const auto& [key, value] : params.values) {
    if (key != "workload" && key != "profile" && key != "model") {
      fail(params, "unknown parameter \"" + key + "\" of the " + name +
                       " throughput model; accepted: workload, profile, model");
    }
  }
  const auto workload = params.values.find("workload");
  const auto profile = params.values.find("profile");
  const auto model = params.values.find("model");
  if ((workload == params.values.end()) == (profile == params.values.end())) {
    fail(params, std::string("the ") + name +
                     " throughput model needs exactly one of workload (a built-in workload, "
                     "e.g. resnet-32) or profile (a workload profile JSON file)");
  }
  auto resolve = [&](const std::string& file) {
    std::filesystem::path path = file;
    if (path.is_relative() && !params.base_dir.empty()) path = params.base_dir / path;
    return path.string();
  };
  try {
    WorkloadAndModel out;
    out.workload = workload != params.values.end()
                       ? find_workload(workload->second)
                       : load_workload_profile(resolve(profile->second));
    if (model != params.values.end()) {
      out.model = PerfModelFile::load(resolve(model->second));
    } else {
      out.model.analytic = AnalyticParams::builtin();
      out.model.fitted = FittedParams::builtin();
    }
    return out;
  } catch (const InputError& error) {
    if (!error.file().empty()) throw;
    fail(params, error.message());
  }
}

std::unique_ptr<ThroughputModel> create_analytic(const ThroughputParams& params) {
  auto in = read_workload_and_model(params, "analytic");
  return std::make_unique<AnalyticThroughputModel>(std::move(in.workload),
                                                   std::move(in.model.analytic));
}

std::unique_ptr<ThroughputModel> create_fitted(const ThroughputParams& params) {
  auto in = read_workload_and_model(params, "fitted");
  return std::make_unique<FittedThroughputModel>(std::move(in.workload),
                                                 std::move(in.model.fitted));
}

struct Entry {
  ThroughputModelInfo info;
  std::unique_ptr<ThroughputModel> (*create)(const ThroughputParams&);
};

const std::vector<Entry>& entries() {
  static const std::vector<Entry> all = {
      {{"table",
        "measured steps/s by GPU and worker count (CM-DARE's cluster scaling or a CSV table), "
        "interpolated",
        {"workload=resnet-15|resnet-32|shake-shake-small|shake-shake-big",
         "table=CSV file with columns gpu,workers,steps_per_s (instead of workload)"}},
       &create_table},
      {{"analytic",
        "compute from GPU TFLOPS x fitted efficiency, plus parameter-server or ring all-reduce "
        "communication; names the bottleneck",
        {"workload=a built-in workload (resnet-15, resnet-32, shake-shake-small, ...)",
         "profile=a workload profile JSON file (instead of workload)",
         "model=a model file of `transient fit` (default: constants fitted on CM-DARE)"}},
       &create_analytic},
      {{"fitted",
        "CM-DARE-style regression of a worker's step time on workload and GPU features, with the "
        "analytic model's communication",
        {"workload=a built-in workload (resnet-15, resnet-32, shake-shake-small, ...)",
         "profile=a workload profile JSON file (instead of workload)",
         "model=a model file of `transient fit` (default: coefficients fitted on CM-DARE)"}},
       &create_fitted},
  };
  return all;
}

}  // namespace

const std::vector<ThroughputModelInfo>& throughput_models() {
  static const std::vector<ThroughputModelInfo> infos = [] {
    std::vector<ThroughputModelInfo> out;
    for (const auto& entry : entries()) out.push_back(entry.info);
    return out;
  }();
  return infos;
}

std::unique_ptr<ThroughputModel> create_throughput_model(const std::string& name,
                                                         const ThroughputParams& params) {
  std::string valid;
  for (const auto& entry : entries()) {
    if (entry.info.name == name) return entry.create(params);
    valid += (valid.empty() ? "" : ", ") + entry.info.name;
  }
  fail(params, "unknown throughput model \"" + name + "\"; accepted: " + valid);
}

}  // namespace transient::perf
