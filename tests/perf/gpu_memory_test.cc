// A GPU the analytic model was not fitted on takes the fitted GPU's constants with its GPU-side
// time scaled by memory bandwidth (or TFLOPS where a bandwidth is unknown); model files keep their
// constants.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "transient/perf/analytic_throughput_model.h"
#include "transient/perf/gpu_memory.h"
#include "transient/perf/throughput_fitting.h"

namespace transient::perf {
namespace {

cloud::InstanceType gpu_server(const std::string& gpu, double tflops) {
  cloud::InstanceType type;
  type.name = gpu + " server";
  type.gpu = gpu;
  type.gpus = 1;
  type.gpu_tflops = tflops;
  type.network_gbps = 8;
  return type;
}

TEST(GpuMemory, TableNamesCatalogGpusAnyCase) {
  EXPECT_EQ(gpu_memory_gb_per_s("K80"), 240.0);
  EXPECT_EQ(gpu_memory_gb_per_s("p100"), 732.0);
  EXPECT_EQ(gpu_memory_gb_per_s("V100-32GB"), 900.0);
  EXPECT_EQ(gpu_memory_gb_per_s("a100-80gb"), 2039.0);
  EXPECT_FALSE(gpu_memory_gb_per_s("Intel(R) Xeon(R) Processor").has_value());
  EXPECT_FALSE(gpu_memory_gb_per_s("").has_value());
}

TEST(GpuTransfer, UnfittedGpuScalesTheNearestFittedGpuByMemoryBandwidth) {
  const AnalyticParams params = AnalyticParams::builtin();
  const AnalyticThroughputModel model(find_workload("resnet-32"), params);
  const double overhead = params.step_overhead_s;
  const double p100 = model.compute_s(gpu_server("P100", 9.526)) - overhead;
  // V100 (14 TFLOPS): nearest fitted GPU is the P100; 732 / 900 GB/s of its time.
  EXPECT_NEAR(model.compute_s(gpu_server("V100", 14.0)) - overhead, p100 * 732.0 / 900.0, 1e-12);
  // A GPU without a known bandwidth: by TFLOPS, twice a P100's is half its time.
  EXPECT_NEAR(model.compute_s(gpu_server("X1", 2 * 9.526)) - overhead, p100 / 2, 1e-12);
  // A fitted GPU keeps its own constants.
  const double k80 = model.compute_s(gpu_server("K80", 4.113));
  EXPECT_NEAR(k80, 1.0 / 4.589, 0.1 / 4.589);  // within 10% of CM-DARE's K80 measurement
  EXPECT_DOUBLE_EQ(params.gpu_time_factor("V100", 14.0, "P100"), 732.0 / 900.0);
}

// The analytic constants of a model file are the file's: step_overhead_s was read as the built-in
// figure whatever the file said, and fitted_gpu_tflops reset to K80 and P100.
TEST(PerfModelFileTest, AnalyticConstantsRoundTrip) {
  PerfModelFile file;
  file.analytic = AnalyticParams::builtin();
  file.analytic.step_overhead_s = 0.5;
  file.analytic.fitted_gpu_tflops = {{"K80", 4.113}};
  file.analytic.source = "test";
  file.fitted = FittedParams::builtin();
  file.overheads = nlohmann::json::object();
  file.report = nlohmann::json::object();
  const auto path = std::filesystem::temp_directory_path() / "transient_gpu_memory_model.json";
  std::ofstream(path) << file.to_json().dump(2);
  const PerfModelFile back = PerfModelFile::load(path.string());
  std::filesystem::remove(path);
  EXPECT_DOUBLE_EQ(back.analytic.step_overhead_s, 0.5);
  EXPECT_EQ(back.analytic.fitted_gpu_tflops.size(), 1u);
  EXPECT_EQ(back.analytic.to_json(), file.analytic.to_json());
}

}  // namespace
}  // namespace transient::perf
