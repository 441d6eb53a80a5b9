#include "transient/perf/analytic_throughput_model.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <sstream>

#include "transient/core/bounds.h"
#include "transient/core/error.h"
#include "transient/core/structured_input.h"
#include "transient/core/text.h"
#include "transient/perf/gpu_memory.h"
#include "transient/perf/internal/cluster_composition.h"

namespace transient::perf {
AnalyticParams AnalyticParams::builtin() {
  // `transient fit --data ../shared/data/cmdare -o model.json` (CM-DARE, ICDCS 2020: 20 CNNs on
  // K80 and P100, one worker; 4 CNNs with 1-8 workers and one parameter server), rounded to 10
  // digits. throughput_fitting_test.cc refits and compares.
  AnalyticParams p;
  p.efficiency = {{"generic", 0.7681113013},        {"resnet", 0.7622880719},
                  {"resnet@K80", 0.5602713957},     {"resnet@P100", 1.037145764},
                  {"shake-shake", 0.7739790152},    {"shake-shake@K80", 0.592532797},
                  {"shake-shake@P100", 1.010987947}};
  p.per_tensor_s = {
      {"K80", 0.0009750313598}, {"P100", 0.0004372405085}, {"generic", 0.0006529343057}};
  p.fitted_gpu_tflops = {{"K80", 4.113}, {"P100", 9.526}};
  p.step_overhead_s = 0.01220063313;
  p.communication = CommunicationParams::builtin();
  p.source = "built-in fit on CM-DARE's single-worker and cluster-scaling speeds";
  return p;
}

double AnalyticParams::efficiency_for(const std::string& family, const std::string& gpu) const {
  const std::string upper_gpu = uppercase(gpu);
  auto found = efficiency.find(family + "@" + upper_gpu);
  if (found == efficiency.end()) found = efficiency.find(family);
  if (found == efficiency.end()) found = efficiency.find("generic");
  TRANSIENT_CHECK(found != efficiency.end());
  return found->second;
}

double AnalyticParams::per_tensor_s_for(const std::string& gpu) const {
  const std::string upper_gpu = uppercase(gpu);
  auto found = per_tensor_s.find(upper_gpu);
  if (found == per_tensor_s.end()) found = per_tensor_s.find("generic");
  return found == per_tensor_s.end() ? 0.0 : found->second;
}

std::string AnalyticParams::calibrated_gpu(const std::string& gpu, double gpu_tflops) const {
  const std::string upper_gpu = uppercase(gpu);
  if (fitted_gpu_tflops.count(upper_gpu)) return upper_gpu;
  std::string nearest;
  double best = std::numeric_limits<double>::infinity();
  for (const auto& [name, tflops] : fitted_gpu_tflops) {
    const double distance = std::abs(std::log(gpu_tflops / tflops));
    if (gpu_tflops > 0 && distance < best) {
      best = distance;
      nearest = name;
    }
  }
  return nearest;
}

double AnalyticParams::gpu_time_factor(const std::string& gpu, double gpu_tflops,
                                       const std::string& fitted_gpu) const {
  const auto fitted_tflops = fitted_gpu_tflops.find(fitted_gpu);
  TRANSIENT_CHECK(fitted_tflops != fitted_gpu_tflops.end());
  const auto memory = gpu_memory_gb_per_s(gpu);
  const auto fitted_memory = gpu_memory_gb_per_s(fitted_gpu);
  if (memory && fitted_memory) return *fitted_memory / *memory;
  return fitted_tflops->second / gpu_tflops;
}

nlohmann::json AnalyticParams::to_json() const {
  nlohmann::json out = {{"efficiency", efficiency},
                        {"per_tensor_s", per_tensor_s},
                        {"fitted_gpu_tflops", fitted_gpu_tflops},
                        {"step_overhead_s", step_overhead_s},
                        {"communication", communication.to_json()},
                        {"source", source}};
  // No cost per tensor is written as no per_tensor_s: from_json refuses an empty one.
  if (per_tensor_s.empty()) out.erase("per_tensor_s");
  return out;
}

AnalyticParams AnalyticParams::from_json(const nlohmann::json& json, const std::string& where) {
  // A marginal fraction of peak FLOPS (workload.h's count): a fit may pass 1, as cuDNN's Winograd
  // convolutions do fewer multiplications than the direct count (CM-DARE's fits: 0.56 to 1.04).
  // A thousandth is already far below any GPU's; 1e-300 made a step of 5e298 s.
  constexpr Bound kEfficiency{1e-3, 100.0, "of peak FLOPS"};
  // A step's fixed overhead or one tensor's cost: a minute is beyond any step.
  constexpr Bound kSeconds{0.0, 60.0, "s"};
  if (!json.is_object() || !json.contains("efficiency") || !json.at("efficiency").is_object()) {
    throw InputError(where +
                     ": the analytic model needs an object with \"efficiency\" "
                     "(family -> fraction of peak FLOPS)");
  }
  AnalyticParams p;
  for (const auto& item : json.at("efficiency").items()) {
    const auto& value = item.value();
    if (!value.is_number() || !kEfficiency.contains(value.get<double>())) {
      throw InputError(where + ": efficiency of \"" + item.key() + "\" is " + value.dump() +
                       "; accepted: " + kEfficiency.accepted());
    }
    p.efficiency[item.key()] = value.get<double>();
  }
  if (!p.efficiency.count("generic")) {
    throw InputError(where + ": the analytic model's \"efficiency\" needs a \"generic\" entry");
  }
  if (json.contains("step_overhead_s")) {
    const auto& value = json.at("step_overhead_s");
    if (!value.is_number() || !kSeconds.contains(value.get<double>())) {
      throw InputError(where + ": \"step_overhead_s\" is " + value.dump() +
                       "; accepted: " + kSeconds.accepted());
    }
    p.step_overhead_s = value.get<double>();
  }
  if (json.contains("per_tensor_s")) {
    if (!json.at("per_tensor_s").is_object()) {
      throw InputError(where + ": \"per_tensor_s\" must be an object (GPU -> seconds)");
    }
    // `transient fit` writes one for each GPU fitted and "generic": an empty one is no fit's.
    if (json.at("per_tensor_s").empty()) {
      throw InputError(where +
                       ": \"per_tensor_s\" is empty; accepted: seconds per tensor for each GPU "
                       "fitted and \"generic\" (as `transient fit` writes them), e.g. "
                       "{\"K80\": 0.001, \"generic\": 0.001}, or no per_tensor_s (no cost per "
                       "tensor)");
    }
    for (const auto& item : json.at("per_tensor_s").items()) {
      if (!item.value().is_number() || !kSeconds.contains(item.value().get<double>())) {
        throw InputError(where + ": per_tensor_s of \"" + item.key() + "\" is " +
                         item.value().dump() + "; accepted: " + kSeconds.accepted());
      }
      p.per_tensor_s[item.key()] = item.value().get<double>();
    }
  }
  if (!json.contains("fitted_gpu_tflops")) {
    // Files written before the key existed were fitted on CM-DARE's two GPUs.
    p.fitted_gpu_tflops = {{"K80", 4.113}, {"P100", 9.526}};
  } else {
    if (!json.at("fitted_gpu_tflops").is_object()) {
      throw InputError(where + ": \"fitted_gpu_tflops\" must be an object (GPU -> TFLOPS)");
    }
    // Constants fitted on no GPU: every GPU would take them unscaled, where a file without the
    // key takes CM-DARE's K80 and P100.
    if (json.at("fitted_gpu_tflops").empty()) {
      throw InputError(where +
                       ": \"fitted_gpu_tflops\" is empty; accepted: the GPUs the constants were "
                       "fitted on with their TFLOPS (as `transient fit` writes them), e.g. "
                       "{\"K80\": 4.113}, or no fitted_gpu_tflops (CM-DARE's K80 and P100)");
    }
    for (const auto& item : json.at("fitted_gpu_tflops").items()) {
      if (!item.value().is_number() || !(item.value().get<double>() > 0) ||
          !bounds::kGpuTflops.contains(item.value().get<double>())) {
        throw InputError(where + ": fitted_gpu_tflops of \"" + item.key() + "\" is " +
                         item.value().dump() + "; accepted: " + bounds::kGpuTflops.accepted() +
                         ", not 0");
      }
      p.fitted_gpu_tflops[item.key()] = item.value().get<double>();
    }
  }
  if (json.contains("communication")) {
    p.communication = CommunicationParams::from_json(json.at("communication"), where);
  }
  p.source = json_text(json, "source", where, where);
  return p;
}

AnalyticThroughputModel::AnalyticThroughputModel(Workload workload, AnalyticParams params)
    : workload_(std::move(workload)), params_(std::move(params)) {
  TRANSIENT_CHECK(workload_.flops_per_step() > 0);
}

std::string AnalyticThroughputModel::describe() const {
  std::ostringstream out;
  out << "analytic: " << workload_.name << " (" << workload_.family << "), efficiency";
  const std::string prefix = workload_.family + "@";
  for (const auto& [key, value] : params_.efficiency) {
    if (key.rfind(prefix, 0) == 0) out << " " << key.substr(prefix.size()) << " " << value << ",";
  }
  out << " of peak FLOPS (other GPUs: those of the fitted GPU nearest in TFLOPS, scaled by memory "
         "bandwidth); constants: "
      << params_.source;
  return out.str();
}

double AnalyticThroughputModel::compute_s(const cloud::InstanceType& type) const {
  if (workload_.measured && !type.gpu.empty() &&
      same_ignoring_case(workload_.measured->device, type.gpu)) {
    return workload_.measured->step_time_s;
  }
  if (!(type.gpu_tflops > 0) || type.gpus < 1) {
    throw InputError("instance type " + type.name +
                     " has no GPU TFLOPS; the analytic model needs GPU workers");
  }
  // One worker per GPU: a worker computes on one of the server's GPUs. The constants describe
  // steps of CM-DARE's batch: a workload of another batch (a profile taken at 8 samples) is
  // computed there and scaled to its own, as a job's batch is (compose_cluster). Computed at its
  // own batch, the per-tensor and fixed seconds of the formula were scaled as if per sample: a
  // ResNet-32 profiled at 8 samples predicted 369 samples/s on 4 K80s at 128 a worker, where the
  // same network profiled at 128 predicted 2,450.
  const std::string gpu = params_.calibrated_gpu(type.gpu, type.gpu_tflops);
  const double efficiency = params_.efficiency_for(workload_.family, gpu);
  const double per_tensor_s = params_.per_tensor_s_for(gpu);
  const double flops = workload_.flops_per_sample() * kCmdareBatch;
  double step_s = 0;
  if (gpu.empty() || gpu == uppercase(type.gpu)) {
    step_s = flops / (type.gpu_tflops * 1e12 * efficiency) + workload_.tensors * per_tensor_s +
             params_.step_overhead_s;
  } else {
    // Another GPU: the GPU-side time (FLOPs and per-tensor work) of the fitted GPU, scaled.
    const double fitted_s = flops / (params_.fitted_gpu_tflops.at(gpu) * 1e12 * efficiency) +
                            workload_.tensors * per_tensor_s;
    step_s = fitted_s * params_.gpu_time_factor(type.gpu, type.gpu_tflops, gpu) +
             params_.step_overhead_s;
  }
  return internal::at_workload_batch(step_s, workload_, type, params_.communication);
}

double AnalyticThroughputModel::worker_steps_per_s(const cloud::InstanceType& type,
                                                   Architecture architecture) const {
  const cloud::InstanceType gpu = internal::one_gpu(type);
  double step = internal::worker_step_s(workload_, gpu, compute_s(gpu),
                                        workload_.batch.step_samples(1, workload_.batch_per_worker),
                                        params_.communication);
  if (architecture == Architecture::async_ps) {
    step += internal::worker_transfer_s(workload_, type.network_gbps, params_.communication);
  }
  return 1.0 / step;
}

double AnalyticThroughputModel::server_cap_steps_per_s(int servers) const {
  return 1.0 / internal::server_step_s(workload_, std::max(1, servers), params_.communication);
}

Prediction AnalyticThroughputModel::predict(const ClusterShape& cluster) const {
  return internal::compose_cluster(cluster, workload_, worker_times(cluster),
                                   params_.communication);
}

std::vector<internal::WorkerTime> AnalyticThroughputModel::worker_times(
    const ClusterShape& cluster) const {
  std::vector<internal::WorkerTime> times;
  for (const auto& group : cluster.workers) {
    internal::WorkerTime time;
    time.compute_s = compute_s(internal::one_gpu(group.type));
    if (cluster.architecture == Architecture::async_ps) {
      time.ps_transfer_s =
          internal::worker_transfer_s(workload_, group.type.network_gbps, params_.communication);
    }
    times.push_back(time);
  }
  return times;
}

}  // namespace transient::perf
