// The device a worker trains on (the CPU or one of the host's GPUs), and what moves its tensors:
// autocast for --precision, and copies to host memory that do not wait for the GPU (pinned
// memory), which a checkpoint's snapshot and the state sent to a joiner go through.
//
// Nothing here waits for a GPU unless it says so; on the CPU every call is a plain copy or
// nothing. Not thread-safe: each object is its thread's (autocast's state is the thread's too).
#pragma once

#include <torch/torch.h>

#include <vector>

#include "transient/train/option_names.h"

namespace transient::train {

// The device for --device (`wanted`) and --gpu (among the host's GPUs, modulo their number).
// Throws InputError for --device cuda on a host without a usable GPU, saying why.
torch::Device training_device(Device wanted, int gpu);

// Waits for the GPU's queued work (host copies among it); nothing on the CPU.
void synchronize(const torch::Device& device);

// A copy of `tensor` in host memory (a new tensor also when it is there already). From a GPU it
// goes to pinned memory without waiting: synchronise the device before reading it.
torch::Tensor host_copy(const torch::Tensor& tensor);

// The job's --precision for what runs in its scope (the forward pass and the loss): bf16 (fp16)
// turns on autocast in bfloat16 (float16) for the model's device (the CPU or CUDA), which runs
// matrix products and convolutions in that type and keeps reductions, softmax and the losses in
// fp32, as torch.autocast does; the parameters stay fp32 and backward gives fp32 gradients. fp32
// leaves everything as it is. Autocast's state is the thread's, and its cache of cast weights is
// cleared when the scope ends (the weights change at every step).
class AutocastScope {
 public:
  AutocastScope(Precision precision, torch::Device device);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  bool enabled_;
  at::DeviceType type_;
  bool was_enabled_ = false;
  at::ScalarType was_dtype_ = at::kBFloat16;
};

// Host copies of a GPU's tensors for checkpoints, in one pinned buffer reused from snapshot to
// snapshot once the writer no longer holds the last snapshot's tensors (views into it). Pinning
// memory (cudaHostAlloc) costs more than the copies: a ResNet-50's state (parameters and
// momentum, 200 MB) pinned tensor by tensor stalled the step 110-150 ms, and far more while the
// writer still held the previous one (docs/benchmarks.md, "GPUs").
class SnapshotArena {
 public:
  // Views into the buffer holding `tensors`, each filled by a copy that does not wait:
  // synchronise the device before reading them.
  std::vector<torch::Tensor> copy(const std::vector<torch::Tensor>& tensors);

 private:
  torch::Tensor buffer_;  // uint8, pinned
};

}  // namespace transient::train
