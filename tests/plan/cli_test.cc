// `transient plan` through the real binary: bad input is one `error:` line and exit code 2, an
// impossible request an answer and exit code 0, --evaluate --json has the figures it promises.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

namespace {

struct Output {
  int status = 0;
  std::string text;  // stdout and stderr
};

Output run(const std::string& args) {
  const std::string command = std::string(TRANSIENT_CLI_PATH) + " " + args + " 2>&1";
  Output out;
  FILE* pipe = popen(command.c_str(), "r");
  std::array<char, 4096> buffer{};
  while (fgets(buffer.data(), buffer.size(), pipe) != nullptr) out.text += buffer.data();
  const int status = pclose(pipe);
  out.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

int lines(const std::string& text) {
  int n = 0;
  for (char c : text) n += c == '\n';
  return n;
}

std::string write_csv(const std::string& name, const std::string& contents) {
  const auto path = std::filesystem::temp_directory_path() / ("transient_plan_" + name + ".csv");
  std::ofstream(path) << contents;
  return path.string();
}

const std::string kHeader =
    "type,gpu,gpus,gpu_tflops,vcpus,memory_gib,network_gbps,on_demand_usd_h,spot_usd_h,region,"
    "zone\n";

TEST(PlanCli, NegativePriceIsOneLineError) {
  const std::string csv =
      write_csv("negative", kHeader +
                                "k80,K80,1,4.1,4,15,8,-0.7,0.25,us-east1,us-east1-c\n"
                                "cpu,,0,0,4,15,8,0.14,,us-east1,us-east1-c\n");
  const Output o = run("plan --workload resnet-32 --steps 64000 --deadline 2h --catalog " + csv);
  EXPECT_EQ(o.status, 2) << o.text;
  EXPECT_EQ(o.text.rfind("error: ", 0), 0u) << o.text;
  EXPECT_EQ(lines(o.text), 1) << o.text;
}

TEST(PlanCli, ZeroPriceIsOneLineError) {
  const std::string csv = write_csv("zero", kHeader +
                                                "k80,K80,1,4.1,4,15,8,0,0.25,us-east1,us-east1-c\n"
                                                "cpu,,0,0,4,15,8,0.14,,us-east1,us-east1-c\n");
  const Output o = run("plan --workload resnet-32 --steps 64000 --deadline 2h --catalog " + csv);
  EXPECT_EQ(o.status, 2) << o.text;
  EXPECT_EQ(o.text.rfind("error: ", 0), 0u) << o.text;
  EXPECT_EQ(lines(o.text), 1) << o.text;
}

TEST(PlanCli, UnknownGpuIsOneLineError) {
  const std::string csv =
      write_csv("unknown_gpu", kHeader +
                                   "z1,Z99,1,,4,15,8,0.7,0.25,us-east1,us-east1-c\n"
                                   "cpu,,0,0,4,15,8,0.14,,us-east1,us-east1-c\n");
  const Output o = run("plan --workload resnet-32 --steps 64000 --deadline 2h --catalog " + csv);
  EXPECT_EQ(o.status, 2) << o.text;
  EXPECT_NE(o.text.find("Z99"), std::string::npos) << o.text;
  EXPECT_EQ(lines(o.text), 1) << o.text;
}

TEST(PlanCli, ZeroDeadlineIsOneLineError) {
  const Output o = run("plan --workload resnet-32 --steps 64000 --deadline 0s");
  EXPECT_EQ(o.status, 2) << o.text;
  EXPECT_NE(o.text.find("--deadline"), std::string::npos) << o.text;
  EXPECT_EQ(lines(o.text), 1) << o.text;
}

TEST(PlanCli, NeitherDeadlineNorBudgetSaysOneIsNeeded) {
  const Output o = run("plan --workload resnet-32 --steps 64000");
  EXPECT_EQ(o.status, 2) << o.text;
  EXPECT_NE(o.text.find("needs a --deadline"), std::string::npos) << o.text;
  EXPECT_EQ(lines(o.text), 1) << o.text;
}

TEST(PlanCli, UnknownWorkloadListsTheWorkloads) {
  const Output o = run("plan --workload resnet-9000 --steps 64000 --deadline 2h");
  EXPECT_EQ(o.status, 2) << o.text;
  EXPECT_NE(o.text.find("resnet-32"), std::string::npos) << o.text;
  EXPECT_EQ(lines(o.text), 1) << o.text;
}

TEST(PlanCli, InfeasibleRequestIsAnsweredNotFailed) {
  const Output o =
      run("plan --workload resnet-32 --steps 64000 --deadline 5min --budget 5 --arch ps --runs 20");
  EXPECT_EQ(o.status, 0) << o.text;
  EXPECT_NE(o.text.find("no configuration finishes 64,000 steps in 5 min for $5.00; the fastest"),
            std::string::npos)
      << o.text;
}

TEST(PlanCli, PlanJsonRecommendsAPlanNoWorseThanTheBaselines) {
  const Output o =
      run("plan --workload resnet-32 --steps 64000 --deadline 2h --arch ps --runs 50 --json");
  ASSERT_EQ(o.status, 0) << o.text;
  const auto j = nlohmann::json::parse(o.text);
  ASSERT_TRUE(j["feasible"].get<bool>());
  const double cost = j["recommended"]["expected_cost_usd"];
  EXPECT_LE(j["recommended"]["p95_time_s"].get<double>(), 7200.0);
  ASSERT_EQ(j["baselines"].size(), 4u);
  for (const auto& b : j["baselines"]) {
    if (b["acceptable"].get<bool>()) {
      EXPECT_LE(cost, b["expected_cost_usd"].get<double>() + 1e-9);
    }
  }
}

TEST(PlanCli, EvaluateJsonHasTheFigures) {
  const Output o =
      run("plan --workload resnet-32 --steps 64000 --deadline 2h --arch ps --runs 50 --json "
          "--evaluate 4xk80:spot,1xps");
  ASSERT_EQ(o.status, 0) << o.text;
  const auto j = nlohmann::json::parse(o.text);
  for (const char* key :
       {"expected_time_s", "p95_time_s", "expected_cost_usd", "deadline_miss_probability"}) {
    ASSERT_TRUE(j.contains(key)) << key;
    EXPECT_GE(j[key].get<double>(), 0.0) << key;
  }
  EXPECT_GT(j["expected_time_s"].get<double>(), 3000.0);
  EXPECT_LT(j["expected_time_s"].get<double>(), 7200.0);
}

TEST(PlanCli, PlotWritesAnSvg) {
  const auto path = std::filesystem::temp_directory_path() / "transient_plan_front.svg";
  std::filesystem::remove(path);
  const Output o = run("plan --workload resnet-32 --steps 64000 --deadline 2h --runs 10 --plot " +
                       path.string());
  ASSERT_EQ(o.status, 0) << o.text;
  std::ifstream in(path);
  const std::string svg((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("DeepVM cost first"), std::string::npos);
}

}  // namespace

namespace {

TEST(PlanCli, PlotMustBeAnSvgFile) {
  const Output o = run("plan --workload resnet-32 --steps 64000 --deadline 2h --plot front.png");
  EXPECT_EQ(o.status, 2) << o.text;
  EXPECT_NE(o.text.find(".svg"), std::string::npos) << o.text;
  EXPECT_EQ(lines(o.text), 1) << o.text;
}

TEST(PlanCli, UnknownZoneListsTheZones) {
  const Output o = run("plan --workload resnet-32 --steps 64000 --deadline 2h --zones mars");
  EXPECT_EQ(o.status, 2) << o.text;
  EXPECT_NE(o.text.find("us-east1-c"), std::string::npos) << o.text;
  EXPECT_EQ(lines(o.text), 1) << o.text;
}

}  // namespace
