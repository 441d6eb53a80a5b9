// The `transient simulate` command through the real binary, on every scenario in examples/.
#include <gtest/gtest.h>

#include "common/cli_run.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

namespace {

using transient::testing::CliResult;

// Every simulate run reads the shared data through --data-dir.
CliResult run_cli(const std::string& args) {
  return transient::testing::run_cli_split(args + " --data-dir " + TRANSIENT_SHARED_DATA_DIR);
}

std::vector<std::string> examples() {
  std::vector<std::string> files;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(TRANSIENT_SOURCE_DIR) + "/examples")) {
    if (entry.path().extension() == ".toml") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(SimulateCli, EveryExampleRunsOnceAndManyTimes) {
  const auto files = examples();
  ASSERT_GE(files.size(), 3u);
  for (const auto& file : files) {
    const CliResult one = run_cli("simulate " + file);
    EXPECT_EQ(one.exit_code, 0) << file << ": " << one.err;
    EXPECT_NE(one.out.find("cost $"), std::string::npos) << file;
    const CliResult many = run_cli("simulate " + file + " --runs 20 --threads 2 --json");
    ASSERT_EQ(many.exit_code, 0) << file << ": " << many.err;
    const auto json = nlohmann::json::parse(many.out);
    EXPECT_EQ(json["runs"], 20) << file;
    EXPECT_GT(json["cost_usd"]["mean"].get<double>(), 0.0) << file;
    const CliResult again = run_cli("simulate " + file + " --runs 20 --threads 1 --json");
    EXPECT_EQ(again.out, many.out) << file;
  }
}

TEST(SimulateCli, PaperBaselineMatchesCmdareSpeed) {
  const CliResult r = run_cli("simulate " + std::string(TRANSIENT_SOURCE_DIR) +
                              "/examples/paper_1_on_demand_k80.toml --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto json = nlohmann::json::parse(r.out);
  EXPECT_TRUE(json["finished"].get<bool>());
  // 64,000 steps at 4.51 steps/s plus a start-up of about a minute.
  EXPECT_NEAR(json["time_s"].get<double>(), 64000 / 4.51, 200.0);
}

TEST(SimulateCli, BadScenarioIsOneErrorLineAndExitCode2) {
  const std::string path = ::testing::TempDir() + "/bad_scenario.toml";
  std::ofstream(path) << "[job]\nsteps = 100\n[throughput]\nmodel = \"table\"\nworkload = "
                         "\"resnet-99\"\n";
  const CliResult r = run_cli("simulate " + path);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("error: " + path + ":5: ", 0), 0u) << r.err;  // the workload line
  EXPECT_NE(r.err.find("resnet-32"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(SimulateCli, ListsTheRegistries) {
  const CliResult r = run_cli("simulate --list");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* name : {"table", "in-place", "restart-from-checkpoint", "async-ps-chief", "same",
                           "cheapest", "greedy", "uniform-progress", "market-aware", "optimal"}) {
    EXPECT_NE(r.out.find(name), std::string::npos) << name;
  }
}

}  // namespace
