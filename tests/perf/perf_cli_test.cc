// `transient predict` and `transient fit` through the real binary.
#include <gtest/gtest.h>

#include "common/cli_run.h"

#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace {

using transient::testing::CliResult;
using transient::testing::kProfileAtTheBounds;
using transient::testing::kProfileFlops1e100;
using transient::testing::run_cli;
using transient::testing::TempFile;

TEST(PredictCli, UnknownTypeListsTheCatalogTypes) {
  const CliResult r = run_cli("predict --workload resnet-32 --cluster 4xa100:spot");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_EQ(r.out.rfind("error: cluster \"4xa100:spot\": unknown instance type or GPU \"a100\"", 0),
            0u)
      << r.out;
  for (const std::string type :
       {"n1-standard-4+k80", "n1-standard-4+p100", "n1-standard-4+v100", "n1-standard-4"}) {
    EXPECT_NE(r.out.find(type), std::string::npos) << type << "\n" << r.out;
  }
  const CliResult aws =
      run_cli("predict --workload resnet-32 --cluster 2xk80 --catalog aws-deepvm");
  EXPECT_EQ(aws.exit_code, 2);
  EXPECT_NE(aws.out.find("g4dn.xlarge (T4)"), std::string::npos) << aws.out;
}

TEST(PredictCli, JsonHasTheFigures) {
  const CliResult r = run_cli("predict --workload resnet-32 --cluster 4xk80:spot --arch ps --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto json = nlohmann::json::parse(r.out);
  EXPECT_GT(json.at("steps_per_s").get<double>(), 10.0);
  EXPECT_NEAR(json.at("samples_per_s").get<double>(), 128 * json.at("steps_per_s").get<double>(),
              1e-6);
  EXPECT_NEAR(json.at("step_time_s").get<double>(), 4 / json.at("steps_per_s").get<double>(), 1e-9);
  EXPECT_FALSE(json.at("bottleneck").get<std::string>().empty());
  const CliResult text = run_cli("predict --workload shake-shake-big --cluster 8xp100 --arch ps");
  EXPECT_EQ(text.exit_code, 0) << text.out;
  EXPECT_NE(text.out.find("bottleneck: parameter server"), std::string::npos) << text.out;
}

// All-reduce is the default, as `plan` and `train` have it; the step is the whole cluster's
// synchronous step of the global batch (128 for resnet-32), split among the workers.
TEST(PredictCli, DefaultIsAllReduceWithTheWorkloadsGlobalBatch) {
  const CliResult r = run_cli("predict --workload resnet-32 --cluster 4xk80:spot --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto json = nlohmann::json::parse(r.out);
  EXPECT_EQ(json.at("architecture"), "allreduce");
  EXPECT_EQ(json.at("global_batch"), 128);
  EXPECT_EQ(json.at("step_samples"), 128);
  EXPECT_EQ(json.at("workers"), 4);
  EXPECT_NEAR(json.at("samples_per_s").get<double>(), 128 * json.at("steps_per_s").get<double>(),
              1e-6);
  EXPECT_NEAR(json.at("step_time_s").get<double>(), 1 / json.at("steps_per_s").get<double>(), 1e-9);
  // A batch per worker: each of the 4 takes 128, a step is 512 samples and takes longer.
  const CliResult w =
      run_cli("predict --workload resnet-32 --cluster 4xk80:spot --per-worker-batch 128 --json");
  ASSERT_EQ(w.exit_code, 0) << w.out;
  const auto per_worker = nlohmann::json::parse(w.out);
  EXPECT_EQ(per_worker.at("per_worker_batch"), 128);
  EXPECT_EQ(per_worker.at("step_samples"), 512);
  EXPECT_GT(per_worker.at("step_time_s").get<double>(), json.at("step_time_s").get<double>());
  EXPECT_GT(per_worker.at("samples_per_s").get<double>(), json.at("samples_per_s").get<double>());
  const CliResult text = run_cli("predict --workload resnet-32 --cluster 4xk80:spot");
  EXPECT_NE(text.out.find("allreduce; global batch 128"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("per step of 128 samples (32 per worker)"), std::string::npos)
      << text.out;
  // Workers of two types split the step by speed, not 32 each.
  const CliResult mixed =
      run_cli("predict --workload resnet-32 --cluster 2xv100,2xk80 --arch allreduce");
  ASSERT_EQ(mixed.exit_code, 0) << mixed.out;
  EXPECT_NE(mixed.out.find("per step of 128 samples (split among the workers in proportion to "
                           "their speed)"),
            std::string::npos)
      << mixed.out;
  EXPECT_EQ(mixed.out.find("per worker)"), std::string::npos) << mixed.out;
  // Samples are counted whole: 10,001 workers of one sample each was "1e+04 samples".
  const CliResult many =
      run_cli("predict --workload resnet-32 --cluster 10001xk80 --per-worker-batch 1");
  ASSERT_EQ(many.exit_code, 0) << many.out;
  EXPECT_NE(many.out.find("per step of 10001 samples (1 per worker)"), std::string::npos)
      << many.out;
  const CliResult split =
      run_cli("predict --workload resnet-32 --cluster 3xk80 --global-batch 128");
  ASSERT_EQ(split.exit_code, 0) << split.out;
  EXPECT_NE(split.out.find("per step of 128 samples (42.67 per worker)"), std::string::npos)
      << split.out;
}

TEST(PredictCli, BothBatchFlagsAreOneLineError) {
  const CliResult r = run_cli(
      "predict --workload resnet-32 --cluster 4xk80 --global-batch 256 --per-worker-batch 64");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_EQ(r.out,
            "error: --global-batch and --per-worker-batch exclude each other; accepted: one of "
            "them (a fixed global batch split among the workers, or a fixed batch per worker)\n");
  const CliResult bad = run_cli("predict --workload resnet-32 --cluster 4xk80 --global-batch -3");
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
  EXPECT_NE(bad.out.find("--global-batch"), std::string::npos) << bad.out;
}

// An 8-GPU server is 8 workers over NVLink; 8 one-GPU servers are 8 workers over the network.
// A global batch smaller than the all-reduce workers gave each a fraction of a sample
// (`--global-batch 3` on 4 K80s: 0.75 per worker), and `plan --evaluate 200xk80
// --emit-train-flags` wrote a job of 128 samples for 200 workers that `transient train` refuses.
// predict and plan refuse it in train's words; with parameter servers every worker takes the
// whole batch.
TEST(PredictCli, AGlobalBatchSmallerThanTheWorkersIsRefusedAsTrainRefusesIt) {
  transient::testing::expect_one_line_error(
      run_cli("predict --workload resnet-32 --cluster 4xk80 --global-batch 3"),
      "error: --global-batch: 3 samples a step for 4 workers would leave a worker without any; "
      "accepted: a global batch of at least the workers, or fewer workers");
  EXPECT_EQ(run_cli("predict --workload resnet-32 --cluster 4xk80 --global-batch 4").exit_code, 0);
  EXPECT_EQ(
      run_cli("predict --workload resnet-32 --cluster 4xk80 --global-batch 3 --arch ps").exit_code,
      0);
  transient::testing::expect_one_line_error(
      run_cli("plan --workload resnet-32 --steps 64000 --evaluate 200xk80 --runs 0 "
              "--emit-train-flags"),
      "error: --global-batch (not given: the workload's batch): 128 samples a step for 200 "
      "workers would leave a worker without any; accepted: a global batch of at least the "
      "workers, or fewer workers");
}

// `--ps 2` with the default all-reduce architecture was ignored; docs/errors.md: a flag another
// makes meaningless is refused where it is written.
TEST(PredictCli, ParameterServersWithAllReduceAreRefused) {
  transient::testing::expect_one_line_error(
      run_cli("predict --workload resnet-32 --cluster 4xk80 --ps 2"),
      "error: --ps 2: parameter servers are for --arch ps; the all-reduce architecture (the "
      "default, what `transient train` runs) has none; accepted: --ps with --arch ps");
  EXPECT_EQ(run_cli("predict --workload resnet-32 --cluster 4xk80 --ps 2 --arch ps").exit_code, 0);
  // The same servers written in the cluster were ignored too, by predict and by plan --evaluate.
  transient::testing::expect_one_line_error(
      run_cli("predict --workload resnet-32 --cluster 4xk80,1xps"),
      "error: --cluster 4xk80,1xps: has parameter servers (ps), which the all-reduce architecture "
      "(the default, what `transient train` runs) does not use; accepted: a cluster of workers "
      "only, or --arch ps");
  EXPECT_EQ(run_cli("predict --workload resnet-32 --cluster 4xk80,1xps --arch ps").exit_code, 0);
  transient::testing::expect_one_line_error(
      run_cli("plan --workload resnet-32 --steps 64000 --runs 0 --evaluate 4xk80:spot,1xps"),
      "error: --evaluate 4xk80:spot,1xps: has parameter servers (ps), which the all-reduce "
      "architecture (the default, what `transient train` runs) does not use; accepted: a cluster "
      "of workers only, or --arch ps");
}

// --ps 3 beside a spec with 1 ps silently replaced the spec's count: two counts are refused,
// one count given twice is not.
TEST(PredictCli, ParameterServersCountedInTwoPlacesThatDifferAreRefused) {
  transient::testing::expect_one_line_error(
      run_cli("predict --workload resnet-32 --arch ps --cluster 8xk80,1xps --ps 3"),
      "error: --ps 3: the --cluster 8xk80,1xps has 1 parameter server; accepted: the count in one "
      "place, --ps or ps entries of the spec");
  EXPECT_EQ(run_cli("predict --workload resnet-32 --arch ps --cluster 8xk80,1xps --ps 1").exit_code,
            0);
  EXPECT_EQ(run_cli("predict --workload resnet-32 --arch ps --cluster 8xk80 --ps 3").exit_code, 0);
}

// A catalog without network_gbps (optional, catalog.h) failed for clusters of several servers
// with an error naming no file: it names the catalog and the column; a lone server needs none.
TEST(PredictCli, ACatalogWithoutNetworkIsNamedWhereTheModelNeedsIt) {
  const TempFile catalog("transient_perf_no_network.csv",
                         "type,gpu,gpus,gpu_tflops,on_demand_usd_h,spot_usd_h\n"
                         "k,K80,1,4.1,0.7,0.2\n"
                         "cpu,,0,0,0.1,\n");
  const std::string error = "error: --catalog " + catalog.path() +
                            ": instance type k has no network_gbps (the column is empty or "
                            "missing)";
  transient::testing::expect_one_line_error(
      run_cli("predict --workload resnet-32 --cluster 2xk --catalog " + catalog.path()), error);
  transient::testing::expect_one_line_error(
      run_cli("predict --workload resnet-32 --cluster 1xk --arch ps --catalog " + catalog.path()),
      error);
  EXPECT_EQ(
      run_cli("predict --workload resnet-32 --cluster 1xk --catalog " + catalog.path()).exit_code,
      0);
  transient::testing::expect_one_line_error(
      run_cli("plan --workload resnet-32 --steps 64000 --deadline 2h --runs 0 --catalog " +
              catalog.path()),
      error);
  transient::testing::expect_one_line_error(
      run_cli("plan --workload resnet-32 --steps 64000 --deadline 2h --runs 0 --evaluate 2xk "
              "--catalog " +
              catalog.path()),
      error);
  EXPECT_EQ(run_cli("plan --workload resnet-32 --steps 64000 --deadline 2h --runs 0 "
                    "--max-servers 1 --catalog " +
                    catalog.path())
                .exit_code,
            0);
}

TEST(PredictCli, MultiGpuServerRunsOneWorkerPerGpu) {
  const TempFile catalog("transient_perf_multi_gpu.csv",
                         "type,gpu,gpus,gpu_tflops,vcpus,memory_gib,network_gbps,on_demand_usd_h,"
                         "spot_usd_h,region,zone\n"
                         "v100x8,V100,8,15.7,64,488,25,24.48,7.34,us-east-1,us-east-1a\n"
                         "v100x1,V100,1,15.7,8,61,10,3.06,0.92,us-east-1,us-east-1a\n");
  const std::string predict =
      "predict --workload resnet-32 --per-worker-batch 128 --json --catalog " + catalog.path();
  const CliResult one = run_cli(predict + " --cluster 1xv100x8");
  ASSERT_EQ(one.exit_code, 0) << one.out;
  const auto server = nlohmann::json::parse(one.out);
  EXPECT_EQ(server.at("workers"), 8);
  EXPECT_EQ(server.at("servers"), 1);
  EXPECT_EQ(server.at("step_samples"), 1024);
  const CliResult eight = run_cli(predict + " --cluster 8xv100x1");
  ASSERT_EQ(eight.exit_code, 0) << eight.out;
  const auto servers = nlohmann::json::parse(eight.out);
  EXPECT_EQ(servers.at("workers"), 8);
  EXPECT_EQ(servers.at("servers"), 8);
  // Same GPUs, same compute: the server's local links make its all-reduce the faster.
  EXPECT_LT(server.at("step_time_s").get<double>(), servers.at("step_time_s").get<double>());
  // Eight workers of 128 samples each are far faster than one alone, not one GPU with 8x TFLOPS.
  const CliResult alone = run_cli(predict + " --cluster 1xv100x1");
  const double single = nlohmann::json::parse(alone.out).at("samples_per_s").get<double>();
  EXPECT_GT(server.at("samples_per_s").get<double>(), 6 * single);
  EXPECT_LT(server.at("samples_per_s").get<double>(), 8 * single);
  // The AWS 8-GPU catalog: two p3dn.24xlarge are 16 workers.
  const CliResult aws =
      run_cli("predict --workload resnet-32 --catalog aws-gpu --cluster 2xp3dn.24xlarge --json");
  ASSERT_EQ(aws.exit_code, 0) << aws.out;
  EXPECT_EQ(nlohmann::json::parse(aws.out).at("workers"), 16);
}

TEST(PredictCli, BadProfileNamesFileAndLine) {
  const auto path = std::filesystem::temp_directory_path() / "transient_perf_bad_profile.json";
  std::ofstream(path) << "{\n  \"name\": \"net\",\n  \"forward_flops_per_sample\": 0\n}\n";
  const CliResult r = run_cli("predict --profile " + path.string() + " --cluster 2xk80");
  std::filesystem::remove(path);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out.rfind("error: " + path.string() + ":3:", 0), 0u) << r.out;
}

// Issue 18, item 11: predict printed "step time inf s" for 1e100 FLOPs per sample.
TEST(PredictCli, AbsurdProfileIsOneLineErrorNotInfinity) {
  const TempFile profile("transient_perf_flops_1e100.json", kProfileFlops1e100);
  const CliResult r = run_cli("predict --profile " + profile.path() + " --cluster 2xk80");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_EQ(r.out, "error: " + profile.path() +
                       ":3: \"forward_flops_per_sample\" is 1e100; accepted: a number from 1 to "
                       "1e18 FLOPs\n");
  EXPECT_EQ(r.out.find("inf"), std::string::npos) << r.out;
}

// At the bounds the figures are finite numbers.
TEST(PredictCli, ProfileAtTheBoundGivesFiniteFigures) {
  const TempFile profile("transient_perf_flops_1e18.json", kProfileAtTheBounds);
  const CliResult r = run_cli("predict --profile " + profile.path() + " --cluster 64xk80 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto json = nlohmann::json::parse(r.out);
  for (const char* key : {"step_time_s", "steps_per_s", "samples_per_s"}) {
    ASSERT_TRUE(json.at(key).is_number()) << key << "\n" << r.out;
    EXPECT_GT(json.at(key).get<double>(), 0.0) << key;
  }
}

// A hostile model file: a log-linear fit whose exp() overflows gave "internal failure: ... step
// time of 1xk80 is inf" (exit 1), one that underflows printed -nan, and an efficiency of 1e-300
// printed a step of 5.124e+298 s. Each is bad input naming the model file: one line, exit 2.
TEST(PredictCli, AModelFileWithoutAFinitePositiveStepIsRefusedNamingIt) {
  for (const char* coefficients : {"[0, 1e12]", "[0, -1e12]"}) {
    const TempFile model("transient_perf_hostile_fit.json",
                         std::string(R"({"format": "transient-perf-model", "fitted": {"form": )"
                                     R"("log-linear", "features": ["flops"], "coefficients": )") +
                             coefficients + "}}");
    const CliResult r = run_cli(
        "predict --workload resnet-32 --cluster 1xk80 --throughput fitted "
        "--model " +
        model.path());
    EXPECT_EQ(r.exit_code, 2) << coefficients << "\n" << r.out;
    EXPECT_EQ(
        r.out.rfind("error: " + model.path() + ": the fitted model predicts a step time of ", 0),
        0u)
        << r.out;
    EXPECT_NE(r.out.find("; accepted: a model file whose predictions are finite and positive"),
              std::string::npos)
        << r.out;
    EXPECT_EQ(transient::testing::count_lines(r.out), 1) << r.out;
  }
  const TempFile tiny("transient_perf_tiny_efficiency.json",
                      R"({"format": "transient-perf-model", "analytic": )"
                      R"({"efficiency": {"generic": 1e-300}}})");
  const CliResult r =
      run_cli("predict --workload resnet-32 --cluster 1xk80 --model " + tiny.path());
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_EQ(r.out, "error: " + tiny.path() +
                       ": efficiency of \"generic\" is 1e-300; accepted: a number from 0.001 to "
                       "100 of peak FLOPS\n");
}

// A linear fit extrapolated below 0 (coefficients [-1, 0, 0, 0]) was floored to a step of a
// millisecond and printed as a figure; it is refused naming the file as the overflows are.
TEST(PredictCli, ALinearFitPredictingANegativeStepIsRefusedNamingIt) {
  const TempFile model(
      "transient_perf_negative_fit.json",
      R"({"format": "transient-perf-model", "fitted": {"form": "linear", "features": )"
      R"(["flops_per_memory", "tensors_per_memory", "gradient_bytes"], "coefficients": )"
      R"([-1, 0, 0, 0]}})");
  const CliResult r = run_cli(
      "predict --workload resnet-32 --cluster 2xk80 --throughput fitted --model " + model.path());
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_EQ(r.out.rfind("error: " + model.path() +
                            ": the fitted model predicts a step time of -1 s for one worker on ",
                        0),
            0u)
      << r.out;
  EXPECT_NE(r.out.find("; accepted: a model file whose predictions are finite and positive"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(transient::testing::count_lines(r.out), 1) << r.out;
}

// An empty per_tensor_s or fitted_gpu_tflops is no fit's (`transient fit` writes a GPU or
// "generic" in each), and changed the analytic prediction without a word: refused naming the
// file and the key.
TEST(PredictCli, AnEmptyTableOfAnAnalyticModelFileIsRefused) {
  for (const std::string key : {"per_tensor_s", "fitted_gpu_tflops"}) {
    const TempFile model("transient_perf_empty_" + key + ".json",
                         R"({"format": "transient-perf-model", "analytic": )"
                         R"({"efficiency": {"generic": 0.7}, ")" +
                             key + R"(": {}}})");
    const CliResult r =
        run_cli("predict --workload resnet-32 --cluster 1xk80 --model " + model.path());
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_EQ(r.out.rfind("error: " + model.path() + ": \"" + key + "\" is empty; accepted: ", 0),
              0u)
        << r.out;
    EXPECT_EQ(transient::testing::count_lines(r.out), 1) << r.out;
  }
}

TEST(PerfCli, NumericFlagsAreBoundedWithTheBoundInTheLine) {
  const CliResult ps = run_cli("predict --workload resnet-32 --cluster 2xk80 --ps 0");
  EXPECT_EQ(ps.exit_code, 2) << ps.out;
  EXPECT_NE(ps.out.find("--ps"), std::string::npos) << ps.out;
  EXPECT_NE(ps.out.find("accepted: a whole number from 1 to 1e4 servers"), std::string::npos)
      << ps.out;
  const CliResult link =
      run_cli("fit --data /nonexistent-data --worker-network-gbps 1e300 -o /tmp/never.json");
  EXPECT_EQ(link.exit_code, 2) << link.out;
  EXPECT_NE(link.out.find("accepted: a number from 0.01 to 1e5 Gbit/s"), std::string::npos)
      << link.out;
  const CliResult server =
      run_cli("fit --data /nonexistent-data --server-network-gbps 0 -o /tmp/never.json");
  EXPECT_EQ(server.exit_code, 2) << server.out;
  EXPECT_NE(server.out.find("accepted: a number from 0.01 to 1e5 Gbit/s"), std::string::npos)
      << server.out;
}

TEST(FitCli, UnrecognisedFileIsNamed) {
  const auto dir = std::filesystem::temp_directory_path() / "transient_perf_fit_cli";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "mystery.csv") << "a,b\n1,2\n";
  const CliResult r = run_cli("fit --data " + dir.string());
  std::filesystem::remove_all(dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find((dir / "mystery.csv").string()), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("unrecognised measurement file"), std::string::npos) << r.out;
}

// A bad -o is refused before the fit's seconds of work (the data directory here is unreadable
// too: the -o error comes first).
TEST(FitCli, OutputInAMissingDirectoryIsRefusedFirst) {
  const CliResult r = run_cli("fit --data /nonexistent-data -o /nonexistent-dir/model.json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out.rfind("error: /nonexistent-dir/model.json: -o: the directory", 0), 0u) << r.out;
  EXPECT_EQ(transient::testing::count_lines(r.out), 1) << r.out;
}

const std::string kCmdareDir = std::string(TRANSIENT_SHARED_DATA_DIR) + "/cmdare";

// Single-worker speeds only: nothing of a cluster was measured, so its errors are "-" and null,
// not the 0.0% (a perfect model) of the mean of no errors.
TEST(FitCli, NoClusterSpeedsGiveNoClusterError) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "transient_fit_no_cluster";
  fs::remove_all(dir);
  fs::create_directories(dir / "data");
  fs::copy_file(kCmdareDir + "/single_worker_speed/0latency_k80.csv",
                dir / "data" / "0latency_k80.csv");
  const std::string model = (dir / "model.json").string();
  const CliResult r = run_cli("fit --data " + (dir / "data").string() + " --report -o " + model);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("; cluster scaling analytic -, fitted -\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| **all** | | - | - |"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("0.0%"), std::string::npos) << r.out;
  const auto mape = nlohmann::json::parse(std::ifstream(model)).at("report").at("mape_percent");
  EXPECT_TRUE(mape.at("analytic_cluster").is_null()) << mape;
  EXPECT_TRUE(mape.at("fitted_cluster").is_null()) << mape;
  EXPECT_TRUE(mape.at("analytic_single_worker").is_number()) << mape;
  fs::remove_all(dir);
}

TEST(FitCli, CrossValidateGpuPrintsTablesAndJson) {
  const CliResult text = run_cli("fit --data " + kCmdareDir + " --cross-validate gpu");
  ASSERT_EQ(text.exit_code, 0) << text.out;
  EXPECT_NE(text.out.find("leave-one-GPU-out"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("| workload | K80 analytic | K80 fitted | P100 analytic | P100 fitted |"),
            std::string::npos)
      << text.out;
  const CliResult json = run_cli("fit --data " + kCmdareDir + " --cross-validate gpu --json");
  ASSERT_EQ(json.exit_code, 0) << json.out;
  const auto cv = nlohmann::json::parse(json.out);
  EXPECT_EQ(cv.at("held_out"), "gpu");
  EXPECT_EQ(cv.at("single_worker").size(), 40u);
  const auto& single = cv.at("mape_percent").at("analytic").at("single_worker");
  EXPECT_LE(single.at("K80").get<double>(), 10.0);
  EXPECT_LE(single.at("P100").get<double>(), 10.0);
  // Each prediction's error is its predicted against its measured speed.
  const auto& first = cv.at("single_worker").at(0);
  const double measured = first.at("measured_steps_per_s").at(0).get<double>();
  const double predicted = first.at("analytic_steps_per_s").at(0).get<double>();
  EXPECT_NEAR(first.at("analytic_ape_percent").at(0).get<double>(),
              100 * std::abs(predicted - measured) / measured, 1e-9);
}

TEST(FitCli, CrossValidateModelGivesTheLeaveOneModelOutTables) {
  const CliResult r = run_cli("fit --data " + kCmdareDir + " --cross-validate model --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto cv = nlohmann::json::parse(r.out);
  EXPECT_EQ(cv.at("held_out"), "model");
  EXPECT_EQ(cv.at("fitted_forms").size(), 20u);  // one form chosen per held-out workload
  EXPECT_NEAR(cv.at("mape_percent").at("analytic").at("single_worker").at("all").get<double>(), 7.2,
              0.05);
}

// `fit -o` writes the model file that `predict --model` reads (README, "Performance models"):
// fitted on CM-DARE's data, as the built-in constants were, it predicts what they do; fitted
// with another assumed network, it predicts otherwise (the file is what predict uses). --report
// prints the accuracy tables and --verbose every file read.
TEST(FitCli, TheModelFileItWritesIsWhatPredictReads) {
  const auto dir = std::filesystem::temp_directory_path() / "fit_model_file";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string same = (dir / "same.json").string();
  const CliResult fit = run_cli("fit --data " + kCmdareDir + " -o " + same + " --report --verbose");
  ASSERT_EQ(fit.exit_code, 0) << fit.out;
  EXPECT_EQ(fit.out.rfind("read 158 files (52 recognised but not used by perf)", 0), 0u) << fit.out;
  EXPECT_NE(fit.out.find("\n  used: " + kCmdareDir + "/checkpoint/ckpt.csv: "), std::string::npos)
      << fit.out;
  EXPECT_NE(fit.out.find("\n  not used: " + kCmdareDir + "/chief_rejoining/"), std::string::npos)
      << fit.out;
  EXPECT_NE(fit.out.find("Single worker (one parameter server), leave-one-model-out, MAPE"),
            std::string::npos)
      << fit.out;
  EXPECT_NE(fit.out.find("\nwrote " + same + "\n"), std::string::npos) << fit.out;
  const std::string other = (dir / "other.json").string();
  ASSERT_EQ(run_cli("fit --data " + kCmdareDir + " --worker-network-gbps 1 -o " + other).exit_code,
            0);

  auto samples_per_s = [](const std::string& throughput, const std::string& model) {
    const CliResult r =
        run_cli("predict --workload resnet-32 --cluster 4xk80 --json --throughput " + throughput +
                (model.empty() ? "" : " --model " + model));
    EXPECT_EQ(r.exit_code, 0) << r.out;
    return r.exit_code == 0 ? nlohmann::json::parse(r.out).at("samples_per_s").get<double>() : -1.0;
  };
  for (const std::string throughput : {"analytic", "fitted"}) {
    const double built_in = samples_per_s(throughput, "");
    ASSERT_GT(built_in, 0) << throughput;
    EXPECT_NEAR(samples_per_s(throughput, same), built_in, 1e-9 * built_in) << throughput;
    EXPECT_GT(std::abs(samples_per_s(throughput, other) - built_in), 0.01 * built_in) << throughput;
  }
  std::filesystem::remove_all(dir);
}

TEST(FitCli, CrossValidateFlagsAreChecked) {
  const CliResult bad = run_cli("fit --data " + kCmdareDir + " --cross-validate cpu");
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
  EXPECT_EQ(transient::testing::count_lines(bad.out), 1) << bad.out;
  const CliResult both =
      run_cli("fit --data " + kCmdareDir + " --cross-validate gpu -o /tmp/m.json");
  EXPECT_EQ(both.exit_code, 2) << both.out;
  EXPECT_EQ(both.out.rfind("error: ", 0), 0u) << both.out;
  const CliResult json = run_cli("fit --data " + kCmdareDir + " --json");
  EXPECT_EQ(json.exit_code, 2) << json.out;
}

// The compute time of worker `w` at `step` in write_trainer_job: -4 .. +4 ms around compute_s.
double jittered(double compute_s, int step, int w) {
  return compute_s + 0.002 * ((step * 7 + w * 3) % 5) - 0.004;
}

// A job directory as `transient train` writes it (README, "The job directory"): 40 steps of
// `global_batch` samples split among `workers`, whose compute times vary from step to step and
// worker to worker.
std::string write_trainer_job(const std::filesystem::path& dir, int workers, double compute_s,
                              int global_batch) {
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::string steps =
      "step,worker,batch,data_s,compute_s,allreduce_s,optimizer_s,loss,gen,sample_begin\n";
  const int batch = global_batch / workers;
  for (int step = 1; step <= 40; ++step) {
    for (int w = 0; w < workers; ++w) {
      const double allreduce = workers > 1 ? 0.010 : 0.0;
      char row[256];
      std::snprintf(row, sizeof row, "%d,%d,%d,%.4f,%.4f,%.4f,%.4f,%.4f,0,%d\n", step, w, batch,
                    0.003, jittered(compute_s, step, w), allreduce, 0.001, 2.3 - 0.01 * step,
                    (step - 1) * global_batch + w * batch);
      steps += row;
    }
  }
  std::ofstream(dir / "steps.csv") << steps;
  std::ofstream(dir / "job.json")
      << R"({"model": "cnn", "dataset": "fashion-mnist", "global_batch": )" << global_batch
      << R"(, "seed": 1})";
  std::ofstream(dir / "events.jsonl") << R"({"t":0.1,"event":"generation","gen":0})"
                                      << "\n";
  return steps;
}

const char* kCnnProfile = R"({
  "name": "cnn",
  "batch_per_worker": 32,
  "forward_flops_per_sample": 8.482e6,
  "parameters": 421642,
  "tensors": 8,
  "measured": {"device": "Test CPU", "step_time_s": 0.02}
})";

const char* kCpuCatalog =
    "type,gpu,gpus,gpu_tflops,vcpus,memory_gib,network_gbps,on_demand_usd_h,spot_usd_h\n"
    "testbox,Test CPU,1,0.1,2,8,10,0.1,0.05\n";

// `fit --profile` on the trainer's steps.csv: the calibrated profile predicts the run it was
// measured on (one worker: 64 samples per 0.004 + 0.180 s step, the median), where the profile's
// own measurement (0.02 s per 32 samples) predicted 4.6 times the samples a second. A CPU's step
// depends on its threads: the profile's (timed on 4) and the job's workers' (1 each, in its
// summary.json) are both said, and the calibrated profile holds the workers'.
TEST(FitCli, CalibratedProfileReproducesTheMeasuredRun) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "transient_fit_calibrate";
  write_trainer_job(dir / "job", 1, 0.180, 64);
  std::ofstream(dir / "job" / "summary.json") << R"({"steps": 40, "threads_per_worker": 1})";
  std::string profile_text = kCnnProfile;
  profile_text.replace(profile_text.find("\"step_time_s\": 0.02}"),
                       std::string("\"step_time_s\": 0.02}").size(),
                       "\"step_time_s\": 0.02, \"threads\": 4}");
  std::ofstream(dir / "cnn.json") << profile_text;
  std::ofstream(dir / "catalog.csv") << kCpuCatalog;
  const std::string out = (dir / "calibrated.json").string();
  const CliResult fit = run_cli("fit --data " + (dir / "job").string() + " --profile " +
                                (dir / "cnn.json").string() + " --calibrated-profile " + out);
  ASSERT_EQ(fit.exit_code, 0) << fit.out;
  EXPECT_NE(fit.out.find("calibrated cnn on 40 trainer steps of model cnn"), std::string::npos)
      << fit.out;
  EXPECT_NE(fit.out.find("one worker on Test CPU with 1 thread: "), std::string::npos) << fit.out;
  EXPECT_NE(fit.out.find("(the profile had 0.02 s per step of 32 samples on Test CPU with 4 "
                         "threads)"),
            std::string::npos)
      << fit.out;
  const auto profile = nlohmann::json::parse(std::ifstream(out));
  EXPECT_EQ(profile.at("batch_per_worker"), 64);
  EXPECT_EQ(profile.at("measured").at("device"), "Test CPU");
  EXPECT_EQ(profile.at("measured").at("threads"), 1);
  auto predict = [&](const std::string& file) {
    const CliResult r =
        run_cli("predict --profile " + file + " --catalog " + (dir / "catalog.csv").string() +
                " --cluster 1xtestbox --arch allreduce --json");
    EXPECT_EQ(r.exit_code, 0) << r.out;
    return nlohmann::json::parse(r.out).at("samples_per_s").get<double>();
  };
  const double measured = 64 / (0.003 + 0.180 + 0.001);
  EXPECT_NEAR(predict(out), measured, 0.01 * measured);
  EXPECT_GT(predict((dir / "cnn.json").string()), 4 * measured);  // uncalibrated: 1600 samples/s
  const CliResult text = run_cli("predict --profile " + out + " --catalog " +
                                 (dir / "catalog.csv").string() + " --cluster 1xtestbox");
  EXPECT_NE(text.out.find("cluster: 1 x testbox (Test CPU); 1 worker (one per GPU); allreduce"),
            std::string::npos)
      << text.out;
  fs::remove_all(dir);
}

