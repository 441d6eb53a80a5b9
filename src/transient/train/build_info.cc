#include "transient/train/build_info.h"

#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/torch.h>
#include <torch/version.h>

#ifdef TRANSIENT_TORCH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <torch/csrc/cuda/nccl.h>
#endif

namespace transient::train {

BuildInfo build_info() {
  BuildInfo info;
#ifdef TRANSIENT_TORCH_VERSION
  info.torch_version = TRANSIENT_TORCH_VERSION;
#else
  info.torch_version = TORCH_VERSION;
#endif
#ifdef TRANSIENT_TORCH_CUDA
  // Both versions are those of the libraries linked in; neither needs a driver or a GPU.
  const long cudart = at::detail::getCUDAHooks().versionCUDART();
  info.cuda_version = std::to_string(cudart / 1000) + "." + std::to_string(cudart % 1000 / 10);
  const std::uint64_t nccl = torch::cuda::nccl::version();
  // libtorch packs it as major << 32 | minor << 16 | patch (torch.cuda.nccl.version()).
  info.nccl_version = std::to_string(nccl >> 32) + "." + std::to_string((nccl >> 16) & 0xffff) +
                      "." + std::to_string(nccl & 0xffff);
  try {
    if (torch::cuda::is_available()) {
      info.gpus = static_cast<int>(torch::cuda::device_count());
      info.gpu_name = at::cuda::getDeviceProperties(0)->name;
    }
  } catch (const std::exception&) {
    info.gpus = 0;  // a CUDA runtime that cannot talk to a driver: no usable GPU
  }
#endif
  return info;
}

std::string describe(const BuildInfo& info) {
  std::string text =
      "libtorch " + info.torch_version + "; CUDA " +
      (info.cuda_version.empty() ? "not compiled in" : info.cuda_version + " compiled in") +
      ", NCCL " +
      (info.nccl_version.empty() ? "not compiled in" : info.nccl_version + " compiled in") + "\n";
  if (info.gpus == 0) {
    text += info.cuda_version.empty() ? "GPU: none (this build runs on the CPU)"
                                      : "GPU: none usable now (training runs on the CPU)";
  } else {
    text += "GPU: " + std::to_string(info.gpus) + " usable (" + info.gpu_name +
            (info.gpus > 1 ? ", ..." : "") + ")";
  }
  return text;
}

}  // namespace transient::train
