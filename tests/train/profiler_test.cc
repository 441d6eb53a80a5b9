#include "transient/train/profiler.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "train/cli_here.h"
#include "train/cli_process.h"
#include "transient/core/error.h"
#include "transient/perf/workload.h"

namespace transient::train {
namespace {

using testing::fresh_dir;
using testing::run_cli;
using testing::run_here;

ProfileOptions quick(const std::string& model) {
  ProfileOptions options;
  options.model = model;
  options.batch = 4;
  options.iterations = 1;
  options.warmup = 0;
  options.threads = 1;
  return options;
}

const ProfiledLayer& layer_named(const ModelProfile& profile, const std::string& name) {
  for (const auto& layer : profile.layers) {
    if (layer.name == name) return layer;
  }
  throw std::runtime_error("no layer " + name);
}

// TorchScript files exported by Python's torch (the python3 of the torch we build against), once.
class ProfileTorchScript : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fresh_dir("profile-torchscript");
    const std::string script = dir_ + "/export.py";
    std::ofstream(script) << "import sys, torch\n"
                             "from torch import nn\n"
                             "d = sys.argv[1]\n"
                             "torch.jit.script(nn.Linear(100, 7)).save(d + '/linear.pt')\n"
                             "torch.jit.script(nn.Conv2d(3, 5, 3, stride=2, padding=1))"
                             ".save(d + '/conv.pt')\n"
                             "torch.jit.script(nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), "
                             "nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(8 * 14 * 14, "
                             "10))).save(d + '/small.pt')\n";
    exported_ =
        std::system((std::string(TRANSIENT_PYTHON_COMMAND) + " " + script + " " + dir_).c_str()) ==
        0;
  }
  static std::string dir_;
  static bool exported_;
};
std::string ProfileTorchScript::dir_;
bool ProfileTorchScript::exported_ = false;

TEST(Profile, FormulasAreTwoFlopsPerMultiplyAdd) {
  EXPECT_DOUBLE_EQ(linear_flops(3136, 128), 2.0 * 3136 * 128);
  EXPECT_DOUBLE_EQ(conv2d_flops(32, 64, 1, 3, 3, 14, 14), 2.0 * 64 * 14 * 14 * 288);
  EXPECT_DOUBLE_EQ(conv2d_flops(32, 64, 4, 3, 3, 14, 14), 2.0 * 64 * 14 * 14 * 72);
}

TEST(Profile, CnnTotalsMatchAHandComputation) {
  const auto profile = profile_model(quick("cnn"));
  const double conv1 = 2.0 * 32 * 28 * 28 * 9;
  const double conv2 = 2.0 * 64 * 14 * 14 * 288;
  const double fc1 = 2.0 * 3136 * 128;
  const double fc2 = 2.0 * 128 * 10;
  EXPECT_DOUBLE_EQ(layer_named(profile, "conv1").forward_flops, conv1);
  EXPECT_DOUBLE_EQ(layer_named(profile, "conv2").forward_flops, conv2);
  EXPECT_DOUBLE_EQ(layer_named(profile, "fc1").forward_flops, fc1);
  EXPECT_DOUBLE_EQ(layer_named(profile, "fc2").forward_flops, fc2);
  EXPECT_EQ(layer_named(profile, "conv2").output_shape, (std::vector<std::int64_t>{64, 14, 14}));
  EXPECT_DOUBLE_EQ(profile.forward_flops_per_sample, conv1 + conv2 + fc1 + fc2);
  EXPECT_DOUBLE_EQ(profile.backward_flops_per_sample, 2 * (conv1 + conv2 + fc1 + fc2));
  EXPECT_EQ(profile.parameters, 421642);
  EXPECT_EQ(profile.tensors, 8);
  EXPECT_DOUBLE_EQ(profile.gradient_bytes, 4.0 * 421642);
  EXPECT_DOUBLE_EQ(profile.largest_tensor_bytes, 4.0 * 3136 * 128);
  EXPECT_GT(profile.forward_backward_s, 0.0);
  EXPECT_GT(profile.optimizer_step_s, 0.0);
  EXPECT_FALSE(profile.device.empty());
}

TEST(Profile, ResNet20CountsEveryConvolutionIncludingTheShortcuts) {
  const auto profile = profile_model(quick("resnet20"));
  // Stage 2's first block: 16 -> 32 channels, stride 2, from 28x28 to 14x14.
  EXPECT_DOUBLE_EQ(layer_named(profile, "stage2_block1.conv1").forward_flops,
                   2.0 * 32 * 14 * 14 * 16 * 9);
  EXPECT_DOUBLE_EQ(layer_named(profile, "stage2_block1.shortcut_conv").forward_flops,
                   2.0 * 32 * 14 * 14 * 16);
  EXPECT_EQ(layer_named(profile, "stage3_block3.conv2").output_shape,
            (std::vector<std::int64_t>{64, 7, 7}));
  EXPECT_DOUBLE_EQ(layer_named(profile, "fc").forward_flops, 2.0 * 64 * 10);
  EXPECT_EQ(profile.family, "resnet");
}