// Records of several workers: the profile gets one worker's share and step without the
// all-reduce, which the output names; --device names what the records ran on.
TEST(FitCli, CalibrationFromSeveralWorkersTakesOneWorkersShare) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "transient_fit_calibrate_two";
  write_trainer_job(dir / "job", 2, 0.090, 128);
  std::ofstream(dir / "cnn.json") << kCnnProfile;
  const std::string out = (dir / "calibrated.json").string();
  const CliResult fit =
      run_cli("fit --data " + (dir / "job").string() + " --profile " + (dir / "cnn.json").string() +
              " --calibrated-profile " + out + " --device K80");
  ASSERT_EQ(fit.exit_code, 0) << fit.out;
  EXPECT_NE(fit.out.find("all-reduce in the records: 0.02 s x (n-1)/n"), std::string::npos)
      << fit.out;
  // Neither the records (no summary.json) nor the profile say their threads: none is said.
  EXPECT_NE(fit.out.find("one worker on K80: "), std::string::npos) << fit.out;
  EXPECT_NE(fit.out.find("samples on Test CPU)"), std::string::npos) << fit.out;
  const auto profile = nlohmann::json::parse(std::ifstream(out));
  EXPECT_EQ(profile.at("batch_per_worker"), 64);
  EXPECT_EQ(profile.at("measured").at("device"), "K80");
  EXPECT_FALSE(profile.at("measured").contains("threads"));
  // The slowest worker's compute sets each step (mean over the steps), plus data and optimizer.
  double slowest = 0;
  for (int step = 1; step <= 40; ++step) {
    slowest += std::max(jittered(0.090, step, 0), jittered(0.090, step, 1)) / 40;
  }
  EXPECT_NEAR(profile.at("measured").at("step_time_s").get<double>(), 0.003 + slowest + 0.001,
              1e-4);
  fs::remove_all(dir);
}

