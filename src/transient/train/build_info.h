// What this build of the trainer runs on: the libtorch it was built against, whether CUDA and
// NCCL are compiled into it, and whether a GPU is usable now (`transient --version`).
// Torch-free header, so that the CLI compiles without libtorch's headers.
#pragma once

#include <string>

namespace transient::train {

struct BuildInfo {
  std::string torch_version;  // the torch package's version, e.g. 2.11.0+cu130
  std::string cuda_version;   // CUDA runtime compiled in, e.g. 13.0; empty = none
  std::string nccl_version;   // NCCL compiled in, e.g. 2.28.9; empty = none
  int gpus = 0;               // CUDA devices usable now
  std::string gpu_name;       // the first one's name; empty when there is none
  std::string cuda_error;     // compiled in, but its libraries did not load: why
};

// Asks libtorch, loading its CUDA half to ask it (cuda_support.h). Never throws: a CUDA runtime
// without a driver or a GPU is "0 GPUs".
BuildInfo build_info();

// Two lines for --version: the libtorch line and the GPU line.
std::string describe(const BuildInfo& info);

}  // namespace transient::train
