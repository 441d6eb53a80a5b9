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
  const CliResult r = run_cli("predict --workload resnet-32 --cluster 4xk80:spot --json");
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

}  // namespace