TEST_F(ProfileTorchScript, SingleLinearAndConv2dMatchTheFormula) {
  ASSERT_TRUE(exported_) << TRANSIENT_PYTHON " could not export the TorchScript files";
  auto options = quick(dir_ + "/linear.pt");
  options.channels = 1;
  options.height = 1;
  options.width = 100;
  const auto linear = profile_model(options);
  EXPECT_DOUBLE_EQ(linear.forward_flops_per_sample, 2.0 * 100 * 7);
  EXPECT_EQ(linear.parameters, 100 * 7 + 7);

  options = quick(dir_ + "/conv.pt");
  options.channels = 3;
  options.height = 9;
  options.width = 9;
  const auto conv = profile_model(options);
  ASSERT_EQ(conv.layers.size(), 1u);
  EXPECT_EQ(conv.layers[0].output_shape, (std::vector<std::int64_t>{5, 5, 5}));
  EXPECT_DOUBLE_EQ(conv.forward_flops_per_sample, 2.0 * 5 * 5 * 5 * (3 * 3 * 3));
}

TEST_F(ProfileTorchScript, ASequentialFileProfilesThroughTheCli) {
  ASSERT_TRUE(exported_) << TRANSIENT_PYTHON " could not export the TorchScript files";
  const auto out = dir_ + "/small.json";
  const auto result = run_cli({"profile", "--model", dir_ + "/small.pt", "--batch", "8",
                               "--iterations", "2", "--threads", "1", "-o", out},
                              dir_ + "/small");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto workload = perf::load_workload_profile(out);
  EXPECT_EQ(workload.name, "small");
  EXPECT_DOUBLE_EQ(workload.forward_flops_per_sample,
                   2.0 * 8 * 28 * 28 * 9 + 2.0 * 8 * 14 * 14 * 10);
  // The profile names the file it measured, so a plan made with it runs that model: the flags
  // it emits for `transient coordinator` carry --model with the file's absolute path.
  const std::string model = std::filesystem::absolute(dir_ + "/small.pt").lexically_normal();
  EXPECT_EQ(workload.model, model);
  const auto plan = run_cli({"plan", "--profile", out, "--steps", "1000", "--deadline", "2h",
                             "--runs", "20", "--threads", "1", "--emit-train-flags"},
                            dir_ + "/plan");
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  EXPECT_NE(plan.out.find("--model " + model + "\n"), std::string::npos) << plan.out;
  EXPECT_EQ(plan.err, "");
}

TEST(Profile, TheWrittenProfileLoadsAndPredicts) {
  const auto dir = fresh_dir("profile-cnn");
  const auto out = dir + "/cnn.json";
  const auto result = run_cli({"profile", "--model", "cnn", "--batch", "32", "--iterations", "2",
                               "--threads", "1", "-o", out},
                              dir + "/profile");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("conv2"), std::string::npos) << result.out;
  const auto workload = perf::load_workload_profile(out);
  EXPECT_EQ(workload.name, "cnn");
  EXPECT_EQ(workload.batch_per_worker, 32);
  EXPECT_EQ(workload.parameters, 421642);
  EXPECT_EQ(workload.tensors, 8);
  EXPECT_DOUBLE_EQ(
      workload.forward_flops_per_sample,
      2.0 * 32 * 28 * 28 * 9 + 2.0 * 64 * 14 * 14 * 288 + 2.0 * 3136 * 128 + 2.0 * 128 * 10);
  ASSERT_TRUE(workload.measured.has_value());
  EXPECT_EQ(workload.measured->device, cpu_model_name());
  EXPECT_GT(workload.measured->step_time_s, 0.0);

  const auto predict =
      run_cli({"predict", "--profile", out, "--cluster", "2xk80"}, dir + "/predict");
  EXPECT_EQ(predict.exit_code, 0) << predict.err;
  EXPECT_FALSE(predict.out.empty());
}

