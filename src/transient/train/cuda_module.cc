// libtransient_cuda.so: loaded by cuda_support.cc where CUDA can run (or is asked about), it
// brings libtorch_cuda in with it, whose loading registers CUDA's kernels and hooks with libtorch.
#include "transient/train/cuda_module.h"

#include <ATen/cuda/CUDAContext.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/csrc/cuda/nccl.h>
#include <torch/cuda.h>

#include <cstdio>
#include <exception>

extern "C" __attribute__((visibility("default"))) void transient_cuda_info(
    TransientCudaInfo* info) {
  *info = TransientCudaInfo{};
  try {
    // Both versions are those of the libraries linked in; neither needs a driver or a GPU.
    info->cudart_version = at::detail::getCUDAHooks().versionCUDART();
    info->nccl_version = torch::cuda::nccl::version();
    if (torch::cuda::is_available()) {
      info->gpus = static_cast<int>(torch::cuda::device_count());
      std::snprintf(info->gpu_name, sizeof(info->gpu_name), "%s",
                    at::cuda::getDeviceProperties(0)->name);
    }
  } catch (const std::exception&) {
    info->gpus = 0;  // a CUDA runtime that cannot talk to a driver: no usable GPU
  }
}
