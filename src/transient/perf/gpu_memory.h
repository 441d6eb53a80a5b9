// The memory bandwidth of the GPU models the catalogs name, for carrying a throughput model's
// constants from a GPU they were fitted on to one they were not (analytic_throughput_model.h).
//
// Why memory bandwidth: CM-DARE's 20 CNNs (CIFAR-10, FP32, TensorFlow 1.x) ran 2.5-2.9 times
// faster on a P100 than on a K80 where their FLOPs dominate the step, more than the 2.32 of the
// GPUs' peak FLOPS and near the 3.05 of their memory bandwidths: batch normalisation, ReLU, the
// residual and Shake-Shake additions and the optimizer's updates read and write whole tensors and
// do little arithmetic on them. docs/models.md, "Leave one GPU out", measures the rule.
//
// Figures are NVIDIA's data sheets, of one GPU as a cloud server exposes it (a K80 board holds two
// GK210 GPUs, and a server's "K80" is one of them). Stateless; thread-safe.
#pragma once

#include <optional>
#include <string>

namespace transient::perf {

// Peak memory bandwidth in GB/s (1e9 bytes per second) of one GPU of model `gpu` (as catalogs
// write it: "K80", "p100", "V100-32GB", "A100-80GB"; case ignored), or nothing for a model not in
// the table.
std::optional<double> gpu_memory_gb_per_s(const std::string& gpu);

}  // namespace transient::perf
