#include "transient/perf/fitted_throughput_model.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string_view>

#include "transient/core/bounds.h"
#include "transient/core/error.h"
#include "transient/core/structured_input.h"
#include "transient/perf/gpu_memory.h"
#include "transient/perf/internal/cluster_composition.h"

namespace transient::perf {

namespace {

// The memory bandwidth of a server's GPUs; for a GPU model gpu_memory.h does not know, that of a
// P100 of the same TFLOPS (77 GB/s per TFLOPS).
double server_memory_gb_per_s(const cloud::InstanceType& type) {
  if (!(type.total_tflops() > 0)) {
    throw InputError("instance type " + type.name +
                     " has no GPU TFLOPS; the fitted model needs GPU workers");
  }
  const auto memory = gpu_memory_gb_per_s(type.gpu);
  return memory ? *memory * type.gpus : type.total_tflops() * 732.0 / 9.526;
}

}  // namespace

const std::vector<std::pair<std::string, std::string>>& fitted_features() {
  static const std::vector<std::pair<std::string, std::string>> all = {
      {"flops_per_tflops", "FLOPs of a step / (server TFLOPS x 1e12): seconds at peak speed"},
      {"flops", "FLOPs of a step"},
      {"tflops", "the server's GPU TFLOPS"},
      {"parameters", "trainable parameters"},
      {"tensors", "parameter tensors"},
      {"tensors_per_tflops", "parameter tensors / server TFLOPS (per-layer costs on the GPU)"},
      {"gradient_bytes", "bytes of one gradient"},
      {"shake_shake", "1 for a Shake-Shake workload, else 0"},
      {"shake_flops_per_tflops", "flops_per_tflops for Shake-Shake workloads, else 0"},
      {"flops_per_memory",
       "FLOPs of a step / the server's GPU memory bandwidth in GB/s (gpu_memory.h)"},
      {"shake_flops_per_memory", "flops_per_memory for Shake-Shake workloads, else 0"},
      {"tensors_per_memory", "parameter tensors / the server's GPU memory bandwidth in GB/s"},
  };
  return all;
}

bool is_indicator_feature(const std::string& feature) {
  const std::string_view name = feature;
  return name == "shake_shake" || name == "shake_flops_per_tflops" ||
         name == "shake_flops_per_memory";
}

double fitted_feature(const std::string& feature, const Workload& w,
                      const cloud::InstanceType& type) {
  // Compared as views: a view compares lengths first, where a string against a literal measures
  // and compares every literal (a fit evaluates this some million times).
  const std::string_view name = feature;
  const bool shake = std::string_view(w.family) == "shake-shake";
  if (name == "flops_per_tflops" || name == "shake_flops_per_tflops" || name == "tflops" ||
      name == "tensors_per_tflops") {
    if (!(type.total_tflops() > 0)) {
      throw InputError("instance type " + type.name +
                       " has no GPU TFLOPS; the fitted model needs GPU workers");
    }
  }
  if (name == "flops_per_memory" || name == "shake_flops_per_memory" ||
      name == "tensors_per_memory") {
    const double memory = server_memory_gb_per_s(type);
    if (name == "tensors_per_memory") return w.tensors / memory;
    return name == "flops_per_memory" || shake ? w.flops_per_step() / memory : 0.0;
  }
  if (name == "flops_per_tflops") return w.flops_per_step() / (type.total_tflops() * 1e12);
  if (name == "shake_flops_per_tflops") {
    return shake ? w.flops_per_step() / (type.total_tflops() * 1e12) : 0.0;
  }
  if (name == "flops") return w.flops_per_step();
  if (name == "tflops") return type.total_tflops();
  if (name == "parameters") return static_cast<double>(std::max<std::int64_t>(w.parameters, 1));
  if (name == "tensors") return w.tensors;
  if (name == "tensors_per_tflops") return w.tensors / type.total_tflops();
  if (name == "gradient_bytes") return w.gradient_bytes;
  if (name == "shake_shake") return shake ? 1.0 : 0.0;
  std::string list;
  for (const auto& [known, what] : fitted_features()) list += (list.empty() ? "" : ", ") + known;
  throw InputError("unknown feature \"" + feature + "\"; accepted: " + list);
}

FittedParams FittedParams::builtin() {
  // `transient fit --data ../shared/data/cmdare -o model.json`: the form chosen by
  // leave-one-model-out cross-validation and its coefficients, rounded to 10 digits.
  FittedParams p;
  p.form = "linear";
  p.features = {"flops_per_memory", "tensors_per_memory", "gradient_bytes"};
  p.coefficients = {0.01637994494, 9.325930042e-11, 0.2556826548, 9.177723658e-10};
  p.ridge_lambda = 0.0;
  p.cv_mape_percent = 9.237185185;
  p.communication = CommunicationParams::builtin();
  p.source = "built-in fit on CM-DARE's single-worker and cluster-scaling speeds";
  return p;
}

double FittedParams::single_step_s(const Workload& workload,
                                   const cloud::InstanceType& type) const {
  const double step_s = regression_step_s(workload, type);
  return std::string_view(form) == "log-linear" ? step_s : std::max(step_s, 1e-3);
}

double FittedParams::regression_step_s(const Workload& workload,
                                       const cloud::InstanceType& type) const {
  TRANSIENT_CHECK_EQ(coefficients.size(), features.size() + 1);
  const bool log_linear = std::string_view(form) == "log-linear";
  double sum = coefficients[0];
  for (std::size_t k = 0; k < features.size(); ++k) {
    double x = fitted_feature(features[k], workload, type);
    if (log_linear && !is_indicator_feature(features[k])) x = std::log(x);
    sum += coefficients[k + 1] * x;
  }
  return log_linear ? std::exp(sum) : sum;
}

nlohmann::json FittedParams::to_json() const {
  return {{"form", form},
          {"features", features},
          {"coefficients", coefficients},
          {"ridge_lambda", ridge_lambda},
          {"cv_mape_percent", cv_mape_percent},
          {"communication", communication.to_json()},
          {"source", source}};
}

FittedParams FittedParams::from_json(const nlohmann::json& json, const std::string& where) {
  // A fit on seconds against features up to ~1e10 never needs more: larger ones only overflow.
  constexpr Bound kCoefficient{-1e12, 1e12, ""};
  FittedParams p;
  try {
    p.form = json.at("form").get<std::string>();
    p.features = json.at("features").get<std::vector<std::string>>();
    p.coefficients = json.at("coefficients").get<std::vector<double>>();
    p.ridge_lambda = json.value("ridge_lambda", 0.0);
    p.cv_mape_percent = json.value("cv_mape_percent", 0.0);
    for (const double c : p.coefficients) {
      if (!kCoefficient.contains(c)) {
        throw InputError(where + ": a fitted coefficient is " + number_text(c) +
                         "; accepted: " + kCoefficient.accepted());
      }
    }
    p.source = json_text(json, "source", where, where);
  } catch (const nlohmann::json::exception&) {
    throw InputError(where +
                     ": the fitted model needs \"form\" (linear|log-linear), "
                     "\"features\" (names) and \"coefficients\" (intercept first)");
  }
  if (p.form != "linear" && p.form != "log-linear") {
    throw InputError(where + ": fitted form \"" + p.form + "\"; accepted: linear, log-linear");
  }
  if (p.coefficients.size() != p.features.size() + 1) {
    throw InputError(where + ": the fitted model has " + std::to_string(p.features.size()) +
                     " features and needs " + std::to_string(p.features.size() + 1) +
                     " coefficients (intercept first)");
  }
  for (const auto& feature : p.features) {
    bool known = false;
    for (const auto& [name, what] : fitted_features()) known |= name == feature;
    if (!known) fitted_feature(feature, Workload{}, cloud::InstanceType{});  // throws the list
  }
  if (json.contains("communication")) {
    p.communication = CommunicationParams::from_json(json.at("communication"), where);
  }
  return p;
}

FittedThroughputModel::FittedThroughputModel(Workload workload, FittedParams params)
    : workload_(std::move(workload)), params_(std::move(params)), at_fitted_batch_(workload_) {
  at_fitted_batch_.batch_per_worker = kCmdareBatch;
}

std::string FittedThroughputModel::describe() const {
  std::ostringstream out;
  out << "fitted: " << workload_.name << ", " << params_.form << " regression on";
  for (const auto& feature : params_.features) out << " " << feature;
  if (params_.ridge_lambda > 0) out << " (ridge " << params_.ridge_lambda << ")";
  out << ", constants from " << params_.source;
  return out.str();
}

Prediction FittedThroughputModel::predict(const ClusterShape& cluster) const {
  return internal::compose_cluster(cluster, workload_, worker_times(cluster),
                                   params_.communication);
}

std::vector<internal::WorkerTime> FittedThroughputModel::worker_times(
    const ClusterShape& cluster) const {
  std::vector<internal::WorkerTime> times;
  for (const auto& group : cluster.workers) {
    // The regression predicts a whole async-ps step; the worker's own transfer, as the analytic
    // model estimates it, is split off so that an all-reduce cluster pays its own instead.
    // One worker per GPU (internal/cluster_composition.h).
    // The regression was fitted on steps of CM-DARE's batch: a workload of another batch is
    // predicted there and its compute scaled to its own (AnalyticThroughputModel::compute_s).
    const cloud::InstanceType gpu = internal::one_gpu(group.type);
    const double step = params_.single_step_s(at_fitted_batch_, gpu);
    const double transfer = std::min(
        0.5 * step,
        internal::worker_transfer_s(workload_, group.type.network_gbps, params_.communication));
    internal::WorkerTime time;
    time.compute_s =
        internal::at_workload_batch(step - transfer, workload_, gpu, params_.communication);
    if (cluster.architecture == Architecture::async_ps) time.ps_transfer_s = transfer;
    times.push_back(time);
  }
  return times;
}

}  // namespace transient::perf