// A profile of one model (its "model", as `transient profile --model` writes it) calibrated on
// the records of another was accepted: refused, one line, nothing written. Records of its model
// calibrate it.
TEST(FitCli, CalibrationOnRecordsOfAnotherModelIsRefused) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "transient_fit_calibrate_other_model";
  write_trainer_job(dir / "job", 1, 0.1, 64);  // job.json: "model": "cnn"
  std::string profile = kCnnProfile;
  profile.replace(profile.find("\"name\": \"cnn\""), std::string("\"name\": \"cnn\"").size(),
                  "\"name\": \"mlp\", \"model\": \"mlp\"");
  std::ofstream(dir / "mlp.json") << profile;
  const std::string out = (dir / "out.json").string();
  const CliResult r = run_cli("fit --data " + (dir / "job").string() + " --profile " +
                              (dir / "mlp.json").string() + " --calibrated-profile " + out);
  transient::testing::expect_one_line_error(
      r,
      "error: --data: the trainer records are of model cnn (job.json) and the profile mlp is of "
      "model mlp; accepted: the job directories of `transient train` that ran mlp");
  EXPECT_FALSE(fs::exists(out));
  std::ofstream(dir / "job" / "job.json") << R"({"model": "mlp"})";
  EXPECT_EQ(run_cli("fit --data " + (dir / "job").string() + " --profile " +
                    (dir / "mlp.json").string() + " --calibrated-profile " + out)
                .exit_code,
            0);
  EXPECT_TRUE(fs::exists(out));
  fs::remove_all(dir);
}

