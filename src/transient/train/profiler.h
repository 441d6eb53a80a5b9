// `transient profile`: what one of our models (or a TorchScript file) costs per sample and per
// step on this machine, as the performance models (perf/workload.h) want it.
//
// FLOP convention (one for `profile` and the built-in workloads, perf/workload.h): 2 FLOPs per
// multiply-add of the operators that multiply by weights: convolutions (2 * output elements *
// Cin/groups * kernel size; transposed: 2 * input elements * Cout/groups * kernel size), linear
// layers and matrix products (mm, addmm, bmm, baddbmm, matmul). Bias additions, normalisation,
// activations, pooling and element-wise additions are listed but not counted (a few percent of
// the total, memory-bound). Backward = 2 x forward (the gradients of the input and of the weights
// each cost one forward's multiply-adds).
//
// What is counted is what runs: one forward pass over two samples of the input shape, in eval
// mode without gradients, observed operator by operator (ATen's RecordFunction), so that layers
// called functionally in forward() (F.max_pool2d, F.conv2d, x @ w) count as modules do. A file's
// table lists its top-level operators in the order they ran; our libtorch models' table lists
// their layers by name, with output sizes propagated by formula, and the two counts must agree.
//
// This header is torch-free, so that the CLI compiles without libtorch's headers.
// Failure: an unknown model name, a file that is not a readable TorchScript module, or a bad
// option throws InputError naming it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace transient::train {

struct ProfileOptions {
  // What is profiled.
  std::string model = "cnn";  // a name from model_catalog(), or the path of a TorchScript file
  std::int64_t batch = 64;    // samples per step, >= 1
  std::int64_t channels = 1;  // input shape C x H x W
  std::int64_t height = 28;
  std::int64_t width = 28;

  // How it is timed.
  int iterations = 20;    // timed steps, >= 1
  int warmup = 3;         // untimed steps before them
  int threads = 0;        // intra-op threads; 0 = libtorch's default (all cores)
  double lr = 0.01;       // SGD learning rate of the timed optimizer steps
  double momentum = 0.9;  // SGD momentum

  // Where the time goes: "" = nowhere; else after the timed steps as many more run under
  // PyTorch's profiler (Kineto, the CPU's operators with their inputs' shapes), and their
  // Chrome trace is written to this file (atomically, as every output), each step in a
  // "transient::step" range holding "transient::forward_backward" and
  // "transient::optimizer_step". Open it in Perfetto or chrome://tracing.
  std::string trace_path;
};

// One layer of the model, in forward order.
struct ProfiledLayer {
  std::string name;                        // module path, e.g. "stage2_block1.conv1"
  std::string type;                        // "Conv2d", "Linear", "BatchNorm2d", ...
  std::vector<std::int64_t> output_shape;  // per sample (C, H, W) or (features); empty = unknown
  double forward_flops = 0.0;              // per sample
  bool counted = false;                    // whether forward_flops counts toward the totals
};

struct ModelProfile {
  std::string name;   // the model's name, or the file's stem
  std::string model;  // what `transient train --model` takes: the name, or the file's absolute path
  std::string family;  // "resnet" for the ResNets, "generic" otherwise
  std::vector<ProfiledLayer> layers;
  double forward_flops_per_sample = 0.0;
  double backward_flops_per_sample = 0.0;  // 2 x forward
  std::int64_t parameters = 0;             // trainable parameters
  int tensors = 0;                         // trainable parameter tensors
  double gradient_bytes = 0.0;             // 4 x parameters (float32)
  double average_tensor_bytes = 0.0;
  double largest_tensor_bytes = 0.0;

  // Measured on this machine, means over ProfileOptions::iterations.
  std::string device;               // the CPU's model name from /proc/cpuinfo
  int threads = 0;                  // intra-op threads used
  std::int64_t batch = 0;           // samples per step
  double forward_backward_s = 0.0;  // forward, loss and backward of one step
  double optimizer_step_s = 0.0;    // one SGD step (with momentum)
  double step_time_s() const { return forward_backward_s + optimizer_step_s; }
};

// Builds or loads the model, counts it and times it. Throws InputError as above.
ModelProfile profile_model(const ProfileOptions& options);

// The per-layer table and the totals, as `transient profile` prints them.
std::string format_profile(const ModelProfile& profile);

// This machine's CPU model name ("model name" in /proc/cpuinfo), or "cpu" if unknown.
std::string cpu_model_name();

// The FLOPs of one sample through a Conv2d / Linear layer, by the convention above.
double conv2d_flops(std::int64_t in_channels, std::int64_t out_channels, std::int64_t groups,
                    std::int64_t kernel_h, std::int64_t kernel_w, std::int64_t out_h,
                    std::int64_t out_w);
double linear_flops(std::int64_t in_features, std::int64_t out_features);

}  // namespace transient::train
