// The C interface of libtransient_cuda.so, the trainer's CUDA half (cuda_support.h): a module
// that links libtorch_cuda, so that only the processes that load it pay for CUDA's libraries.
#pragma once

extern "C" {

struct TransientCudaInfo {
  long cudart_version = 0;              // CUDA runtime compiled in, e.g. 13000 for 13.0
  unsigned long long nccl_version = 0;  // NCCL: major << 32 | minor << 16 | patch
  int gpus = 0;                         // CUDA devices usable now
  char gpu_name[256] = {};              // the first one's name
};

// Fills `info` from libtorch_cuda. Never throws: a runtime that cannot reach a driver is 0 GPUs.
void transient_cuda_info(TransientCudaInfo* info);
}