// -o with trainer records alone printed "... not written" and exited 0: no model file can be
// fitted there, which is one error line and exit 2; without -o the records' calibration prints.
TEST(FitCli, OutputFromTrainerRecordsAloneIsAnError) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "transient_fit_records_only";
  write_trainer_job(dir / "job", 1, 0.1, 64);
  const std::string model = (dir / "model.json").string();
  const CliResult r = run_cli("fit --data " + (dir / "job").string() + " -o " + model);
  transient::testing::expect_one_line_error(
      r, "error: " + model + ": -o: --data " + (dir / "job").string() +
             " holds trainer records (steps.csv) but no single-worker GPU speeds");
  EXPECT_FALSE(fs::exists(model));
  const CliResult calibration = run_cli("fit --data " + (dir / "job").string());
  EXPECT_EQ(calibration.exit_code, 0) << calibration.out;
  EXPECT_EQ(calibration.out.rfind("trainer records: 40 steps in 1 jobs", 0), 0u) << calibration.out;
  fs::remove_all(dir);
}

// A job's steps.csv with its rows appended again: fit reported 4 workers, batch 256 and twice
// the samples/s of the 2 workers that ran. The repeated row is refused naming its line.
TEST(FitCli, StepsCsvRowsAppendedAgainAreRefusedNotCountedTwice) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "transient_fit_appended";
  const std::string steps = write_trainer_job(dir / "job", 2, 0.090, 128);
  std::ofstream(dir / "job" / "steps.csv", std::ios::app) << steps.substr(steps.find('\n') + 1);
  const CliResult r = run_cli("fit --data " + (dir / "job").string());
  EXPECT_EQ(r.exit_code, 2) << r.out;
  // 1 header and 80 rows (40 steps of 2 workers): the first repeat is line 82, of line 2's row.
  EXPECT_EQ(r.out, "error: " + (dir / "job" / "steps.csv").string() +
                       ":82: repeats the row of step 1, worker 0 and generation 0 of line 2; "
                       "accepted: one row per step, worker and generation\n");
  fs::remove_all(dir);
}

