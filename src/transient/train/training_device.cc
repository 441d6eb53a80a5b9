#include "transient/train/training_device.h"

#include <ATen/autocast_mode.h>
#include <torch/cuda.h>

#include <algorithm>

#include "transient/train/cuda_support.h"

namespace transient::train {

torch::Device training_device(Device wanted, int gpu) {
  if (wanted == Device::kCpu) return torch::kCPU;
  const int gpus = wanted == Device::kAuto ? usable_gpus() : require_usable_gpus();
  if (gpus == 0) return torch::kCPU;
  return {torch::kCUDA, static_cast<c10::DeviceIndex>(gpu % gpus)};
}

void synchronize(const torch::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
}

torch::Tensor host_copy(const torch::Tensor& tensor) {
  if (tensor.is_cpu()) return tensor.detach().clone();
  auto host =
      torch::empty(tensor.sizes(), tensor.options().device(torch::kCPU).pinned_memory(true));
  host.copy_(tensor.detach(), /*non_blocking=*/true);
  return host;
}

AutocastScope::AutocastScope(Precision precision, torch::Device device)
    : enabled_(precision != Precision::kFp32), type_(device.type()) {
  if (!enabled_) return;
  was_enabled_ = at::autocast::is_autocast_enabled(type_);
  was_dtype_ = at::autocast::get_autocast_dtype(type_);
  at::autocast::set_autocast_enabled(type_, true);
  at::autocast::set_autocast_dtype(type_,
                                   precision == Precision::kFp16 ? at::kHalf : at::kBFloat16);
  at::autocast::increment_nesting();
}

AutocastScope::~AutocastScope() {
  if (!enabled_) return;
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  at::autocast::set_autocast_enabled(type_, was_enabled_);
  at::autocast::set_autocast_dtype(type_, was_dtype_);
}

std::vector<torch::Tensor> SnapshotArena::copy(const std::vector<torch::Tensor>& tensors) {
  constexpr std::int64_t kAlign = 64;  // every view starts aligned for any element type
  std::vector<std::int64_t> offsets;
  std::int64_t bytes = 0;
  for (const auto& tensor : tensors) {
    offsets.push_back(bytes);
    bytes += (static_cast<std::int64_t>(tensor.nbytes()) + kAlign - 1) / kAlign * kAlign;
  }
  if (!buffer_.defined() || buffer_.numel() < bytes || buffer_.storage().use_count() > 1) {
    buffer_ = torch::empty({std::max<std::int64_t>(bytes, 1)},
                           torch::TensorOptions(torch::kUInt8).pinned_memory(true));
  }
  std::vector<torch::Tensor> copies;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const auto& tensor = tensors[i];
    auto view = buffer_.narrow(0, offsets[i], static_cast<std::int64_t>(tensor.nbytes()))
                    .view(tensor.scalar_type())
                    .view(tensor.sizes());
    view.copy_(tensor.detach(), /*non_blocking=*/true);
    copies.push_back(std::move(view));
  }
  return copies;
}

}  // namespace transient::train