// --trace: the steps after the timed ones, under PyTorch's profiler, as a Chrome trace whose
// ranges name each step and its two halves and whose operators carry their inputs' shapes.
TEST(Profile, ATraceHoldsEveryTracedStepWithItsOperatorsAndTheirShapes) {
  const auto dir = fresh_dir("profile-trace");
  auto options = quick("mlp");
  options.iterations = 3;
  options.trace_path = dir + "/trace.json";
  profile_model(options);
  std::ifstream in(options.trace_path);
  ASSERT_TRUE(in) << options.trace_path;
  const auto trace = nlohmann::json::parse(in);
  std::map<std::string, int> named;
  bool input_shown = false;
  for (const auto& event : trace.at("traceEvents")) {
    const std::string name = event.value("name", "");
    ++named[name];
    if (name == "aten::addmm" && event.contains("args") &&
        event.at("args").contains("Input Dims")) {
      // The first layer: a batch of 4 flattened 28x28 images into 256 units.
      input_shown = input_shown ||
                    event.at("args").at("Input Dims").dump().find("[4,784]") != std::string::npos;
    }
  }
  EXPECT_EQ(named["transient::step"], 3);
  EXPECT_EQ(named["transient::forward_backward"], 3);
  EXPECT_EQ(named["transient::optimizer_step"], 3);
  EXPECT_GE(named["aten::addmm"], 6);  // two linear layers a step
  EXPECT_TRUE(input_shown);
  EXPECT_FALSE(std::filesystem::exists(options.trace_path + ".partial"));

  // A place it cannot be written is refused before anything runs: one line, exit code 2.
  const auto refused = run_here(
      {"profile", "--model", "mlp", "--batch", "4", "--trace", dir + "/no/such/dir/trace.json"});
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_EQ(refused.err, "error: " + dir +
                             "/no/such/dir/trace.json: --trace: cannot write here "
                             "(No such file or directory)\n");
  // So is an -o that cannot be written: it failed after the timing, with a message that did not
  // name the flag (and nothing but the error on stdout either way).
  const auto no_output =
      run_here({"profile", "--model", "mlp", "--batch", "4", "-o", dir + "/no/such/dir/mlp.json"});
  EXPECT_EQ(no_output.exit_code, 2);
  EXPECT_EQ(no_output.err, "error: " + dir + "/no/such/dir/mlp.json: -o: the directory " + dir +
                               "/no/such/dir does not exist or is not writable; accepted: a file "
                               "in a writable directory\n");
  EXPECT_EQ(no_output.out, "");
}

