#include "transient/perf/registry.h"

#include <cmath>
#include <filesystem>
#include <optional>
#include <utility>

#include "transient/core/bounds.h"
#include "transient/core/error.h"
#include "transient/core/registry.h"
#include "transient/perf/analytic_throughput_model.h"
#include "transient/perf/fitted_throughput_model.h"
#include "transient/perf/internal/cluster_composition.h"
#include "transient/perf/table_throughput_model.h"
#include "transient/perf/throughput_fitting.h"
#include "transient/perf/workload.h"

namespace transient::perf {
namespace {

[[noreturn]] void fail(const ThroughputParams& params, const std::string& message) {
  if (params.file.empty()) throw InputError(message);
  throw InputError(params.file, params.line, message);
}

// An error about the parameter `key`: at its own line where it is known.
[[noreturn]] void fail_at(const ThroughputParams& params, const std::string& key,
                          const std::string& message) {
  if (params.file.empty()) throw InputError(message);
  const auto line = params.lines.find(key);
  throw InputError(params.file, line != params.lines.end() ? line->second : params.line, message);
}

std::unique_ptr<ThroughputModel> create_table(const ThroughputParams& params) {
  for (const auto& [key, value] : params.values) {
    if (key != "workload" && key != "table") {
      fail_at(params, key,
              "unknown parameter \"" + key +
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
    fail_at(params, workload != params.values.end() ? "workload" : "table", error.message());
  }
}

// A file a parameter names: relative to the scenario's folder, if there is one.
std::string resolved_path(const ThroughputParams& params, const std::string& file) {
  std::filesystem::path path = file;
  if (path.is_relative() && !params.base_dir.empty()) path = params.base_dir / path;
  return path.string();
}

// The workload (workload=NAME or profile=FILE) and the model file (model=FILE) of the analytic
// and fitted models.
struct WorkloadAndModel {
  Workload workload;
  PerfModelFile model;
};

// The job's batch: global_batch=G or per_worker_batch=B (job_batch.h), at most one of them.
JobBatch read_job_batch(const ThroughputParams& params) {
  const auto global = params.values.find("global_batch");
  const auto per_worker = params.values.find("per_worker_batch");
  if (global != params.values.end() && per_worker != params.values.end()) {
    // At the second of the two, where it is known.
    const auto line_of = [&](const char* key) {
      const auto line = params.lines.find(key);
      return line == params.lines.end() ? 0 : line->second;
    };
    fail_at(
        params,
        line_of("global_batch") > line_of("per_worker_batch") ? "global_batch" : "per_worker_batch",
        "global_batch and per_worker_batch exclude each other; accepted: one of them (a fixed "
        "global batch split among the workers, or a batch per worker)");
  }
  JobBatch batch;
  if (global == params.values.end() && per_worker == params.values.end()) return batch;
  const auto& [key, text] = global != params.values.end() ? *global : *per_worker;
  batch.mode = global != params.values.end() ? JobBatch::Mode::global : JobBatch::Mode::per_worker;
  std::size_t used = 0;
  long long value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !bounds::kBatch.contains(static_cast<double>(value))) {
    fail_at(params, key, key + " is \"" + text + "\"; accepted: " + bounds::kBatch.accepted());
  }
  batch.samples = static_cast<int>(value);
  return batch;
}

WorkloadAndModel read_workload_and_model(const ThroughputParams& params, const char* name) {
  for (const auto& [key, value] : params.values) {
    if (key != "workload" && key != "profile" && key != "model" && key != "global_batch" &&
        key != "per_worker_batch") {
      fail_at(params, key,
              "unknown parameter \"" + key + "\" of the " + name +
                  " throughput model; accepted: workload, profile, model, global_batch, "
                  "per_worker_batch");
    }
  }
  const JobBatch batch = read_job_batch(params);
  const auto workload = params.values.find("workload");
  const auto profile = params.values.find("profile");
  const auto model = params.values.find("model");
  if ((workload == params.values.end()) == (profile == params.values.end())) {
    fail(params, std::string("the ") + name +
                     " throughput model needs exactly one of workload (a built-in workload, "
                     "e.g. resnet-32) or profile (a workload profile JSON file)");
  }
  const auto resolve = [&](const std::string& file) { return resolved_path(params, file); };
  try {
    WorkloadAndModel out;
    out.workload = workload != params.values.end()
                       ? find_workload(workload->second)
                       : load_workload_profile(resolve(profile->second));
    out.workload.batch = batch;
    if (model != params.values.end()) {
      out.model = PerfModelFile::load(resolve(model->second));
    } else {
      out.model.analytic = AnalyticParams::builtin();
      out.model.fitted = FittedParams::builtin();
    }
    return out;
  } catch (const InputError& error) {
    if (!error.file().empty()) throw;
    fail_at(params, workload != params.values.end() ? "workload" : "profile", error.message());
  }
}

// The workers of `cluster` in words, "2 x p2.xlarge, 1 x p3.2xlarge".
std::string workers_text(const ClusterShape& cluster) {
  std::string workers;
  for (const auto& group : cluster.workers) {
    workers +=
        (workers.empty() ? "" : ", ") + std::to_string(group.count) + " x " + group.type.name;
  }
  return workers;
}

// A model whose constants come from a model file: each is bounded where it is read, but a
// regression's combination of them (a log-linear exp(1e12 x log FLOPs), a linear one extrapolated
// below 0) is not, so a prediction that is not a finite positive step time is refused naming the
// file, as bad input.
class ModelFromFile : public ThroughputModel {
 public:
  // `regression`: for the fitted model, its workload and constants, whose regression is checked
  // for each worker's server before the floor that the prediction puts under it.
  ModelFromFile(std::unique_ptr<ThroughputModel> model, std::string file,
                std::optional<std::pair<Workload, FittedParams>> regression = std::nullopt)
      : model_(std::move(model)), file_(std::move(file)), regression_(std::move(regression)) {}

  std::string name() const override { return model_->name(); }
  std::string describe() const override { return model_->describe(); }
  Prediction predict(const ClusterShape& cluster) const override {
    const auto good = [](double value) { return std::isfinite(value) && value > 0; };
    if (regression_) {
      for (const auto& group : cluster.workers) {
        const double step_s = regression_->second.regression_step_s(regression_->first,
                                                                    internal::one_gpu(group.type));
        if (!good(step_s)) {
          refuse(number_text(step_s) + " s for one worker on " + group.type.name);
        }
      }
    }
    const Prediction p = model_->predict(cluster);
    if (cluster.total_workers() == 0) return p;  // no step to take
    if (!good(p.step_time_s) || !good(p.steps_per_s) || !good(p.samples_per_s)) {
      refuse(number_text(p.step_time_s) + " s (" + number_text(p.steps_per_s) + " steps/s) on " +
             workers_text(cluster));
    }
    return p;
  }

 private:
  [[noreturn]] void refuse(const std::string& step) const {
    throw InputError(file_, 0,
                     "the " + model_->name() + " model predicts a step time of " + step +
                         "; accepted: a model file whose predictions are finite and positive "
                         "(fit it again with `transient fit`)");
  }

  std::unique_ptr<ThroughputModel> model_;
  std::string file_;  // the model file
  std::optional<std::pair<Workload, FittedParams>> regression_;
};

std::unique_ptr<ThroughputModel> checked_if_from_file(
    std::unique_ptr<ThroughputModel> model, const ThroughputParams& params,
    std::optional<std::pair<Workload, FittedParams>> regression = std::nullopt) {
  const auto file = params.values.find("model");
  if (file == params.values.end()) return model;  // the built-in constants
  return std::make_unique<ModelFromFile>(std::move(model), resolved_path(params, file->second),
                                         std::move(regression));
}

std::unique_ptr<ThroughputModel> create_analytic(const ThroughputParams& params) {
  auto in = read_workload_and_model(params, "analytic");
  return checked_if_from_file(std::make_unique<AnalyticThroughputModel>(
                                  std::move(in.workload), std::move(in.model.analytic)),
                              params);
}

std::unique_ptr<ThroughputModel> create_fitted(const ThroughputParams& params) {
  auto in = read_workload_and_model(params, "fitted");
  std::pair<Workload, FittedParams> regression{in.workload, in.model.fitted};
  return checked_if_from_file(
      std::make_unique<FittedThroughputModel>(std::move(in.workload), std::move(in.model.fitted)),
      params, std::move(regression));
}

using Factory = std::unique_ptr<ThroughputModel> (*)(const ThroughputParams&);

const Registry<Factory>& registry() {
  static const Registry<Factory> all(
      "throughput model",
      {
          {{"table",
            "measured steps/s by GPU and worker count (CM-DARE's cluster scaling or a CSV table), "
            "interpolated",
            {"workload=resnet-15|resnet-32|shake-shake-small|shake-shake-big",
             "table=CSV file with columns gpu,workers,steps_per_s (instead of workload)"}},
           &create_table},
          {{"analytic",
            "compute from GPU TFLOPS x fitted efficiency, plus parameter-server or hierarchical "
            "all-reduce "
            "communication; names the bottleneck",
            {"workload=a built-in workload (resnet-15, resnet-32, shake-shake-small, ...)",
             "profile=a workload profile JSON file (instead of workload)",
             "model=a model file of `transient fit` (default: constants fitted on CM-DARE)",
             "global_batch=samples per step, split among the workers (default: the workload's, "
             "128)",
             "per_worker_batch=samples per worker and step (instead of global_batch)"}},
           &create_analytic},
          {{"fitted",
            "CM-DARE-style regression of a worker's step time on workload and GPU features, with "
            "the "
            "analytic model's communication",
            {"workload=a built-in workload (resnet-15, resnet-32, shake-shake-small, ...)",
             "profile=a workload profile JSON file (instead of workload)",
             "model=a model file of `transient fit` (default: coefficients fitted on CM-DARE)",
             "global_batch=samples per step, split among the workers (default: the workload's, "
             "128)",
             "per_worker_batch=samples per worker and step (instead of global_batch)"}},
           &create_fitted},
      });
  return all;
}

}  // namespace

const std::vector<PluginInfo>& throughput_models() { return registry().infos(); }

std::unique_ptr<ThroughputModel> create_throughput_model(const std::string& name,
                                                         const ThroughputParams& params) {
  return registry().at(name, params.file, params.line).create(params);
}

}  // namespace transient::perf