// Rows whose times are all 0 printed "measured inf predicted inf -nan%": such a row is refused
// naming its line; and a calibration that predicts no step time (records of all-reduce time
// only, from one worker) prints "-", never inf or nan.
TEST(FitCli, NothingNonFiniteIsPrinted) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "transient_fit_no_time";
  write_trainer_job(dir / "job", 1, 0.1, 64);
  std::ofstream(dir / "job" / "steps.csv")
      << "step,worker,batch,data_s,compute_s,allreduce_s,optimizer_s,loss,gen,sample_begin\n"
         "1,0,64,0,0,0,0,2.3,0,0\n"
         "2,0,64,0,0,0,0,2.2,0,64\n";
  const CliResult zero = run_cli("fit --data " + (dir / "job").string());
  EXPECT_EQ(zero.exit_code, 2) << zero.out;
  EXPECT_EQ(zero.out.rfind("error: " + (dir / "job" / "steps.csv").string() + ":2: ", 0), 0u)
      << zero.out;
  EXPECT_NE(zero.out.find("a step takes time"), std::string::npos) << zero.out;
  EXPECT_EQ(transient::testing::count_lines(zero.out), 1) << zero.out;
  std::ofstream(dir / "job" / "steps.csv")
      << "step,worker,batch,data_s,compute_s,allreduce_s,optimizer_s,loss,gen,sample_begin\n"
         "1,0,64,0,0,0.01,0,2.3,0,0\n"
         "2,0,64,0,0,0.01,0,2.2,0,64\n";
  const CliResult none = run_cli("fit --data " + (dir / "job").string());
  EXPECT_EQ(none.exit_code, 0) << none.out;
  EXPECT_NE(none.out.find("6400.0          -      -\n"), std::string::npos) << none.out;
  EXPECT_NE(none.out.find("predicted samples/s 1: - 2: - 3: -\n"), std::string::npos) << none.out;
  for (const char* word : {"inf", "nan"}) {
    EXPECT_EQ(none.out.find(word), std::string::npos) << none.out;
  }
  fs::remove_all(dir);
}

