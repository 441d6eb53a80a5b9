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
//     "forward_flops_per_sample": 5.5e8,   // FLOPs of one sample's forward pass, 1 .. 1e18
//     "backward_flops_per_sample": 1.1e9,  // of its backward pass (default 2 x forward)
//     "parameters": 1857722,               // trainable parameters
//     "gradient_bytes": 7430888,           // bytes of one full gradient (default 4 x parameters)
//     "tensors": 104,                      // parameter tensors (one message each to a server)
//     "average_tensor_bytes": 71452,       // default gradient_bytes / tensors
//     "largest_tensor_bytes": 589824,      // 0 = unknown
//     "measured": {"device": "K80", "step_time_s": 0.21},  // optional: one worker's step
//     "model": "/home/me/net.pt"           // what `transient train --model` takes to train it:
//                                          //   a built-in model or a TorchScript file (written
//                                          //   by `transient profile`; `plan --emit-train-flags`
//                                          //   passes it on)
//   }
// Every number is bounded (core/bounds.h: FLOPs 1 .. 1e18, batch 1 .. 1e6, bytes up to 1e15,
// tensors up to 1e7, step time 1e-6 s .. 30 days); every bad value is an InputError naming the
// file and the line of the key.
//
// FLOP convention, one for every workload: 2 FLOPs per multiply-add of the convolutions, linear
// layers and matrix products, as `transient profile` counts what a model runs (train/profiler.h);
// backward = 2 x forward. CM-DARE's published "Model FLOPs" are another count (TensorFlow's
// profiler: about 7 per parameter and sample, whatever the spatial size), so the built-in
// workloads carry it times kFlopsPerCmdareFlop: our count of the networks CM-DARE measured,
// rebuilt (ResNet-32 of widths 32-64-128, Shake-Shake-26 2x32d and 2x96d, parameters within
// 0.2% of CM-DARE's), over theirs. A profile of the same network predicts what the built-in one
// does (tests/train/profiler_test.cc).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "transient/perf/job_batch.h"

namespace transient::perf {

// Our FLOPs (see above) per FLOP of CM-DARE's count: 42.54 for its ResNet-32, 42.22 and 42.29
// for its small and big Shake-Shakes, the mean of the three.
inline constexpr double kFlopsPerCmdareFlop = 42.35;

// Samples per worker step of CM-DARE's measurements, and so of the steps the throughput models'
// constants describe: a workload of another batch_per_worker is predicted at this batch and
// scaled to its own (batch_scaling.h), unless its step was measured on the GPU asked about.
inline constexpr int kCmdareBatch = 128;

// One worker's measured step time on a named device (GPU model, e.g. "K80", or a CPU's model).
struct MeasuredStep {
  std::string device;        // compared case-insensitively with InstanceType::gpu
  double step_time_s = 0.0;  // seconds per step of batch_per_worker samples, > 0
  int threads = 0;           // a CPU's step: the intra-op threads it ran with; 0: not known
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
  // What `transient train --model` takes to train this workload: a built-in model of the
  // trainer or a TorchScript file's absolute path; empty when none is known (the built-in
  // workloads are CM-DARE's networks, which the trainer does not have).
  std::string model;

  // FLOPs of one worker step: (forward + backward) x batch_per_worker.
  double flops_per_step() const;
  double flops_per_sample() const { return forward_flops_per_sample + backward_flops_per_sample; }
};

// The families a profile may name, for messages: "resnet", "shake-shake", "generic".
const std::vector<std::string>& workload_families();

// The built-in workloads (CM-DARE's 20 CNNs), in a stable order.
const std::vector<Workload>& builtin_workloads();

// The key a workload's name is matched by: its letters and digits in lower case ("ResNet-32",
// "resnet32" -> "resnet32"; "ShakeShake-Small" -> "shakeshakesmall").
std::string workload_key(const std::string& name);

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
