// A training workload as the performance models see it: how much arithmetic one sample costs and
// how much data a step moves between workers and parameter servers. Built-in workloads carry the
// features CM-DARE published for the CNNs it measured; others come from a profile file (JSON),
// written by hand or by `transient profile`.
//
// Profile file (every field but `name` and the FLOP counts optional; unknown keys are errors):
//   {
//     "name": "my-resnet",                 // how messages and reports call it
//     "family": "resnet",                  // resnet | shake-shake | generic: which fitted
//                                          //   compute efficiency applies (default generic)
//     "batch_per_worker": 128,             // samples per worker step (default 128)
//     "forward_flops_per_sample": 1.3e7,   // FLOPs of one sample's forward pass, 1 .. 1e18
//     "backward_flops_per_sample": 2.6e7,  // of its backward pass (default 2 x forward)
//     "parameters": 1857722,               // trainable parameters
//     "gradient_bytes": 7430888,           // bytes of one full gradient (default 4 x parameters)
//     "tensors": 104,                      // parameter tensors (one message each to a server)
//     "average_tensor_bytes": 71452,       // default gradient_bytes / tensors
//     "largest_tensor_bytes": 589824,      // 0 = unknown
//     "measured": {"device": "K80", "step_time_s": 0.21}   // optional: one worker's step
//   }
// Every number is bounded (core/bounds.h: FLOPs 1 .. 1e18, batch 1 .. 1e6, bytes up to 1e15,
// tensors up to 1e7, step time 1e-6 s .. 30 days); every bad value is an InputError naming the
// file and the line of the key.
//
// FLOP convention: the built-in workloads carry CM-DARE's "Model FLOPs" (TensorFlow's profiler
// count for a step of 128 samples) divided by 128 as the forward count, and twice that as the
// backward count. That profiler counts far fewer operations than an analytic layer-by-layer count
// would, so efficiencies fitted on CM-DARE's data are relative to its convention; a profile from
// another counter should be calibrated with its own measurements (`transient fit`).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "transient/perf/job_batch.h"

namespace transient::perf {

// One worker's measured step time on a named device (GPU model, e.g. "K80", or "cpu").
struct MeasuredStep {
  std::string device;        // compared case-insensitively with InstanceType::gpu
  double step_time_s = 0.0;  // seconds per step of batch_per_worker samples, > 0
};

struct Workload {
  std::string name;                // e.g. "resnet-32"
  std::string family = "generic";  // "resnet", "shake-shake" or "generic"
  int batch_per_worker = 128;      // samples per worker step of the figures below
  JobBatch batch;  // the job's batch (not in profiles; set by --global-batch / --per-worker-batch)
  double forward_flops_per_sample = 0.0;   // > 0
  double backward_flops_per_sample = 0.0;  // > 0
  std::int64_t parameters = 0;             // trainable parameters
  double gradient_bytes = 0.0;             // bytes of one gradient (and of the parameters)
  int tensors = 0;                         // parameter tensors
  double average_tensor_bytes = 0.0;       // gradient_bytes / tensors as measured
  double largest_tensor_bytes = 0.0;       // 0 = unknown
  std::optional<MeasuredStep> measured;    // a measured step, if any
  std::string source;                      // where the figures come from, one line

  // FLOPs of one worker step: (forward + backward) x batch_per_worker.
  double flops_per_step() const;
  double flops_per_sample() const { return forward_flops_per_sample + backward_flops_per_sample; }
};

// The families a profile may name, for messages: "resnet", "shake-shake", "generic".
const std::vector<std::string>& workload_families();

// The built-in workloads (CM-DARE's 20 CNNs), in a stable order.
const std::vector<Workload>& builtin_workloads();

// The built-in workload called `name` (case, spaces, dashes and underscores ignored; CM-DARE's
// own names such as "Res32", "shakebig" or "shake small 32d" are accepted too). Throws
// InputError listing the built-in names otherwise.
const Workload& find_workload(const std::string& name);
// The same, or nullptr when there is none.
const Workload* find_workload_or_null(const std::string& name);

// Reads and validates a profile file (format above). Throws InputError("file:line: ...").
Workload load_workload_profile(const std::string& path);
// The same from JSON text; `name` stands for the path in messages.
Workload parse_workload_profile(const std::string& text, const std::string& name);

// The profile file form of `workload` (parse_workload_profile reads it back).
nlohmann::json to_json(const Workload& workload);

}  // namespace transient::perf