TEST(Profile, ABadModelIsOneErrorLineAndExitTwo) {
  const auto dir = fresh_dir("profile-bad");
  const auto unknown = run_here({"profile", "--model", "nosuch", "--batch", "8"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_EQ(unknown.err.rfind("error: ", 0), 0u) << unknown.err;
  EXPECT_EQ(unknown.err.find('\n'), unknown.err.size() - 1) << unknown.err;
  EXPECT_NE(unknown.err.find("resnet32"), std::string::npos) << unknown.err;

  const auto garbage = dir + "/garbage.pt";
  std::ofstream(garbage) << "not a TorchScript archive\n";
  const auto bad_file = run_here({"profile", "--model", garbage, "--batch", "8"});
  EXPECT_EQ(bad_file.exit_code, 2);
  EXPECT_EQ(bad_file.err.rfind("error: ", 0), 0u) << bad_file.err;
  EXPECT_EQ(bad_file.err.find('\n'), bad_file.err.size() - 1) << bad_file.err;
  EXPECT_NE(bad_file.err.find(garbage), std::string::npos) << bad_file.err;
  // The same refusal as `transient train --model` gives: both read model files one way.
  EXPECT_NE(bad_file.err.find("not a TorchScript file"), std::string::npos) << bad_file.err;

  // Sizes libtorch cannot allocate are refused where they enter (review: an internal failure,
  // "DefaultCPUAllocator: can't allocate memory: you tried to allocate 10240000000000 bytes").
  const auto huge =
      run_here({"profile", "--model", "mlp", "--batch", "8", "--input", "1x100000x100000"});
  EXPECT_EQ(huge.exit_code, 2) << huge.err;
  EXPECT_EQ(huge.err,
            "error: --input: 1x100000x100000 is out of range; accepted: 1 to 4096 "
            "channels, height and width\n");
  const auto batch =
      run_here({"profile", "--model", "mlp", "--batch", "1000000", "--input", "3x4096x4096"});
  EXPECT_EQ(batch.exit_code, 2) << batch.err;
  EXPECT_EQ(batch.err.rfind("error: --batch 1000000 of --input 3x4096x4096: the step's input alone "
                            "is 187500.0 GiB, more than this machine's ",
                            0),
            0u)
      << batch.err;
  EXPECT_EQ(batch.err.find('\n'), batch.err.size() - 1) << batch.err;
}

// The networks CM-DARE measured and two ways of pooling, exported by tests/train/cmdare_models.py
// (each test exports what it profiles: CTest runs every test in a process of its own).
bool export_reference_networks(const std::string& dir, const std::string& names) {
  return std::system((std::string(TRANSIENT_PYTHON_COMMAND) + " " + TRANSIENT_SOURCE_DIR +
                      "/tests/train/cmdare_models.py " + dir + " " + names)
                         .c_str()) == 0;
}

ModelProfile profile_of(const std::string& file, std::int64_t channels, std::int64_t side) {
  auto options = quick(file);
  options.batch = 2;
  options.channels = channels;
  options.height = side;
  options.width = side;
  return profile_model(options);
}

// F.max_pool2d and a matrix product in forward() count as MaxPool2d and Linear modules do: what
// runs is counted, not what the submodules declare.
TEST(ProfileReferenceNetworks, FunctionalPoolingCountsAsAModuleDoes) {
  const std::string dir = fresh_dir("profile-pooling");
  ASSERT_TRUE(export_reference_networks(dir, "module-pooling functional-pooling"))
      << TRANSIENT_PYTHON " could not export the TorchScript files";
  const double expected = 2.0 * 8 * 28 * 28 * 9 + 2.0 * 16 * 14 * 14 * 72 + 2.0 * 784 * 10;
  const auto modules = profile_of(dir + "/module-pooling.pt", 1, 28);
  const auto functions = profile_of(dir + "/functional-pooling.pt", 1, 28);
  EXPECT_DOUBLE_EQ(modules.forward_flops_per_sample, expected);
  EXPECT_DOUBLE_EQ(functions.forward_flops_per_sample, expected);
  EXPECT_EQ(functions.parameters, modules.parameters);
  std::vector<std::vector<std::int64_t>> pools;
  for (const auto& layer : functions.layers) {
    if (layer.type == "max_pool2d") pools.push_back(layer.output_shape);
  }
  EXPECT_EQ(pools, (std::vector<std::vector<std::int64_t>>{{8, 14, 14}, {16, 7, 7}}));
}

// One FLOP convention (perf/workload.h): the networks CM-DARE measured, rebuilt from their papers
// with its parameter counts, count as their built-in workloads do, and a profile of CM-DARE's
// ResNet-32 predicts what the built-in resnet-32 does.
TEST(ProfileReferenceNetworks, TheNetworksCmdareMeasuredProfileAsItsBuiltInWorkloads) {
  const std::string dir = fresh_dir("profile-cmdare-networks");
  ASSERT_TRUE(export_reference_networks(dir, "res32-32-64-128 shake26-2x32d shake26-2x96d"))
      << TRANSIENT_PYTHON " could not export the TorchScript files";
  for (const auto& [file, workload] :
       std::vector<std::pair<std::string, std::string>>{{"res32-32-64-128.pt", "resnet-32"},
                                                        {"shake26-2x32d.pt", "shake-shake-small"},
                                                        {"shake26-2x96d.pt", "shake-shake-big"}}) {
    const auto profile = profile_of(dir + "/" + file, 3, 32);
    const auto& builtin = perf::find_workload(workload);
    EXPECT_NEAR(static_cast<double>(profile.parameters), static_cast<double>(builtin.parameters),
                0.002 * static_cast<double>(builtin.parameters))
        << file;
    EXPECT_NEAR(profile.forward_flops_per_sample, builtin.forward_flops_per_sample,
                0.005 * builtin.forward_flops_per_sample)
        << file << " against " << workload;
  }

  // Profiled as a ResNet at 8 samples, and predicted at the built-in's global batch of 128 (a
  // prediction's batch is the profile's unless given): a prediction does not depend on the batch
  // a profile was taken at (262373a; profiling at 128 cost the test 5.6 s of CPU).
  const std::string profile_json = dir + "/res32.json";
  const auto profiled = run_cli({"profile", "--model", dir + "/res32-32-64-128.pt", "--input",
                                 "3x32x32", "--batch", "8", "--iterations", "1", "--warmup", "0",
                                 "--threads", "1", "--family", "resnet", "-o", profile_json},
                                dir + "/res32-profile");
  ASSERT_EQ(profiled.exit_code, 0) << profiled.err;
  auto samples_per_s = [&](const std::string& cluster, const std::vector<std::string>& what) {
    auto args = std::vector<std::string>{"predict", "--cluster", cluster, "--json"};
    args.insert(args.end(), what.begin(), what.end());
    const auto result = run_cli(args, dir + "/predict");
    EXPECT_EQ(result.exit_code, 0) << result.err;
    return nlohmann::json::parse(result.out).at("samples_per_s").get<double>();
  };
  for (const std::string cluster : {"4xk80", "2xp100"}) {
    const double builtin = samples_per_s(cluster, {"--workload", "resnet-32"});
    EXPECT_NEAR(samples_per_s(cluster, {"--profile", profile_json, "--global-batch", "128"}),
                builtin, 0.15 * builtin)
        << cluster;
  }
}

}  // namespace
}  // namespace transient::train
