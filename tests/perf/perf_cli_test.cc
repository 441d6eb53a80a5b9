// `transient predict` and `transient fit` through the real binary.
#include <gtest/gtest.h>

#include "common/cli_run.h"

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace {

using transient::testing::CliResult;
using transient::testing::run_cli;

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

}  // namespace
