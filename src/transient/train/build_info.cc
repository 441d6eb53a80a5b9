#include "transient/train/build_info.h"

#include <dlfcn.h>
#include <torch/version.h>

#include "transient/train/cuda_module.h"
#include "transient/train/cuda_support.h"

namespace transient::train {

BuildInfo build_info() {
  BuildInfo info;
#ifdef TRANSIENT_TORCH_VERSION
  info.torch_version = TRANSIENT_TORCH_VERSION;
#else
  info.torch_version = TORCH_VERSION;
#endif
  if (!cuda_compiled_in()) return info;
  if (!load_cuda(&info.cuda_error)) return info;
  const auto query = reinterpret_cast<decltype(&transient_cuda_info)>(
      ::dlsym(RTLD_DEFAULT, "transient_cuda_info"));
  if (query == nullptr) {
    info.cuda_error = "libtransient_cuda.so has no transient_cuda_info";
    return info;
  }
  TransientCudaInfo cuda;
  query(&cuda);
  info.cuda_version = std::to_string(cuda.cudart_version / 1000) + "." +
                      std::to_string(cuda.cudart_version % 1000 / 10);
  // libtorch packs it as major << 32 | minor << 16 | patch (torch.cuda.nccl.version()).
  info.nccl_version = std::to_string(cuda.nccl_version >> 32) + "." +
                      std::to_string((cuda.nccl_version >> 16) & 0xffff) + "." +
                      std::to_string(cuda.nccl_version & 0xffff);
  info.gpus = cuda.gpus;
  info.gpu_name = cuda.gpu_name;
  return info;
}

std::string describe(const BuildInfo& info) {
  std::string text = "libtorch " + info.torch_version + "; ";
  if (!info.cuda_error.empty()) {
    text += "CUDA compiled in, but its libraries do not load (" + info.cuda_error + ")\n";
  } else if (info.cuda_version.empty()) {
    text += "CUDA not compiled in, NCCL not compiled in\n";
  } else {
    text +=
        "CUDA " + info.cuda_version + " compiled in, NCCL " + info.nccl_version + " compiled in\n";
  }
  if (info.gpus == 0) {
    text += info.cuda_version.empty() && info.cuda_error.empty()
                ? "GPU: none (this build runs on the CPU)"
                : "GPU: none usable now (training runs on the CPU)";
  } else {
    text += "GPU: " + std::to_string(info.gpus) + " usable (" + info.gpu_name +
            (info.gpus > 1 ? ", ..." : "") + ")";
  }
  return text;
}

}  // namespace transient::train
