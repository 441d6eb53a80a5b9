// The batch form (perf/batch_scaling.h) against TensorFlow's published benchmarks, and what it
// does to a cluster that shares a fixed global batch (perf/job_batch.h).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>

#include "transient/cloud/catalog_registry.h"
#include "transient/core/error.h"
#include "transient/perf/analytic_throughput_model.h"
#include "transient/perf/batch_scaling.h"
#include "transient/perf/registry.h"

namespace transient::perf {
namespace {

std::map<std::string, std::vector<BatchMeasurement>> by_gpu() {
  std::map<std::string, std::vector<BatchMeasurement>> out;
  for (const auto& m : tensorflow_benchmarks_2017()) out[m.gpu].push_back(m);
  return out;
}

// The model's name without the cloud it ran on: the GCE and AWS runs of one model are one model.
std::string model_of(const BatchMeasurement& m) { return m.model.substr(0, m.model.find(' ')); }

TEST(BatchScaling, BuiltinConstantsAreTheFitOnTensorflowsBenchmarks) {
  const BatchScaling builtin = BatchScaling::builtin();
  for (const auto& [gpu, rows] : by_gpu()) {
    const double fitted = fit_fixed_per_tensor_s(rows);
    std::printf("%s: %.4g ms per tensor per step\n", gpu.c_str(), fitted * 1e3);
    ASSERT_TRUE(builtin.fixed_per_tensor_s.count(gpu)) << gpu;
    EXPECT_NEAR(builtin.fixed_per_tensor_s.at(gpu), fitted, 1e-3 * fitted) << gpu;
  }
}

// Leave one model out: the constant fitted on the other models of that GPU, and the model's own
// throughput at its larger batch, predict its throughput at the smaller one. A constant
// per-sample time (no fixed part) would predict the larger batch's throughput.
TEST(BatchScaling, PredictsHalfTheBatchLeavingOneModelOut) {
  for (const auto& [gpu, rows] : by_gpu()) {
    double sum = 0, constant_sum = 0;
    for (const auto& held_out : rows) {
      std::vector<BatchMeasurement> others;
      for (const auto& m : rows) {
        if (model_of(m) != model_of(held_out)) others.push_back(m);
      }
      ASSERT_FALSE(others.empty());
      const double k = fit_fixed_per_tensor_s(others);
      const double predicted =
          predicted_samples_per_s(k * held_out.tensors, held_out.large_batch,
                                  held_out.large_batch_samples_per_s, held_out.small_batch);
      const double error = predicted / held_out.small_batch_samples_per_s - 1;
      const double constant =
          held_out.large_batch_samples_per_s / held_out.small_batch_samples_per_s - 1;
      std::printf("| %s | %s | %.3g ms | %.1f | %.1f | %+.1f%% | %+.1f%% |\n", gpu.c_str(),
                  held_out.model.c_str(), k * 1e3, held_out.small_batch_samples_per_s, predicted,
                  100 * error, 100 * constant);
      EXPECT_LT(std::abs(error), 0.06) << held_out.model;
      sum += std::abs(error);
      constant_sum += std::abs(constant);
    }
    const double mape = sum / rows.size(), constant_mape = constant_sum / rows.size();
    std::printf("%s: MAPE %.2f%% (constant per-sample time: %.2f%%)\n", gpu.c_str(), 100 * mape,
                100 * constant_mape);
    EXPECT_LT(mape, 0.03) << gpu;
    EXPECT_LT(mape, constant_mape / 2) << gpu;
  }
}

TEST(BatchScaling, StepByHandAndOtherGpusTakeTheNearestFittedOne) {
  // 0.1 s for 128 samples with 0.02 s fixed: 0.02 + 0.08 x 32 / 128 = 0.04 s for 32.
  EXPECT_NEAR(BatchScaling::step_s(0.1, 0.02, 128, 32), 0.04, 1e-15);
  EXPECT_NEAR(BatchScaling::step_s(0.1, 0.02, 128, 256), 0.18, 1e-15);
  // A fixed part longer than the step keeps 5% per sample.
  EXPECT_NEAR(BatchScaling::step_s(0.1, 1.0, 128, 64), 0.095 + 0.0025, 1e-15);
  const BatchScaling s = BatchScaling::builtin();
  cloud::InstanceType v100;
  v100.gpu = "V100";
  v100.gpus = 1;
  v100.gpu_tflops = 15.7;
  EXPECT_DOUBLE_EQ(s.fixed_s(100, v100), 100 * s.fixed_per_tensor_s.at("P100"));
  cloud::InstanceType k80 = v100;
  k80.gpu = "k80";
  k80.gpu_tflops = 4.1;
  EXPECT_DOUBLE_EQ(s.fixed_s(10, k80), 10 * s.fixed_per_tensor_s.at("K80"));
  EXPECT_EQ(BatchScaling{}.fixed_s(100, k80), 0.0);
}

ClusterShape cluster(const cloud::InstanceType& type, int servers) {
  ClusterShape s;
  s.workers = {{type, servers}};
  s.architecture = Architecture::allreduce;
  return s;
}

Workload resnet32(JobBatch::Mode mode, int samples) {
  Workload w = find_workload("resnet-32");
  w.batch = {mode, samples};
  return w;
}

// Issue 16: the trainer splits a fixed global batch, so ResNet-32 cannot scale linearly to 128
// GPUs; a batch per worker keeps each GPU's efficiency.
TEST(BatchScaling, Resnet32AtAFixedGlobalBatchStopsScalingLongBefore128Gpus) {
  const auto k80 = cloud::builtin_catalog("gce-2019").find("n1-standard-4+k80");
  const AnalyticThroughputModel global(resnet32(JobBatch::Mode::global, 0),
                                       AnalyticParams::builtin());
  const AnalyticThroughputModel per_worker(resnet32(JobBatch::Mode::per_worker, 128),
                                           AnalyticParams::builtin());
  const double one = global.predict(cluster(k80, 1)).samples_per_s;
  EXPECT_NEAR(per_worker.predict(cluster(k80, 1)).samples_per_s, one, 1e-9 * one);
  std::printf(
      "| workers | global batch 128: samples/s | speed-up | per-worker batch 128 | speed-up |\n");
  double previous = 0;
  for (const int n : {1, 2, 4, 8, 16, 32, 64, 128}) {
    const Prediction g = global.predict(cluster(k80, n));
    const Prediction w = per_worker.predict(cluster(k80, n));
    std::printf("| %d | %.0f | %.2f | %.0f | %.2f |\n", n, g.samples_per_s, g.samples_per_s / one,
                w.samples_per_s, w.samples_per_s / one);
    // One step is the global batch of 128 samples, whatever the cluster.
    EXPECT_NEAR(g.samples_per_s, 128 * g.steps_per_s, 1e-9 * g.samples_per_s);
    EXPECT_NEAR(w.samples_per_s, 128.0 * n * w.steps_per_s, 1e-9 * w.samples_per_s);
    EXPECT_LE(g.samples_per_s, w.samples_per_s * (1 + 1e-12)) << n;
    if (n >= 2) {
      EXPECT_LT(g.samples_per_s, 0.9 * n * one) << n;  // sublinear from the start
    }
    previous = g.samples_per_s;
  }
  // At 128 workers each takes one sample: far from 128 x one worker.
  EXPECT_LT(previous, 16 * one);
  // A batch per worker keeps each GPU busy: 8 workers give more than 6 x one.
  EXPECT_GT(per_worker.predict(cluster(k80, 8)).samples_per_s, 6 * one);
  // The per-worker step stays that of 128 samples plus the all-reduce.
  EXPECT_GT(per_worker.predict(cluster(k80, 8)).step_time_s,
            global.predict(cluster(k80, 1)).step_time_s);
}

TEST(JobBatch, SamplesPerStepAndPerWorker) {
  const JobBatch global{JobBatch::Mode::global, 256};
  EXPECT_EQ(global.step_samples(4, 128), 256);
  EXPECT_EQ(global.worker_samples(4, 128), 64);
  const JobBatch fallback{};
  EXPECT_EQ(fallback.step_samples(8, 128), 128);
  EXPECT_EQ(fallback.worker_samples(8, 128), 16);
  EXPECT_EQ(fallback.text(128), "global batch 128");
  const JobBatch per_worker{JobBatch::Mode::per_worker, 32};
  EXPECT_EQ(per_worker.step_samples(4, 128), 128);
  EXPECT_EQ(per_worker.worker_samples(4, 128), 32);
  EXPECT_EQ(per_worker.text(128), "per-worker batch 32");
  // The one bound of predict, plan's search and simulate: a sample for each worker at least.
  EXPECT_EQ(global.max_workers(128), 256);
  EXPECT_EQ(fallback.max_workers(128), 128);
  EXPECT_EQ(per_worker.max_workers(128), 0);
  EXPECT_NO_THROW(global.require_a_sample_per_worker(256, 128, "--global-batch"));
  EXPECT_THROW(global.require_a_sample_per_worker(257, 128, "--global-batch"), InputError);
  EXPECT_NO_THROW(per_worker.require_a_sample_per_worker(1000, 128, "--per-worker-batch"));
}

TEST(JobBatch, ThroughputParamsCarryTheBatchAndRefuseBoth) {
  ThroughputParams params;
  params.values = {{"workload", "resnet-32"}, {"global_batch", "512"}};
  const auto model = create_throughput_model("analytic", params);
  const auto k80 = cloud::builtin_catalog("gce-2019").find("n1-standard-4+k80");
  EXPECT_NEAR(model->predict(cluster(k80, 4)).samples_per_s,
              512 * model->predict(cluster(k80, 4)).steps_per_s, 1e-9);
  params.values["per_worker_batch"] = "64";
  try {
    create_throughput_model("fitted", params);
    FAIL() << "both batches accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("global_batch and per_worker_batch exclude each other"),
              std::string::npos)
        << e.what();
  }
  params.values.erase("global_batch");
  params.values["per_worker_batch"] = "0";
  EXPECT_THROW(create_throughput_model("analytic", params), InputError);
  params.values["per_worker_batch"] = "12x";
  EXPECT_THROW(create_throughput_model("analytic", params), InputError);
}

}  // namespace
}  // namespace transient::perf