// A bad steps.csv, a profile without a device, or records of two models: one line, exit 2, and
// nothing written.
TEST(FitCli, BadStepsCsvIsOneLineNamingFileAndLine) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "transient_fit_calibrate_bad";
  write_trainer_job(dir / "job", 1, 0.1, 64);
  std::ofstream(dir / "job" / "steps.csv")
      << "step,worker,batch,data_s,compute_s,allreduce_s,optimizer_s,loss,gen,sample_begin\n"
         "1,0,64,0.003,0.1,0,0.001,2.3,0,0\n"
         "2,0,64,0.003,fast,0,0.001,2.2,0,64\n";
  std::ofstream(dir / "cnn.json") << kCnnProfile;
  const CliResult r =
      run_cli("fit --data " + (dir / "job").string() + " --profile " + (dir / "cnn.json").string() +
              " --calibrated-profile " + (dir / "out.json").string());
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_EQ(r.out.rfind("error: " + (dir / "job" / "steps.csv").string() + ":3:", 0), 0u) << r.out;
  EXPECT_EQ(transient::testing::count_lines(r.out), 1) << r.out;
  EXPECT_FALSE(fs::exists(dir / "out.json"));
  // No device named anywhere: refused, naming the profile.
  std::ofstream(dir / "bare.json")
      << R"({"name": "cnn", "forward_flops_per_sample": 8.482e6, "parameters": 421642})";
  write_trainer_job(dir / "job", 1, 0.1, 64);
  const CliResult bare = run_cli("fit --data " + (dir / "job").string() + " --profile " +
                                 (dir / "bare.json").string() + " --calibrated-profile " +
                                 (dir / "out.json").string());
  EXPECT_EQ(bare.exit_code, 2) << bare.out;
  EXPECT_NE(bare.out.find("--device NAME"), std::string::npos) << bare.out;
  EXPECT_EQ(transient::testing::count_lines(bare.out), 1) << bare.out;
  // The output is a directory: refused before the records are read.
  const CliResult into_dir =
      run_cli("fit --data " + (dir / "job").string() + " --profile " + (dir / "cnn.json").string() +
              " --calibrated-profile " + dir.string());
  EXPECT_EQ(into_dir.exit_code, 2) << into_dir.out;
  EXPECT_EQ(into_dir.out, "error: " + dir.string() +
                              ": --calibrated-profile: is a directory; accepted: a file name for "
                              "the profile\n");
  // Jobs of two models: which one is the profile's is not guessed.
  write_trainer_job(dir / "jobs" / "a", 1, 0.1, 64);
  write_trainer_job(dir / "jobs" / "b", 1, 0.1, 64);
  std::ofstream(dir / "jobs" / "b" / "job.json") << R"({"model": "mlp"})";
  const CliResult two =
      run_cli("fit --data " + (dir / "jobs").string() + " --profile " +
              (dir / "cnn.json").string() + " --calibrated-profile " + (dir / "out.json").string());
  EXPECT_EQ(two.exit_code, 2) << two.out;
  EXPECT_NE(two.out.find("of 2 models (cnn, mlp)"), std::string::npos) << two.out;
  EXPECT_EQ(transient::testing::count_lines(two.out), 1) << two.out;
  fs::remove_all(dir);
}

}  // namespace
