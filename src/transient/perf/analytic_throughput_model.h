// The `analytic` throughput model: a worker's compute time from its GPU's TFLOPS and a fitted
// efficiency for the workload's family, plus the communication of the cluster's architecture
// (internal/cluster_composition.h: asynchronous parameter servers with their bandwidth cap, or
// synchronous hierarchical all-reduce with the job's batch split by speed; one worker per GPU).
// Every prediction names its bottleneck: "compute", "parameter server" or "network".
//
// A worker's step of the workload's batch_per_worker samples on one GPU G:
// compute_s = flops_per_step / (GPU TFLOPS x 1e12 x efficiency[family@G])
//             + tensors x per_tensor_s[G] + step_overhead_s,
// where G is the GPU itself if the constants were fitted on it. Another GPU takes the constants of
// the fitted GPU G nearest in TFLOPS, and the GPU-side part (FLOPs and per-tensor terms, at G's
// TFLOPS) is multiplied by gpu_time_factor(): G's memory bandwidth over the GPU's (gpu_memory.h),
// or G's TFLOPS over the GPU's where either bandwidth is unknown. A measured step on the worker's
// GPU model, if the workload carries one, is used instead of all of it.
// Its step for the job's batch follows batch_scaling.h.
//
// The constants come from AnalyticParams::builtin() (fitted on CM-DARE's measurements) or from a
// model file written by `transient fit`. Immutable after construction; safe to share.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "transient/perf/communication_params.h"
#include "transient/perf/throughput_model.h"
#include "transient/perf/workload.h"

namespace transient::perf {

namespace internal {
struct WorkerTime;
}  // namespace internal

struct AnalyticParams {
  // Fraction of peak FP32 FLOPS achieved, relative to the workload's FLOP count convention
  // (workload.h): per family and GPU model where measured ("resnet@K80"), per family
  // ("shake-shake": the geometric mean over the GPUs measured), and "generic" for the rest.
  std::map<std::string, double> efficiency;
  double step_overhead_s = 0.0;  // fixed seconds per worker step (framework, input)
  // Seconds per parameter tensor per step on a GPU model ("K80"), "generic" for other GPUs: the
  // per-layer cost (kernel launches, small operations) that FLOPs do not capture.
  std::map<std::string, double> per_tensor_s;
  // The GPU models the constants were fitted on, with their TFLOPS ("K80": 4.113). A worker with
  // another GPU takes the constants of the fitted GPU nearest in TFLOPS (by ratio): a V100 those
  // of a P100, not an average that would rank it below one, scaled by gpu_time_factor().
  std::map<std::string, double> fitted_gpu_tflops;
  CommunicationParams communication;  // links, servers, contention
  std::string source;                 // what the constants were fitted on, one line

  // The constants fitted on CM-DARE's single-worker and cluster-scaling measurements by
  // `transient fit --data ../shared/data/cmdare` (a test refits them and compares).
  static AnalyticParams builtin();
  // The efficiency for `family` on `gpu`: "family@GPU" (GPU in upper case), else "family",
  // else "generic".
  double efficiency_for(const std::string& family, const std::string& gpu = "") const;
  // per_tensor_s for `gpu`, else "generic", else 0.
  double per_tensor_s_for(const std::string& gpu) const;
  // The fitted GPU whose constants a GPU of `gpu_tflops` TFLOPS called `gpu` uses: itself if
  // fitted, else the nearest in TFLOPS, else "" (none fitted: family and generic constants).
  std::string calibrated_gpu(const std::string& gpu, double gpu_tflops) const;
  // How much longer the GPU-side work takes on `gpu` (of `gpu_tflops`) than on `fitted_gpu`, a key
  // of fitted_gpu_tflops: the ratio of their memory bandwidths, else of their TFLOPS.
  // REQUIRES: fitted_gpu is in fitted_gpu_tflops; gpu_tflops > 0.
  double gpu_time_factor(const std::string& gpu, double gpu_tflops,
                         const std::string& fitted_gpu) const;

  nlohmann::json to_json() const;
  // REQUIRES: the object written by to_json(); throws InputError naming `where` otherwise.
  static AnalyticParams from_json(const nlohmann::json& json, const std::string& where);
};

class AnalyticThroughputModel : public ThroughputModel {
 public:
  AnalyticThroughputModel(Workload workload, AnalyticParams params);

  std::string name() const override { return "analytic"; }
  std::string describe() const override;
  Prediction predict(const ClusterShape& cluster) const override;
  // What predict() composes into the cluster's speed: a step time per worker group
  // (internal/cluster_composition.h), for a caller that composes the same workers under many
  // servers' constants (the fit's grid search, throughput_fitting.cc).
  std::vector<internal::WorkerTime> worker_times(const ClusterShape& cluster) const;

  // Seconds of one step of batch_per_worker samples (no communication) on one GPU of `type`.
  // Throws InputError for a type without GPU TFLOPS.
  double compute_s(const cloud::InstanceType& type) const;

  // The linear pieces of a prediction, for the planner's mixed-integer programme. One worker (one
  // GPU) of `type` alone, on the job's batch, runs at worker_steps_per_s(type, architecture)
  // (async-ps: compute plus its own transfers; all-reduce: compute only); `servers` parameter
  // servers cap an async-ps cluster at server_cap_steps_per_s(servers). predict() never exceeds sum
  // over workers of the first nor (async-ps) the second: X <= sum_t n_t x worker_steps_per_s(t) and
  // X <= cap are valid linear upper bounds, tight away from the knee (within 2^(-1/p) of the smooth
  // minimum at it).
  double worker_steps_per_s(const cloud::InstanceType& type, Architecture architecture) const;
  double server_cap_steps_per_s(int servers) const;

  const Workload& workload() const { return workload_; }
  const AnalyticParams& params() const { return params_; }

 private:
  Workload workload_;
  AnalyticParams params_;
};

}  // namespace transient::perf
