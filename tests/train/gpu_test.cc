// Training on a CUDA GPU (`--device cuda`, issue 14). The first test runs where there is no GPU
// (CI's machines): `--device cuda` is refused there, saying why, before anything is written. The
// others need a GPU and are skipped elsewhere with the reason printed; on a GPU machine the whole
// process suite can also run on it (TRANSIENT_TEST_DEVICE=cuda, cli_process.h).
#include <gtest/gtest.h>
#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include <thread>

#include "train/job_checkpoints.h"
#include "train/job_records.h"
#include "transient/train/cuda_support.h"
#include "transient/train/gradient_buckets.h"
#include "transient/train/group_reaper.h"
#include "transient/train/optimizer.h"

namespace transient::train::testing {
namespace {

// Why this machine has no GPU to test on; empty when it has one.
std::string no_gpu() {
  std::string why;
  return usable_gpus(&why) > 0 ? std::string() : why;
}

#define SKIP_WITHOUT_A_GPU()                                                \
  if (const std::string why = no_gpu(); !why.empty()) {                     \
    GTEST_SKIP() << "needs a CUDA GPU, and this machine has none: " << why; \
  }

TEST(Gpu, DeviceCudaWithoutAGpuIsRefusedWithTheReasonBeforeAnythingIsWritten) {
  if (no_gpu().empty()) GTEST_SKIP() << "this machine has a GPU: --device cuda is accepted here";
  const std::string dir = fresh_dir("gpu-refused");
  const auto refused =
      run_cli(with(small_job(dir + "/job", 1, 10), {"--device", "cuda"}), dir + "/refused");
  EXPECT_EQ(refused.exit_code, kExitBadInput) << refused.err;
  EXPECT_NE(refused.err.find("--device cuda: no GPU: "), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("accepted here: --device cpu or auto"), std::string::npos)
      << refused.err;
  EXPECT_FALSE(fs::exists(dir + "/job"));
  const auto bad = run_cli(with(small_job(dir + "/bad", 1, 10), {"--device", "tpu"}), dir + "/bad");
  EXPECT_EQ(bad.exit_code, kExitBadInput) << bad.err;
  EXPECT_NE(bad.err.find("accepted: auto, cpu, cuda"), std::string::npos) << bad.err;
}

// A small net on the GPU; the same parameters for every member (seeded).
torch::nn::Sequential gpu_net() {
  torch::manual_seed(3);
  torch::nn::Sequential net(torch::nn::Linear(8, 16), torch::nn::ReLU(), torch::nn::Linear(16, 4));
  net->to(torch::kCUDA);
  return net;
}

// The gradients of a plain backward of gpu_net() on `x`, in host memory.
std::vector<torch::Tensor> plain_gradients(const torch::Tensor& x) {
  auto net = gpu_net();
  net->forward(x).pow(2).sum().backward();
  std::vector<torch::Tensor> gradients;
  for (const auto& p : net->parameters()) gradients.push_back(p.grad().cpu());
  return gradients;
}

c10::intrusive_ptr<c10d::ProcessGroupGloo> gloo_group(c10::intrusive_ptr<c10d::Store> store,
                                                      int rank, int size,
                                                      std::chrono::milliseconds timeout) {
  auto options = c10d::ProcessGroupGloo::Options::create(timeout);
  options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
  return make_gloo_group(store, rank, size, options);
}

// The gradients stay on the GPU (the .grad are views into each bucket's device buffer) and are
// summed over Gloo from pinned host memory: every member ends with the members' sum, step after
// step, with the control values summed beside them.
TEST(Gpu, BucketsOfGradientsOnTheGpuEndWithTheMembersSum) {
  SKIP_WITHOUT_A_GPU();
  for (const int n : {2, 3}) {
    SCOPED_TRACE(std::to_string(n) + " members");
    const auto members = static_cast<std::size_t>(n);
    auto store = c10::make_intrusive<c10d::HashStore>();
    std::vector<torch::nn::Sequential> nets;
    std::vector<std::unique_ptr<GradientBuckets>> buckets;
    std::vector<std::vector<torch::Tensor>> inputs(members);  // [rank][step], on the GPU
    for (int rank = 0; rank < n; ++rank) {
      nets.push_back(gpu_net());
      buckets.push_back(
          std::make_unique<GradientBuckets>(nets.back()->parameters(), 64, Compression::kNone));
      for (int step = 0; step < 2; ++step) {
        torch::manual_seed(100 + 10 * step + rank);
        inputs[static_cast<std::size_t>(rank)].push_back(torch::randn({5, 8}).cuda());
      }
    }
    ASSERT_GE(buckets[0]->bucket_count(), 2);
    std::vector<std::vector<std::vector<torch::Tensor>>> seen(members);  // [rank][step][param]
    std::vector<std::vector<double>> losses(members);
    std::vector<std::string> errors(members);
    std::vector<std::thread> threads;
    for (int rank = 0; rank < n; ++rank) {
      threads.emplace_back([&, rank] {
        const auto r = static_cast<std::size_t>(rank);
        try {
          auto group = gloo_group(store, rank, n, std::chrono::seconds(60));
          for (int step = 0; step < 2; ++step) {
            buckets[r]->begin(group);
            buckets[r]->control()[0] = 0.5 + rank;
            nets[r]->forward(inputs[r][static_cast<std::size_t>(step)]).pow(2).sum().backward();
            buckets[r]->finish();
            std::vector<torch::Tensor> gradients;
            for (const auto& p : nets[r]->parameters()) {
              if (!p.grad().is_cuda()) throw std::runtime_error("a gradient left the GPU");
              gradients.push_back(p.grad().cpu());
            }
            seen[r].push_back(gradients);
            losses[r].push_back(buckets[r]->control()[0].item<double>());
          }
        } catch (const std::exception& error) {
          errors[r] = error.what();
        }
      });
    }
    for (auto& thread : threads) thread.join();
    for (const auto& error : errors) ASSERT_EQ(error, "");
    for (int step = 0; step < 2; ++step) {
      std::vector<torch::Tensor> sum;
      for (int rank = 0; rank < n; ++rank) {
        const auto own = plain_gradients(inputs[static_cast<std::size_t>(rank)][step]);
        if (sum.empty()) {
          sum = own;
        } else {
          for (std::size_t p = 0; p < own.size(); ++p) sum[p] += own[p];
        }
      }
      for (std::size_t r = 0; r < members; ++r) {
        for (std::size_t p = 0; p < sum.size(); ++p) {
          EXPECT_TRUE(torch::allclose(seen[r][step][p], sum[p], 1e-5, 1e-6))
              << "member " << r << ", step " << step << ", parameter " << p;
        }
        EXPECT_DOUBLE_EQ(losses[r][step], n == 2 ? 2.0 : 4.5);
      }
    }
  }
}

// A member lost in the sum leaves the survivor its own gradients on the GPU (the failed sum never
// reaches the device buffers), so that the step can be resumed from them.
TEST(Gpu, AFailedSumLeavesTheMembersOwnGradientsOnTheGpu) {
  SKIP_WITHOUT_A_GPU();
  auto store = c10::make_intrusive<c10d::HashStore>();
  auto net = gpu_net();
  GradientBuckets buckets(net->parameters(), 64, Compression::kNone);
  torch::manual_seed(7);
  const auto x = torch::randn({5, 8}).cuda();
  std::string error;
  std::thread lost([&] {
    try {
      auto group = gloo_group(store, 1, 2, std::chrono::seconds(5));
      store->set("formed", std::vector<uint8_t>{1});
      store->wait({"tried"});  // then its group goes, closing its connections
    } catch (const std::exception& e) {
      error = e.what();
    }
  });
  auto group = gloo_group(store, 0, 2, std::chrono::seconds(5));
  store->wait({"formed"});
  store->set("tried", std::vector<uint8_t>{1});
  buckets.begin(group);
  net->forward(x).pow(2).sum().backward();
  lost.join();
  ASSERT_EQ(error, "");
  EXPECT_THROW(buckets.finish(), CollectiveFailure);
  EXPECT_TRUE(buckets.holds_own_gradients());
  const auto own = plain_gradients(x);
  std::size_t p = 0;
  for (const auto& parameter : net->parameters()) {
    EXPECT_TRUE(torch::allclose(parameter.grad().cpu(), own[p++], 1e-6, 1e-7));
  }
}

// SGD on the GPU steps with multi-tensor kernels (optimizer.cc): the same step as libtorch's SGD
// on the CPU, with momentum, Nesterov's and weight decay, up to the last bits of float sums.
TEST(Gpu, SgdOnTheGpuStepsAsLibtorchsSgdOnTheCpu) {
  SKIP_WITHOUT_A_GPU();
  for (const bool nesterov : {false, true}) {
    OptimizerSettings settings;
    settings.name = "sgd";
    settings.momentum = 0.9;
    settings.nesterov = nesterov;
    settings.weight_decay = 1e-3;
    torch::manual_seed(5);
    std::vector<torch::Tensor> cpu{torch::randn({7, 3}).requires_grad_(),
                                   torch::randn({5}).requires_grad_()};
    std::vector<torch::Tensor> gpu;
    for (const auto& p : cpu) gpu.push_back(p.detach().cuda().requires_grad_());
    Optimizer on_cpu(settings, cpu);
    Optimizer on_gpu(settings, gpu);
    for (int step = 0; step < 3; ++step) {
      for (std::size_t i = 0; i < cpu.size(); ++i) {
        const auto gradient = torch::randn(cpu[i].sizes());
        cpu[i].mutable_grad() = gradient.clone();
        gpu[i].mutable_grad() = gradient.cuda();
      }
      on_cpu.step(0.1);
      on_gpu.step(0.1);
    }
    for (std::size_t i = 0; i < cpu.size(); ++i) {
      EXPECT_TRUE(torch::allclose(gpu[i].detach().cpu(), cpu[i].detach(), 1e-6, 1e-6))
          << (nesterov ? "nesterov, " : "") << "parameter " << i;
    }
  }
}

// Two workers sharing the GPU learn what two on the CPU learn (not bit for bit: the GPU's kernels
// add in other orders), in fp32, bf16 and fp16 (with its loss scale), and a job paused on the GPU
// resumes on the CPU from its checkpoint (written from host copies of the GPU's tensors).
TEST(Gpu, WorkersOnTheGpuLearnAsOnTheCpuAndTheirCheckpointResumesOnTheCpu) {
  SKIP_WITHOUT_A_GPU();
  const std::string dir = fresh_dir("gpu-learns");
  const std::string cpu = dir + "/cpu";
  run_ok(with(small_job(cpu, 2, 60), {"--device", "cpu"}), cpu);
  const double reference = summary_of(cpu).at("test_accuracy").get<double>();
  for (const char* precision : {"fp32", "bf16", "fp16"}) {
    const std::string gpu = dir + "/gpu-" + precision;
    const auto result =
        run_ok(with(small_job(gpu, 2, 60), {"--device", "cuda", "--precision", precision}), gpu);
    const double accuracy = summary_of(gpu).at("test_accuracy").get<double>();
    std::printf("test accuracy: %s on the GPU %.4f, fp32 on the CPU %.4f\n", precision, accuracy,
                reference);
    std::fflush(stdout);
    EXPECT_NEAR(accuracy, reference, 0.03);
    EXPECT_FALSE(bitwise_equal(latest_checkpoint(gpu), latest_checkpoint(cpu)))
        << "the GPU computed what the CPU did: the job did not train there";
  }
  const std::string paused = dir + "/paused";
  run_paused(with(small_job(paused, 2, 60), {"--device", "cuda", "--stop-at", "30"}), paused);
  run_ok({"train", "--resume", "--workers", "2", "--threads", "1", "--device", "cpu", "--job-dir",
          paused},
         paused + "-resumed");
  EXPECT_EQ(summary_of(paused).at("steps"), 60);
  EXPECT_NEAR(summary_of(paused).at("test_accuracy").get<double>(), reference, 0.03);
}

// A worker killed on the GPU is recovered from in place: the survivors, still holding their
// state and gradients on the GPU, go on with a replacement that takes the state from them.
TEST(Gpu, AKilledGpuWorkerIsRecoveredFromInPlaceAndReplaced) {
  SKIP_WITHOUT_A_GPU();
  const std::string dir = fresh_dir("gpu-kill");
  const auto result =
      run_ok(with(small_job(dir, 3, 300), {"--device", "cuda", "--revoke", "kill@step60:rank1",
                                           "--replace", "0s", "--heartbeat-timeout", "30s"}),
             dir);
  EXPECT_NE(result.err.find("recovered from the loss of"), std::string::npos) << result.err;
  const auto events = read_events(dir);
  const auto recoveries = events_named(events, "recovery");
  ASSERT_EQ(recoveries.size(), 1u);
  EXPECT_LE(recoveries[0].at("redone_steps").get<int>(), 1);
  std::printf("recovery on the GPU: %.3f s\n", recoveries[0].at("duration_s").get<double>());
  std::fflush(stdout);
  EXPECT_EQ(events_named(events, "generation").back().at("members").size(), 3u);
  const auto summary = summary_of(dir);
  EXPECT_EQ(summary.at("steps"), 300);
  EXPECT_GT(summary.at("test_accuracy").get<double>(), 0.7);
}

}  // namespace
}  // namespace transient::train::testing
