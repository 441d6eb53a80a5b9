#include "transient/train/cuda_support.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <mutex>

#include "transient/core/error.h"
#include "transient/train/cuda_module.h"

namespace transient::train {
namespace {

constexpr const char* kModuleName = "libtransient_cuda.so";

struct Loaded {
  bool ok = false;
  std::string why_not;
};

Loaded load_once() {
#ifndef TRANSIENT_CUDA_MODULE
  return {false, "CUDA is not compiled into this build's torch"};
#else
  const std::string path = cuda_module_path();
  // Global, as if linked: libtorch_cuda's symbols serve whatever loads after it.
  if (::dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL) == nullptr) {
    const char* error = ::dlerror();
    return {false, error != nullptr ? error : "cannot load " + path};
  }
  return {true, {}};
#endif
}

}  // namespace

bool cuda_compiled_in() {
#ifdef TRANSIENT_CUDA_MODULE
  return true;
#else
  return false;
#endif
}

bool nvidia_driver_present() {
  return ::access("/dev/nvidiactl", F_OK) == 0 || ::access("/dev/dxg", F_OK) == 0;
}

std::string cuda_module_path() {
  std::error_code error;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (!error) {
    const auto beside = self.parent_path() / kModuleName;
    if (std::filesystem::exists(beside, error)) return beside.string();
  }
#ifdef TRANSIENT_CUDA_MODULE
  return TRANSIENT_CUDA_MODULE;
#else
  return kModuleName;
#endif
}

bool load_cuda(std::string* why_not) {
  static std::once_flag once;
  static Loaded loaded;
  std::call_once(once, [] { loaded = load_once(); });
  if (!loaded.ok && why_not != nullptr) *why_not = loaded.why_not;
  return loaded.ok;
}

int usable_gpus(std::string* why_none) {
  std::string why;
  int gpus = 0;
  if (!cuda_compiled_in()) {
    why = "this build's torch has no CUDA";
  } else if (!nvidia_driver_present()) {
    why = "this machine has no NVIDIA driver (no /dev/nvidiactl)";
  } else if (!load_cuda(&why)) {
    why = "CUDA's libraries did not load (" + why + ")";
  } else if (const auto query = reinterpret_cast<decltype(&transient_cuda_info)>(
                 ::dlsym(RTLD_DEFAULT, "transient_cuda_info"));
             query == nullptr) {
    why = "libtransient_cuda.so has no transient_cuda_info";
  } else {
    TransientCudaInfo info;
    query(&info);
    gpus = info.gpus;
    if (gpus == 0) why = "CUDA finds no GPU here";
  }
  if (gpus == 0 && why_none != nullptr) *why_none = why;
  return gpus;
}

int require_usable_gpus() {
  std::string why;
  const int gpus = usable_gpus(&why);
  if (gpus == 0) {
    throw InputError("--device cuda: no GPU: " + why + "; accepted here: --device cpu or auto");
  }
  return gpus;
}

void load_cuda_where_it_can_run() {
  if (!cuda_compiled_in() || !nvidia_driver_present()) return;
  std::string why_not;
  if (!load_cuda(&why_not)) {
    std::fprintf(stderr,
                 "transient: warning: this machine has an NVIDIA driver but CUDA's libraries did "
                 "not load (%s); only the CPU is used\n",
                 why_not.c_str());
  }
}

}  // namespace transient::train
