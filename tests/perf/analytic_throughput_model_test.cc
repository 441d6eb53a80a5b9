// The analytic model against cases computed by hand, and the cluster spec parser.
#include <gtest/gtest.h>

#include <cmath>

#include "transient/cloud/catalog_registry.h"
#include "transient/core/error.h"
#include "transient/perf/analytic_throughput_model.h"
#include "transient/perf/cluster_spec.h"
#include "transient/perf/fitted_throughput_model.h"
#include "transient/perf/internal/cluster_composition.h"
#include "transient/perf/registry.h"

namespace transient::perf {
namespace {

// 3e9 FLOPs per sample, 128 samples: 3.84e11 FLOPs per step; 100 MB in 100 tensors.
Workload hand_workload() {
  Workload w;
  w.name = "hand";
  w.family = "resnet";
  w.batch_per_worker = 128;
  w.forward_flops_per_sample = 1e9;
  w.backward_flops_per_sample = 2e9;
  w.parameters = 25000000;
  w.gradient_bytes = 1e8;
  w.tensors = 100;
  return w;
}

// Efficiency 0.5, 0.0232 s overhead: 0.1 s of compute on a 10 TFLOPS GPU. Links of 8 Gbit/s at
// full efficiency move 1e9 bytes/s. Contention sharpness 1: X = 1 / (1/R + 1/C). No fixed part
// of a step: a worker's time is proportional to its samples.
AnalyticParams hand_params() {
  AnalyticParams p;
  p.efficiency = {{"resnet", 0.5}, {"generic", 0.25}};
  p.step_overhead_s = 0.0232;
  p.communication.worker_per_tensor_s = 1e-4;
  p.communication.network_efficiency = 1.0;
  p.communication.ps_per_tensor_s = 1e-4;
  p.communication.ps_network_gbps = 8.0;
  p.communication.contention_sharpness = 1.0;
  p.communication.allreduce_hop_latency_s = 1e-3;
  p.communication.batch_scaling = {};
  return p;
}

cloud::InstanceType gpu(double tflops, const std::string& name = "K80") {
  cloud::InstanceType type;
  type.name = "server+" + name;
  type.gpu = name;
  type.gpus = 1;
  type.gpu_tflops = tflops;
  type.network_gbps = 8.0;
  type.on_demand_usd_per_h = 1.0;
  return type;
}

ClusterShape shape(std::vector<WorkerGroup> groups, Architecture arch, int servers = 1) {
  ClusterShape s;
  s.workers = std::move(groups);
  s.architecture = arch;
  s.parameter_servers = servers;
  return s;
}

TEST(AnalyticThroughputModel, ComputeTimeFromTflopsAndEfficiency) {
  const AnalyticThroughputModel model(hand_workload(), hand_params());
  EXPECT_NEAR(model.compute_s(gpu(10)), 0.1, 1e-12);
  EXPECT_NEAR(model.compute_s(gpu(5)), 0.1768, 1e-12);
  Workload generic = hand_workload();
  generic.family = "generic";
  EXPECT_NEAR(AnalyticThroughputModel(generic, hand_params()).compute_s(gpu(10)), 0.1768, 1e-12);
}

TEST(AnalyticThroughputModel, OtherGpusTakeTheNearestFittedGpusConstants) {
  AnalyticParams p = hand_params();
  p.efficiency = {{"resnet@K80", 0.25}, {"resnet@P100", 0.5}, {"resnet", 0.35}, {"generic", 0.3}};
  p.per_tensor_s = {{"K80", 1e-3}, {"P100", 5e-4}, {"generic", 7e-4}};
  p.fitted_gpu_tflops = {{"K80", 4}, {"P100", 10}};
  EXPECT_EQ(p.calibrated_gpu("v100", 14), "P100");
  EXPECT_EQ(p.calibrated_gpu("M60", 4.8), "K80");
  EXPECT_EQ(p.calibrated_gpu("k80", 4), "K80");
  EXPECT_EQ(hand_params().calibrated_gpu("V100", 14), "");
  const AnalyticThroughputModel model(hand_workload(), p);
  // The P100's GPU-side time, 3.84e11 FLOPs / (10e12 x 0.5) + 100 tensors x 5e-4, times the
  // memory bandwidths' ratio 732 / 900 GB/s, + 0.0232 s.
  EXPECT_NEAR(model.compute_s(gpu(20, "V100")), (0.0768 + 0.05) * 732 / 900 + 0.0232, 1e-12);
  // Nothing fitted per GPU: the family's efficiency.
  EXPECT_NEAR(AnalyticThroughputModel(hand_workload(), hand_params()).compute_s(gpu(20, "V100")),
              0.0384 + 0.0232, 1e-12);
}

TEST(AnalyticThroughputModel, MeasuredStepOnTheSameDeviceWins) {
  Workload w = hand_workload();
  w.measured = MeasuredStep{"k80", 0.3};
  const AnalyticThroughputModel model(w, hand_params());
  EXPECT_DOUBLE_EQ(model.compute_s(gpu(10, "K80")), 0.3);
  EXPECT_NEAR(model.compute_s(gpu(10, "P100")), 0.1, 1e-12);
}

// A profile is a network, whatever batch it was taken at: the models' constants describe steps of
// CM-DARE's 128 samples, so a workload of 8 is predicted at 128 and scaled, and the same job
// (batch, cluster) is predicted alike from either. Scaled from its own 8 samples, the formula's
// per-tensor and fixed seconds counted as if per sample: a ResNet-32 profiled at 8 samples
// predicted 369 samples/s on 4 K80s at 128 a worker, the same network at 128 2,450.
TEST(AnalyticThroughputModel, TheBatchAProfileWasTakenAtDoesNotChangeAJobsPrediction) {
  Workload at_128 = find_workload("resnet-32");
  at_128.measured.reset();
  Workload at_8 = at_128;
  at_8.batch_per_worker = 8;
  const auto k80s = shape({{gpu(4.113), 4}}, Architecture::allreduce);
  for (const JobBatch batch :
       {JobBatch{JobBatch::Mode::per_worker, 128}, JobBatch{JobBatch::Mode::per_worker, 8},
        JobBatch{JobBatch::Mode::global, 256}}) {
    at_128.batch = at_8.batch = batch;
    const double analytic =
        AnalyticThroughputModel(at_128, AnalyticParams::builtin()).predict(k80s).samples_per_s;
    EXPECT_NEAR(
        AnalyticThroughputModel(at_8, AnalyticParams::builtin()).predict(k80s).samples_per_s,
        analytic, 1e-9 * analytic)
        << batch.text(128);
    const double fitted =
        FittedThroughputModel(at_128, FittedParams::builtin()).predict(k80s).samples_per_s;
    EXPECT_NEAR(FittedThroughputModel(at_8, FittedParams::builtin()).predict(k80s).samples_per_s,
                fitted, 1e-9 * fitted)
        << batch.text(128);
  }
  // The profile's batch stays the job's where none is given: a step of 8 samples.
  at_8.batch = JobBatch{};
  at_128.batch = JobBatch{JobBatch::Mode::global, 8};
  EXPECT_NEAR(
      AnalyticThroughputModel(at_8, AnalyticParams::builtin()).predict(k80s).samples_per_s,
      AnalyticThroughputModel(at_128, AnalyticParams::builtin()).predict(k80s).samples_per_s, 1e-6);
}

TEST(AnalyticThroughputModel, AsyncParameterServerByHand) {
  const AnalyticThroughputModel model(hand_workload(), hand_params());
  // Worker step: 0.1 compute + 100 x 1e-4 + 2 x 1e8 / 1e9 = 0.31 s. Server: 0.01 + 0.1 = 0.11 s.
  const Prediction one = model.predict(shape({{gpu(10), 1}}, Architecture::async_ps));
  EXPECT_NEAR(one.steps_per_s, 1.0 / (0.31 + 0.11), 1e-9);
  EXPECT_NEAR(one.samples_per_s, 128.0 / 0.42, 1e-7);
  EXPECT_NEAR(one.step_time_s, 0.42, 1e-9);
  EXPECT_EQ(one.bottleneck, "network");  // 0.21 s of transfer against 0.1 s of compute
  const Prediction four = model.predict(shape({{gpu(10), 4}}, Architecture::async_ps));
  EXPECT_NEAR(four.steps_per_s, 1.0 / (0.31 / 4 + 0.11), 1e-9);
  EXPECT_EQ(four.bottleneck, "parameter server");  // R = 12.9 steps/s > C = 9.09
  // Two servers share the tensors and bytes: S = 0.055 s.
  const Prediction split = model.predict(shape({{gpu(10), 4}}, Architecture::async_ps, 2));
  EXPECT_NEAR(split.steps_per_s, 1.0 / (0.31 / 4 + 0.055), 1e-9);
}

// The fit's grid search (throughput_fitting.cc) composes an async-ps cluster's speed from its
// pieces: the workers' load, worked out once, and the servers' cap under each candidate's
// constants. The pieces give what predict() gives, to the bit, for both models.
TEST(AnalyticThroughputModel, AnAsyncClustersPiecesComposeAsPredictDoes) {
  const Workload& workload = find_workload("resnet-32");
  const AnalyticThroughputModel analytic(workload, AnalyticParams::builtin());
  const FittedThroughputModel fitted(workload, FittedParams::builtin());
  for (const int workers : {1, 4, 8}) {
    for (const int servers : {1, 2}) {
      const ClusterShape cluster =
          shape({{gpu(4.113), workers}, {gpu(9.526, "P100"), 1}}, Architecture::async_ps, servers);
      auto composed = [&](const auto& model, const CommunicationParams& comm) {
        const double uncontended =
            internal::async_ps_load(cluster, workload, model.worker_times(cluster), comm)
                .uncontended_steps_per_s;
        const double cap = 1.0 / internal::server_step_s(workload, servers, comm);
        return internal::contended_steps_per_s(uncontended, cap, comm.contention_sharpness);
      };
      EXPECT_EQ(composed(analytic, analytic.params().communication),
                analytic.predict(cluster).steps_per_s)
          << workers << " workers, " << servers << " servers";
      EXPECT_EQ(composed(fitted, FittedParams::builtin().communication),
                fitted.predict(cluster).steps_per_s)
          << workers << " workers, " << servers << " servers";
    }
  }
}

TEST(AnalyticThroughputModel, LinearPiecesBoundThePrediction) {
  const AnalyticThroughputModel model(find_workload("resnet-32"), AnalyticParams::builtin());
  const auto catalog = cloud::builtin_catalog("gce-2019");
  const auto k80 = catalog.find("n1-standard-4+k80");
  const auto p100 = catalog.find("n1-standard-4+p100");
  for (int n = 1; n <= 16; ++n) {
    const ClusterShape s = shape({{k80, n}, {p100, n}}, Architecture::async_ps);
    const double x = model.predict(s).steps_per_s;
    EXPECT_LE(x, n * (model.worker_steps_per_s(k80, Architecture::async_ps) +
                      model.worker_steps_per_s(p100, Architecture::async_ps)));
    EXPECT_LE(x, model.server_cap_steps_per_s(1));
    EXPECT_GE(x, std::pow(2.0, -1.0 / 4) *
                         std::min(model.server_cap_steps_per_s(1),
                                  n * (model.worker_steps_per_s(k80, Architecture::async_ps) +
                                       model.worker_steps_per_s(p100, Architecture::async_ps))) -
                     1e-9);
    const ClusterShape sync = shape({{k80, n}}, Architecture::allreduce);
    EXPECT_LE(model.predict(sync).steps_per_s,
              n * model.worker_steps_per_s(k80, Architecture::allreduce) + 1e-9);
  }
  // Hand case: 0.31 s per step alone, 0.11 s of server per step.
  const AnalyticThroughputModel hand(hand_workload(), hand_params());
  EXPECT_NEAR(hand.worker_steps_per_s(gpu(10), Architecture::async_ps), 1 / 0.31, 1e-9);
  EXPECT_NEAR(hand.worker_steps_per_s(gpu(10), Architecture::allreduce), 1 / 0.1, 1e-9);
  EXPECT_NEAR(hand.server_cap_steps_per_s(2), 2 / 0.11, 1e-9);
}

TEST(AnalyticThroughputModel, HardMinimumWhenSharp) {
  AnalyticParams p = hand_params();
  p.communication.contention_sharpness = 200;
  const AnalyticThroughputModel model(hand_workload(), p);
  EXPECT_NEAR(model.predict(shape({{gpu(10), 8}}, Architecture::async_ps)).steps_per_s, 1.0 / 0.11,
              0.05);
  EXPECT_NEAR(model.predict(shape({{gpu(10), 1}}, Architecture::async_ps)).steps_per_s, 1.0 / 0.31,
              1e-6);
}

// The hand workload with a batch per worker: every worker takes its 128 samples.
Workload per_worker_workload() {
  Workload w = hand_workload();
  w.batch = {JobBatch::Mode::per_worker, 128};
  return w;
}

TEST(AnalyticThroughputModel, RingAllReduceByHand) {
  const AnalyticThroughputModel model(per_worker_workload(), hand_params());
  // 4 workers of 128 samples: 0.1 s compute + 2 x 3 x 1e-3 + 2 x 3/4 x 1e8 / 1e9 = 0.256 s per
  // synchronous step, which is one step of 512 samples.
  const Prediction p = model.predict(shape({{gpu(10), 4}}, Architecture::allreduce));
  EXPECT_NEAR(p.step_time_s, 0.256, 1e-12);
  EXPECT_NEAR(p.steps_per_s, 1 / 0.256, 1e-9);
  EXPECT_NEAR(p.samples_per_s, 512 / 0.256, 1e-7);
  EXPECT_EQ(p.bottleneck, "network");
  // The default, the workload's 128 samples as a global batch: 32 each, 0.025 s of compute.
  const AnalyticThroughputModel global(hand_workload(), hand_params());
  const Prediction g = global.predict(shape({{gpu(10), 4}}, Architecture::allreduce));
  EXPECT_NEAR(g.step_time_s, 0.025 + 0.156, 1e-12);
  EXPECT_NEAR(g.samples_per_s, 128 / 0.181, 1e-7);
  // One worker: no all-reduce at all.
  const Prediction one = model.predict(shape({{gpu(10), 1}}, Architecture::allreduce));
  EXPECT_NEAR(one.step_time_s, 0.1, 1e-12);
  EXPECT_EQ(one.bottleneck, "compute");
}

cloud::InstanceType located(cloud::InstanceType type, const std::string& region,
                            const std::string& zone) {
  type.region = region;
  type.zone = zone;
  return type;
}

TEST(AnalyticThroughputModel, RingAcrossZonesAndRegionsPaysTheSlowestLinkOnEveryHop) {
  AnalyticParams p = hand_params();
  p.communication.cross_zone_gbps = 4.0;  // 5e8 bytes/s
  p.communication.cross_zone_hop_latency_s = 2e-3;
  p.communication.cross_region_gbps = 0.8;  // 1e8 bytes/s
  p.communication.cross_region_hop_latency_s = 0.01;
  const AnalyticThroughputModel model(per_worker_workload(), p);
  const auto a = located(gpu(10), "r1", "r1-a");
  const auto b = located(gpu(10, "K80b"), "r1", "r1-b");
  const auto c = located(gpu(10, "K80c"), "r2", "r2-a");
  // 2 + 2 workers; one zone: 0.1 + 2 x 3 x 1e-3 + 2 x 3/4 x 1e8 / 1e9 = 0.256 s, as by hand above.
  EXPECT_NEAR(model.predict(shape({{a, 4}}, Architecture::allreduce)).step_time_s, 0.256, 1e-12);
  // Two zones: 0.1 + 6 x 2e-3 + 1.5 x 1e8 / 5e8 = 0.412 s.
  EXPECT_NEAR(model.predict(shape({{a, 2}, {b, 2}}, Architecture::allreduce)).step_time_s, 0.412,
              1e-12);
  // Two regions: 0.1 + 6 x 0.01 + 1.5 x 1e8 / 1e8 = 1.66 s.
  const Prediction regions = model.predict(shape({{a, 2}, {c, 2}}, Architecture::allreduce));
  EXPECT_NEAR(regions.step_time_s, 1.66, 1e-12);
  EXPECT_EQ(regions.bottleneck, "network");
  // A location left empty is anywhere: no link is crossed.
  EXPECT_NEAR(model.predict(shape({{gpu(10), 2}, {c, 2}}, Architecture::allreduce)).step_time_s,
              0.256, 1e-12);
}

TEST(AnalyticThroughputModel, BuiltinResnet32IsSlowerAcrossRegionsThanWithinAZone) {
  const auto catalog = cloud::builtin_catalog("gce-2019");
  const auto k80 = catalog.find("n1-standard-4+k80");
  const auto other_zone = located(k80, "us-east1", "us-east1-b");
  const auto other_region = located(k80, "us-central1", "us-central1-a");
  const AnalyticThroughputModel model(find_workload("resnet-32"), AnalyticParams::builtin());
  const double zone = model.predict(shape({{k80, 8}}, Architecture::allreduce)).step_time_s;
  const double zones =
      model.predict(shape({{k80, 4}, {other_zone, 4}}, Architecture::allreduce)).step_time_s;
  const double regions =
      model.predict(shape({{k80, 4}, {other_region, 4}}, Architecture::allreduce)).step_time_s;
  EXPECT_GT(zones, zone);
  EXPECT_GT(regions, zones);
  EXPECT_GT(regions, 1.2 * zone);  // 14 hops of 15 ms against a step of about 0.2 s
}

TEST(AnalyticThroughputModel, HeterogeneousAllReduceSplitsTheBatchBySpeed) {
  AnalyticParams p = hand_params();
  p.step_overhead_s = 0;
  const AnalyticThroughputModel model(hand_workload(), p);
  // 0.0768 s and 0.1536 s per 128 samples: the global batch of 128 split 2:1 takes
  // 1 / (1/0.0768 + 1/0.1536) = 0.0512 s; the all-reduce of two takes 2 x 1e-3 + 1e8 / 1e9.
  const Prediction mixed =
      model.predict(shape({{gpu(10, "V100"), 1}, {gpu(5, "K80"), 1}}, Architecture::allreduce));
  EXPECT_NEAR(mixed.step_time_s, 0.0512 + 0.102, 1e-12);
  EXPECT_NEAR(mixed.steps_per_s, 1 / 0.1532, 1e-9);
  // Async: each worker at its own pace, R = 1/(0.0768+0.21) + 1/(0.1536+0.21).
  const Prediction async =
      model.predict(shape({{gpu(10, "V100"), 1}, {gpu(5, "K80"), 1}}, Architecture::async_ps));
  const double r = 1 / 0.2868 + 1 / 0.3636;
  EXPECT_NEAR(async.steps_per_s, 1 / (1 / r + 0.11), 1e-9);
}

TEST(AnalyticThroughputModel, FixedPartOfAStepIsNotSplitByTheBatch) {
  AnalyticParams p = hand_params();
  p.communication.batch_scaling.fixed_per_tensor_s = {{"K80", 1e-4}};  // 0.01 s for 100 tensors
  const AnalyticThroughputModel model(hand_workload(), p);
  // Four workers share 128 samples: 0.01 + 0.09 x 32 / 128 = 0.0325 s, plus the all-reduce.
  EXPECT_NEAR(model.predict(shape({{gpu(10), 4}}, Architecture::allreduce)).step_time_s,
              0.0325 + 0.156, 1e-12);
  // One worker alone on the whole batch: 0.1 s, as without the fixed part.
  EXPECT_NEAR(model.predict(shape({{gpu(10), 1}}, Architecture::allreduce)).step_time_s, 0.1,
              1e-12);
  EXPECT_NEAR(model.worker_steps_per_s(gpu(10), Architecture::allreduce), 1 / 0.1, 1e-9);
  // A parameter-server update of 64 samples: 0.01 + 0.045 = 0.055 s of compute.
  Workload small = hand_workload();
  small.batch = {JobBatch::Mode::global, 64};
  const AnalyticThroughputModel ps(small, p);
  EXPECT_NEAR(ps.worker_steps_per_s(gpu(10), Architecture::async_ps), 1 / (0.055 + 0.21), 1e-9);
  EXPECT_NEAR(ps.predict(shape({{gpu(10), 1}}, Architecture::async_ps)).samples_per_s,
              64 * ps.predict(shape({{gpu(10), 1}}, Architecture::async_ps)).steps_per_s, 1e-9);
}

TEST(AnalyticThroughputModel, ServerWithSeveralGpusRunsOneWorkerPerGpuOverLocalLinks) {
  const AnalyticThroughputModel model(per_worker_workload(), hand_params());
  cloud::InstanceType quad = gpu(10, "V100");
  quad.gpus = 4;  // NVLink: 1200 Gbit/s = 1.5e11 bytes/s
  // 2 servers x 4 GPUs = 8 workers of 128 samples, each 0.1 s on one GPU's 10 TFLOPS (not 40).
  // Within a server: 2 x 3 x 1e-5 + 2 x 3/4 x 1e8 / 1.5e11 = 0.00106 s; between the two servers:
  // 2 x 1 x 1e-3 + 2 x 1/2 x 1e8 / 1e9 = 0.102 s.
  const Prediction two = model.predict(shape({{quad, 2}}, Architecture::allreduce));
  EXPECT_NEAR(two.step_time_s, 0.1 + 0.00106 + 0.102, 1e-12);
  EXPECT_NEAR(two.samples_per_s, 1024 / two.step_time_s, 1e-7);
  EXPECT_EQ(shape({{quad, 2}}, Architecture::allreduce).total_workers(), 8);
  EXPECT_EQ(shape({{quad, 2}}, Architecture::allreduce).total_servers(), 2);
  // One server of 4 K80s: PCIe (96 Gbit/s = 1.2e10 bytes/s), no network at all.
  cloud::InstanceType k80s = gpu(10, "K80");
  k80s.gpus = 4;
  k80s.network_gbps = 0;  // never used by a lone server
  EXPECT_NEAR(model.predict(shape({{k80s, 1}}, Architecture::allreduce)).step_time_s,
              0.1 + 6e-5 + 1.5e8 / 1.2e10, 1e-12);
  // Four one-GPU servers pay the network on every hop instead: 0.256 s.
  EXPECT_NEAR(model.predict(shape({{gpu(10, "K80"), 4}}, Architecture::allreduce)).step_time_s,
              0.256, 1e-12);
  // The fixed global batch of 128 over 8 GPUs: 16 samples, 0.0125 s each.
  const AnalyticThroughputModel global(hand_workload(), hand_params());
  EXPECT_NEAR(global.predict(shape({{quad, 2}}, Architecture::allreduce)).step_time_s,
              0.0125 + 0.00106 + 0.102, 1e-12);
  // Asynchronous parameter servers: the four workers of a server share its link, 4 x 0.21 s.
  const double r = 4 / (0.1 + 4 * 0.21);
  EXPECT_NEAR(global.predict(shape({{quad, 1}}, Architecture::async_ps)).steps_per_s,
              1 / (1 / r + 0.11), 1e-9);
}

TEST(AnalyticThroughputModel, EmptyClusterAndGpuLessWorkers) {
  const AnalyticThroughputModel model(hand_workload(), hand_params());
  EXPECT_EQ(model.predict(shape({}, Architecture::async_ps)).steps_per_s, 0.0);
  EXPECT_THROW(model.predict(shape({{gpu(0), 1}}, Architecture::async_ps)), InputError);
}

TEST(AnalyticThroughputModel, ParamsRoundTripThroughJson) {
  // A model file says which GPUs its constants were fitted on (an empty list is refused: no fit
  // writes one); no cost per tensor is written as no per_tensor_s.
  AnalyticParams p = hand_params();
  p.fitted_gpu_tflops = {{"K80", 4.113}};
  const AnalyticParams back = AnalyticParams::from_json(p.to_json(), "test");
  EXPECT_EQ(back.efficiency, p.efficiency);
  EXPECT_EQ(back.per_tensor_s, p.per_tensor_s);
  EXPECT_EQ(back.fitted_gpu_tflops, p.fitted_gpu_tflops);
  EXPECT_DOUBLE_EQ(back.communication.ps_per_tensor_s, p.communication.ps_per_tensor_s);
  AnalyticParams links = p;
  links.communication.cross_region_gbps = 0.5;
  links.communication.cross_zone_hop_latency_s = 1e-3;
  const AnalyticParams links_back = AnalyticParams::from_json(links.to_json(), "test");
  EXPECT_DOUBLE_EQ(links_back.communication.cross_region_gbps, 0.5);
  EXPECT_DOUBLE_EQ(links_back.communication.cross_zone_hop_latency_s, 1e-3);
  EXPECT_THROW(AnalyticParams::from_json({{"efficiency", {{"resnet", -1}}}}, "m.json"), InputError);
}

TEST(AnalyticThroughputModel, BuiltinPredictsCmdareResnet32OnK80) {
  // CM-DARE measured 4.51 steps/s for one K80 and 36.0 for eight (one parameter server).
  const auto catalog = cloud::builtin_catalog("gce-2019");
  const auto k80 = catalog.find("n1-standard-4+k80");
  const AnalyticThroughputModel model(find_workload("resnet-32"), AnalyticParams::builtin());
  EXPECT_NEAR(model.predict(shape({{k80, 1}}, Architecture::async_ps)).steps_per_s, 4.51,
              0.1 * 4.51);
  EXPECT_NEAR(model.predict(shape({{k80, 8}}, Architecture::async_ps)).steps_per_s, 36.0,
              0.1 * 36.0);
}

TEST(FittedThroughputModel, ByHand) {
  FittedParams p;
  p.form = "linear";
  p.features = {"flops_per_tflops", "tensors"};
  p.coefficients = {0.01, 2.0, 1e-3};  // 0.01 + 2 x 0.0384 + 1e-3 x 100 = 0.1868 s on 10 TFLOPS
  p.communication = hand_params().communication;
  EXPECT_NEAR(p.single_step_s(hand_workload(), gpu(10)), 0.1868, 1e-12);
  const FittedThroughputModel model(hand_workload(), p);
  // The step already includes the worker's transfer (0.21 s here, capped at half the step), so
  // one async worker runs at 1 / (0.1868 + S) with S = 0.11 s (sharpness 1).
  EXPECT_NEAR(model.predict(shape({{gpu(10), 1}}, Architecture::async_ps)).steps_per_s,
              1 / (0.1868 + 0.11), 1e-9);
  // All-reduce pays its own communication instead: compute 0.1868 - 0.0934 for 128 samples,
  // a quarter of it for each of four workers sharing the global batch.
  EXPECT_NEAR(model.predict(shape({{gpu(10), 4}}, Architecture::allreduce)).step_time_s,
              0.0934 / 4 + 0.006 + 0.15, 1e-12);
  // A server with 4 GPUs is 4 workers of one GPU each (not one of 40 TFLOPS): with 128 samples
  // each, one worker's compute plus the all-reduce over the server's PCIe (1.2e10 bytes/s).
  cloud::InstanceType quad = gpu(10);
  quad.gpus = 4;
  Workload per_worker = hand_workload();
  per_worker.batch = {JobBatch::Mode::per_worker, 128};
  const FittedThroughputModel four(per_worker, p);
  EXPECT_NEAR(four.predict(shape({{quad, 1}}, Architecture::allreduce)).step_time_s,
              0.0934 + 6e-5 + 1.5e8 / 1.2e10, 1e-12);
  FittedParams log_form = p;
  log_form.form = "log-linear";
  log_form.coefficients = {-1.0, 0.5, 0.0};  // exp(-1) x 0.0384^0.5
  EXPECT_NEAR(log_form.single_step_s(hand_workload(), gpu(10)), std::exp(-1.0) * std::sqrt(0.0384),
              1e-12);
  const auto back = FittedParams::from_json(p.to_json(), "m.json");
  EXPECT_EQ(back.features, p.features);
  nlohmann::json bad = p.to_json();
  bad["features"] = {"flops_per_tflops", "colour"};
  EXPECT_THROW(FittedParams::from_json(bad, "m.json"), InputError);
}

TEST(ThroughputRegistry, BuildsAnalyticAndFitted) {
  ThroughputParams params;
  params.values["workload"] = "resnet-32";
  for (const std::string name : {"analytic", "fitted"}) {
    const auto model = create_throughput_model(name, params);
    EXPECT_EQ(model->name(), name);
    const auto k80 = cloud::builtin_catalog("gce-2019").find("n1-standard-4+k80");
    EXPECT_GT(model->predict(shape({{k80, 2}}, Architecture::async_ps)).steps_per_s, 0);
  }
  params.values["colour"] = "red";
  EXPECT_THROW(create_throughput_model("analytic", params), InputError);
}

TEST(ClusterSpec, ParsesCountsTypesGpusAndMarkets) {
  const auto catalog = cloud::builtin_catalog("gce-2019");
  const ClusterSpec spec =
      parse_cluster_spec("4xk80:spot, 2XN1-STANDARD-4+P100,1xps:on-demand", catalog);
  ASSERT_EQ(spec.entries.size(), 3u);
  EXPECT_EQ(spec.entries[0].count, 4);
  EXPECT_EQ(spec.entries[0].type.name, "n1-standard-4+k80");
  EXPECT_EQ(spec.entries[0].market, cloud::Market::spot);
  EXPECT_EQ(spec.entries[1].type.gpu, "P100");
  EXPECT_EQ(spec.entries[1].market, cloud::Market::on_demand);
  EXPECT_TRUE(spec.entries[2].parameter_server);
  EXPECT_EQ(spec.entries[2].type.gpus, 0);
  EXPECT_EQ(spec.parameter_servers(), 1);
  const ClusterShape s = spec.shape(Architecture::async_ps, spec.parameter_servers());
  EXPECT_EQ(s.total_workers(), 6);
  EXPECT_EQ(s.workers.size(), 2u);
  EXPECT_EQ(parse_cluster_spec("v100", catalog).entries[0].count, 1);
}

TEST(ClusterSpec, BadSpecsAreInputErrorsListingTheCatalog) {
  const auto catalog = cloud::builtin_catalog("gce-2019");
  try {
    parse_cluster_spec("4xa100", catalog);
    FAIL() << "expected an InputError";
  } catch (const InputError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("unknown instance type or GPU \"a100\""), std::string::npos);
    EXPECT_NE(message.find("n1-standard-4+k80 (K80)"), std::string::npos) << message;
  }
  for (const std::string bad : {"", "4x", "0xk80", "4xk80:cheap", "k80,,p100", "1xps"}) {
    EXPECT_THROW(parse_cluster_spec(bad, catalog), InputError) << bad;
  }
}

}  // namespace
}  // namespace transient::perf
