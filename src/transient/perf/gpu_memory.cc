#include "transient/perf/gpu_memory.h"

#include "transient/core/text.h"

namespace transient::perf {
namespace {

struct GpuMemory {
  const char* gpu;         // upper case, as catalogs name it
  double memory_gb_per_s;  // peak, of one GPU
};

// NVIDIA data sheets. K80: one GK210 of the board (480 GB/s for two); P100: the 16 GB HBM2 part
// that GCE rents (PCIe and SXM2 alike); V100: PCIe and SXM2 16/32 GB; A100: 40 GB, and 80 GB SXM;
// H100: SXM5; H200: SXM; M60: one of the board's two GPUs.
constexpr GpuMemory kGpus[] = {
    {"K80", 240},        {"M60", 160},   {"P100", 732},  {"V100", 900},
    {"V100-32GB", 900},  {"T4", 320},    {"A10G", 600},  {"A100", 1555},
    {"A100-80GB", 2039}, {"H100", 3350}, {"H200", 4800}, {"L4", 300},
};

}  // namespace

std::optional<double> gpu_memory_gb_per_s(const std::string& gpu) {
  const std::string upper = uppercase(gpu);
  for (const auto& entry : kGpus) {
    if (upper == entry.gpu) return entry.memory_gb_per_s;
  }
  return std::nullopt;
}

}  // namespace transient::perf
