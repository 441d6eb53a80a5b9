// `transient plan` through the real binary: bad input is one `error:` line and exit code 2, an
// impossible request an answer and exit code 0, --evaluate --json has the figures it promises.
#include <gtest/gtest.h>

#include "common/cli_run.h"
#include "common/png_header.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "transient/cloud/catalog_registry.h"
#include "transient/core/text.h"
#include "transient/plan/configuration.h"
#include "transient/sim/scenario_loader.h"

namespace {

using transient::testing::CliResult;
using transient::testing::count_lines;
using transient::testing::expect_one_line_error;
using transient::testing::kProfileAtTheBounds;
using transient::testing::kProfileFlops1e100;
using transient::testing::run_cli;
using transient::testing::run_cli_split;
using transient::testing::TempFile;

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
  const CliResult o =
      run_cli("plan --workload resnet-32 --steps 64000 --deadline 2h --catalog " + csv);
  EXPECT_EQ(o.exit_code, 2) << o.out;
  EXPECT_EQ(o.out.rfind("error: ", 0), 0u) << o.out;
  EXPECT_EQ(count_lines(o.out), 1) << o.out;
}

TEST(PlanCli, ZeroPriceIsOneLineError) {
  const std::string csv = write_csv("zero", kHeader +
                                                "k80,K80,1,4.1,4,15,8,0,0.25,us-east1,us-east1-c\n"
                                                "cpu,,0,0,4,15,8,0.14,,us-east1,us-east1-c\n");
  const CliResult o =
      run_cli("plan --workload resnet-32 --steps 64000 --deadline 2h --catalog " + csv);
  EXPECT_EQ(o.exit_code, 2) << o.out;
  EXPECT_EQ(o.out.rfind("error: ", 0), 0u) << o.out;
  EXPECT_EQ(count_lines(o.out), 1) << o.out;
}

TEST(PlanCli, UnknownGpuIsOneLineError) {
  const std::string csv =
      write_csv("unknown_gpu", kHeader +
                                   "z1,Z99,1,,4,15,8,0.7,0.25,us-east1,us-east1-c\n"
                                   "cpu,,0,0,4,15,8,0.14,,us-east1,us-east1-c\n");
  const CliResult o =
      run_cli("plan --workload resnet-32 --steps 64000 --deadline 2h --catalog " + csv);
  expect_one_line_error(o, "Z99");
}

TEST(PlanCli, ZeroDeadlineIsOneLineError) {
  const CliResult o = run_cli("plan --workload resnet-32 --steps 64000 --deadline 0s");
  expect_one_line_error(o, "--deadline");
}

TEST(PlanCli, TooManyServersOrNoZoneIsOneLineError) {
  const CliResult many =
      run_cli("plan --workload resnet-32 --steps 64000 --deadline 2h --max-servers 100000");
  expect_one_line_error(many, "--max-servers");
  const CliResult none = run_cli("plan --workload resnet-32 --steps 64000 --deadline 2h --zones ,");
  expect_one_line_error(none, "--zones: \",\" names no zone");
}

// Issue 18, item 11: a profile of 1e100 FLOPs per sample aborted CBC (SIGABRT on its objective
// coefficients). It is refused where it is read, with the bound in the line.
TEST(PlanCli, AbsurdProfileIsOneLineErrorNotAnAbort) {
  const TempFile profile("transient_plan_flops_1e100.json", kProfileFlops1e100);
  const CliResult o = run_cli("plan --profile " + profile.path() + " --steps 1000 --deadline 2h");
  expect_one_line_error(o, "error: " + profile.path() +
                               ":3: \"forward_flops_per_sample\" is 1e100; accepted: a number "
                               "from 1 to 1e18 FLOPs");
}

// At the bound itself (1e18 FLOPs per sample, 1e6 samples a step) the plan is an answer, not a
// solver abort: no cluster finishes in time.
TEST(PlanCli, ProfileAtTheBoundIsAnswered) {
  const TempFile profile("transient_plan_flops_1e18.json", kProfileAtTheBounds);
  const CliResult o =
      run_cli("plan --profile " + profile.path() + " --steps 1e12 --deadline 30d --runs 5");
  EXPECT_EQ(o.exit_code, 0) << o.out;
  EXPECT_EQ(o.out.find("inf"), std::string::npos) << o.out;
  EXPECT_EQ(o.out.find("nan"), std::string::npos) << o.out;
}

TEST(PlanCli, NumericFlagsAreBoundedWithTheBoundInTheLine) {
  const std::string base = "plan --workload resnet-32 --steps 64000 --deadline 2h ";
  expect_one_line_error(run_cli(base + "--budget 1e300"), "accepted: a number from 0.01 to 1e9 $");
  expect_one_line_error(run_cli(base + "--budget nan"), "--budget");
  expect_one_line_error(run_cli(base + "--confidence 1"), "from 0.01 to 0.999");
  expect_one_line_error(run_cli(base + "--runs 1e9"), "a whole number from 0 to 1e5 runs");
  expect_one_line_error(run_cli("plan --workload resnet-32 --steps 64000 --deadline 31d"),
                        "not a duration up to 30 days");
  expect_one_line_error(run_cli("plan --workload resnet-32 --steps 64000 --deadline 1e308d"),
                        "not a duration up to 30 days");
}

TEST(PlanCli, NeitherDeadlineNorBudgetSaysOneIsNeeded) {
  const CliResult o = run_cli("plan --workload resnet-32 --steps 64000");
  expect_one_line_error(o, "needs a --deadline");
}

TEST(PlanCli, UnknownWorkloadListsTheWorkloads) {
  const CliResult o = run_cli("plan --workload resnet-9000 --steps 64000 --deadline 2h");
  expect_one_line_error(o, "resnet-32");
}

TEST(PlanCli, InfeasibleRequestIsAnsweredNotFailed) {
  const CliResult o = run_cli(
      "plan --workload resnet-32 --steps 64000 --deadline 5min --budget 5 --arch ps --runs 20");
  EXPECT_EQ(o.exit_code, 0) << o.out;
  EXPECT_NE(o.out.find("no configuration finishes 64,000 steps in 5 min for $5.00; the fastest"),
            std::string::npos)
      << o.out;
  // No table of candidates without a row, but a line that says there are none.
  EXPECT_NE(o.out.find("CBC solves), 20 Monte Carlo runs each:\n  none: no configuration meets "
                       "the request, even without revocations\n"),
            std::string::npos)
      << o.out;
  // The ranking's columns line up whatever the zones' names: each market word starts where the
  // first row's does (us-central1-a is longer than us-east1-c).
  std::istringstream lines(o.out.substr(o.out.find("FLOPP ranking")));
  std::string line;
  std::getline(lines, line);
  std::size_t column = std::string::npos;
  int rows = 0;
  while (std::getline(lines, line) && !line.empty()) {
    const std::size_t market = std::min(line.find(" spot "), line.find(" on-demand "));
    ASSERT_NE(market, std::string::npos) << line;
    const std::size_t word = line.find_first_not_of(' ', market);
    if (column == std::string::npos) column = word;
    EXPECT_EQ(word, column) << o.out;
    ++rows;
  }
  EXPECT_GE(rows, 6) << o.out;
}

// --regions: by default every plan (recommended, front, candidates) stays in one region, as
// --json says of each; a number outside 0..64 is one line naming the flag.
TEST(PlanCli, PlansStayInOneRegionUnlessRegionsAllowsMore) {
  const CliResult o = run_cli(
      "plan --workload resnet-32 --steps 64000 --deadline 2h --catalog gce-2019 --runs 50 "
      "--json");
  ASSERT_EQ(o.exit_code, 0) << o.out;
  const auto j = nlohmann::json::parse(o.out);
  EXPECT_EQ(j["recommended"]["regions"], 1);
  for (const char* list : {"pareto", "candidates"}) {
    ASSERT_FALSE(j[list].empty()) << list;
    for (const auto& plan : j[list]) EXPECT_EQ(plan["regions"], 1) << list << ": " << plan.dump();
  }
  for (const char* bad : {"-1", "65"}) {
    const CliResult r = run_cli(
        std::string("plan --workload resnet-32 --steps 64000 --deadline 2h --regions ") + bad);
    expect_one_line_error(r, "--regions");
    // In the words of every other bounded flag, not CLI11's own.
    EXPECT_NE(r.out.find("accepted: a whole number from 0 to 64 regions"), std::string::npos)
        << r.out;
  }
}

TEST(PlanCli, PlanJsonRecommendsAPlanNoWorseThanTheBaselines) {
  const CliResult o =
      run_cli("plan --workload resnet-32 --steps 64000 --deadline 2h --arch ps --runs 50 --json");
  ASSERT_EQ(o.exit_code, 0) << o.out;
  const auto j = nlohmann::json::parse(o.out);
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
  const CliResult o = run_cli(
      "plan --workload resnet-32 --steps 64000 --deadline 2h --arch ps --runs 50 --json "
      "--evaluate 4xk80:spot,1xps");
  ASSERT_EQ(o.exit_code, 0) << o.out;
  const auto j = nlohmann::json::parse(o.out);
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
  const CliResult o = run_cli(
      "plan --workload resnet-32 --steps 64000 --deadline 2h --runs 10 --plot " + path.string());
  ASSERT_EQ(o.exit_code, 0) << o.out;
  std::ifstream in(path);
  const std::string svg((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("DeepVM cost first"), std::string::npos);
}

}  // namespace

namespace {

TEST(PlanCli, PlotWritesAPng) {
  const auto path = std::filesystem::temp_directory_path() / "transient_plan_front.png";
  std::filesystem::remove(path);
  const CliResult o = run_cli(
      "plan --workload resnet-32 --steps 64000 --deadline 2h --runs 10 --plot " + path.string());
  ASSERT_EQ(o.exit_code, 0) << o.out;
  std::ifstream in(path, std::ios::binary);
  const std::string png((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto header = transient::testing::read_png_header(png);
  ASSERT_TRUE(header.valid);
  EXPECT_EQ(header.width_px, 1760u);  // the SVG is 880 px wide, drawn at 2x
  EXPECT_GT(header.height_px, 0u);
}

TEST(PlanCli, PlotMustBeAnSvgOrPngFile) {
  const CliResult o =
      run_cli("plan --workload resnet-32 --steps 64000 --deadline 2h --plot front.pdf");
  expect_one_line_error(o, ".svg or .png");
}

TEST(PlanCli, UnknownZoneListsTheZones) {
  const CliResult o = run_cli("plan --workload resnet-32 --steps 64000 --deadline 2h --zones mars");
  expect_one_line_error(o, "us-east1-c");
}

}  // namespace

// Issue 16, "a policy you can run": the recommended policy is data in --json, the same facts as
// the text; --emit-scenario writes it as a scenario that `simulate` runs to the advice's figures;
// --emit-train-flags prints flags of `transient coordinator`.
namespace {

const std::string kPlan =
    "plan --workload resnet-32 --steps 64000 --deadline 2h --runs 20 --threads 1 --seed 1";

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A path in a fresh folder of its own under the temporary folder.
std::filesystem::path fresh_path(const std::string& test, const std::string& file) {
  const auto dir = std::filesystem::temp_directory_path() / ("transient_plan_emit_" + test);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir / file;
}

// A spot trace given with --market revokes the plan's spot servers; on a replayed trace the
// policies are measured against the exact optimum, and the scenario the plan writes replays it.
TEST(PlanCli, ATraceMarketIsPlannedWithAgainstItsOptimum) {
  const std::string trace =
      " --market trace --market-param file=us-west-2a_k80_1 --market-param offset=100h";
  const CliResult json_run = run_cli(kPlan + trace + " --json");
  ASSERT_EQ(json_run.exit_code, 0) << json_run.out;
  const auto advice = nlohmann::json::parse(json_run.out)["recommended"]["policy"]["advice"];
  ASSERT_TRUE(advice.is_object()) << json_run.out;
  EXPECT_TRUE(advice["optimal_exact"].get<bool>());
  EXPECT_GE(advice["cost_over_optimal"].get<double>(), 1.0 - 1e-9);
  // At the trace's random offsets spot comes and goes inside decision ticks: the optimum counts
  // it from and until when it does, and stays a bound on every policy's runs.
  const CliResult random_offsets =
      run_cli(kPlan + " --market trace --market-param file=us-west-2a_k80_1 --json");
  ASSERT_EQ(random_offsets.exit_code, 0) << random_offsets.out;
  const auto at_random =
      nlohmann::json::parse(random_offsets.out)["recommended"]["policy"]["advice"];
  ASSERT_TRUE(at_random.is_object()) << random_offsets.out;
  EXPECT_TRUE(at_random["optimal_exact"].get<bool>()) << at_random;
  for (const auto& policy : at_random["policies"]) {
    EXPECT_GE(policy["cost_over_optimal"].get<double>(), 1.0 - 1e-9) << policy;
  }
  const std::string dir = ::testing::TempDir() + "plan_trace_market";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const CliResult emit = run_cli(kPlan + trace + " --emit-scenario " + dir + "/plan.toml");
  ASSERT_EQ(emit.exit_code, 0) << emit.out;
  const std::string scenario = read_text(dir + "/plan.toml");
  EXPECT_NE(scenario.find("model = \"trace\"\nfile = \"us-west-2a_k80_1\"\noffset = \"100h\""),
            std::string::npos)
      << scenario;
  // The trace is EC2's: its two-minute notice, as planned with (it was GCE's 30 s).
  EXPECT_NE(scenario.find("notice = \"120s\"\n"), std::string::npos) << scenario;
  // An offset past the trace's end is refused at the parameter, as the others are (it named the
  // data file).
  const CliResult far = run_cli(kPlan +
                                " --market trace --market-param file=us-west-2a_k80_1 "
                                "--market-param offset=29d");
  EXPECT_EQ(far.exit_code, 2);
  EXPECT_EQ(far.out,
            "error: market model \"trace\", parameter offset: 29 d 00 h is beyond the end of the "
            "trace us-west-2a_k80_1.json (27 d 01 h long); accepted: an offset inside it, or "
            "random\n");
  // What it does not accept is one line naming the flag.
  const CliResult unknown = run_cli("plan --workload resnet-32 --steps 64000 --market nope");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_EQ(unknown.out,
            "error: unknown market model \"nope\"; accepted: lifetime, hour-of-day, exponential, "
            "trace\n");
  const CliResult lone = run_cli("plan --workload resnet-32 --steps 64000 --market-param file=x");
  EXPECT_EQ(lone.exit_code, 2);
  EXPECT_EQ(lone.out, "error: --market-param: accepted only with --market MODEL\n");
}

TEST(PlanCli, JsonPolicyIsDataAndTheTextIsRenderedFromIt) {
  const CliResult json_run = run_cli(kPlan + " --json");
  ASSERT_EQ(json_run.exit_code, 0) << json_run.out;
  const auto j = nlohmann::json::parse(json_run.out);
  const auto& r = j["recommended"];
  const auto& p = r["policy"];
  ASSERT_TRUE(p.is_object()) << p;
  // One group of spot workers with a deadline: replaced by the same type, a fallback and a
  // market policy chosen by simulation against the optimum.
  ASSERT_EQ(r["workers"].size(), 1u);
  EXPECT_EQ(r["workers"][0]["market"], "spot");
  EXPECT_EQ(p["replacement"]["policy"], "same");
  ASSERT_EQ(p["replacement"]["groups"].size(), 1u);
  EXPECT_EQ(p["replacement"]["groups"][0]["type"], r["workers"][0]["type"]);
  EXPECT_EQ(p["recovery"], "in-place");
  const int servers = r["workers"][0]["count"];
  const auto& f = p["fallback"];
  ASSERT_TRUE(f.is_object()) << p;
  EXPECT_EQ(f["servers"].get<int>(), servers);
  EXPECT_EQ(f["market"], "on-demand");
  EXPECT_DOUBLE_EQ(f["steps_per_s"].get<double>(), r["steps_per_s"].get<double>());
  EXPECT_DOUBLE_EQ(f["reserve_s"].get<double>(), f["decision_interval_s"].get<double>() +
                                                     f["on_demand_changeover_s"].get<double>());
  EXPECT_GT(f["on_demand_changeover_s"].get<double>(), 0.0);
  const auto& a = p["advice"];
  ASSERT_TRUE(a.is_object()) << p;
  EXPECT_EQ(p["market_policy"], a["recommended"]);
  EXPECT_EQ(a["runs"].get<int>(), 20);
  ASSERT_EQ(a["policies"].size(), 5u);
  EXPECT_EQ(a["policies"][3]["name"], "none");
  EXPECT_EQ(a["policies"][4]["name"], "optimal");
  EXPECT_GE(a["cost_over_optimal"].get<double>(), 1.0 - 1e-9);
  for (const auto& figures : a["policies"]) {
    if (figures["name"] == a["recommended"]) {
      EXPECT_EQ(figures["expected_cost_usd"], a["expected_cost_usd"]);
    }
  }

  // The text prints the same policy, word for word, and says the fields' values.
  const CliResult text_run = run_cli(kPlan);
  ASSERT_EQ(text_run.exit_code, 0) << text_run.out;
  const std::string text = p["text"];
  EXPECT_NE(text_run.out.find("  policy: " + text + "\n"), std::string::npos) << text_run.out;
  EXPECT_NE(text.find("fall back to on-demand (" + transient::counted(servers, "server") + ")"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(fmt::format("falls below {:.0f} s", f["reserve_s"].get<double>())),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("run with the `" + p["market_policy"].get<std::string>() + "` market policy"),
            std::string::npos)
      << text;
}

TEST(PlanCli, AllOnDemandPolicyHasNoReplacementOrFallback) {
  const CliResult o = run_cli(
      "plan --workload resnet-32 --steps 64000 --deadline 2h --runs 5 --threads 1 --json "
      "--arch ps --evaluate 2xp100:on-demand,1xps");
  ASSERT_EQ(o.exit_code, 0) << o.out;
  const auto p = nlohmann::json::parse(o.out)["policy"];
  EXPECT_EQ(p["replacement"]["policy"], "none");
  EXPECT_TRUE(p["fallback"].is_null());
  EXPECT_EQ(p["market_policy"], "none");
  EXPECT_EQ(p["text"], "all on-demand: nothing is revoked, no fallback needed");
}

// A catalog may sell a GPU type on spot only. A plan of it with a deadline has no market policy
// to advise and no on-demand fallback to offer (there is no on-demand server of that type), where
// the advice stopped the plan on an internal check (exit 1), and its scenario simulates.
TEST(PlanCli, AGpuTypeSoldOnlyOnSpotIsPlannedWithoutAMarketPolicyOrAnOnDemandFallback) {
  const std::string csv =
      write_csv("spot_only", kHeader +
                                 "n1-standard-4+k80,K80,1,4.113,4,15,8,,0.256,us-east1,us-east1-c\n"
                                 "n1-standard-4,,0,0,4,15,8,0.143,0.041,us-east1,us-east1-c\n");
  const auto path = fresh_path("spot-only", "plan.toml");
  const CliResult o = run_cli(
      "plan --workload resnet-32 --steps 64000 --arch ps --deadline 4h "
      "--runs 10 --threads 1 --json --catalog " +
      csv + " --emit-scenario " + path.string());
  ASSERT_EQ(o.exit_code, 0) << o.out;
  const auto p = nlohmann::json::parse(o.out)["recommended"]["policy"];
  EXPECT_EQ(p["market_policy"], "none") << p;
  EXPECT_FALSE(p.contains("fallback") && !p["fallback"].is_null()) << p;
  EXPECT_FALSE(p.contains("advice") && !p["advice"].is_null()) << p;
  const CliResult sim = run_cli("simulate " + path.string() + " --runs 10 --threads 1 --json");
  EXPECT_EQ(sim.exit_code, 0) << sim.out;
}

// `plan --evaluate 4xk80:spot,1xps` of ResNet-32 with `request` (a deadline or a budget), 20
// runs of seed 3, in --json, its scenario written to `scenario`.
CliResult evaluate_4xk80(const std::string& request, const std::filesystem::path& scenario) {
  return run_cli("plan --workload resnet-32 --steps 64000 " + request +
                 " --arch ps --runs 20 --threads 1 --seed 3 --json --evaluate 4xk80:spot,1xps "
                 "--emit-scenario " +
                 scenario.string());
}

// --evaluate with a deadline advises the market policy as a recommended plan does, and its
// scenario holds that advice: simulate reproduces the advice's expected cost. The scenario held
// a `greedy` placeholder that nothing had simulated, and simulate's figures matched neither the
// evaluation nor any advice (review of plan against the docs).
TEST(PlanCli, AnEvaluationWithADeadlineEmitsTheAdvisedPolicyAndSimulateReproducesIt) {
  const auto path = fresh_path("evaluate-deadline", "plan.toml");
  const CliResult o = evaluate_4xk80("--deadline 2h", path);
  ASSERT_EQ(o.exit_code, 0) << o.out;
  const auto p = nlohmann::json::parse(o.out)["policy"];
  ASSERT_TRUE(p["advice"].is_object()) << p;
  EXPECT_EQ(p["market_policy"], p["advice"]["recommended"]);
  const CliResult sim =
      run_cli("simulate " + path.string() + " --runs 20 --seed 3 --threads 1 --json");
  ASSERT_EQ(sim.exit_code, 0) << sim.out;
  EXPECT_NEAR(nlohmann::json::parse(sim.out)["cost_usd"]["mean"].get<double>(),
              p["advice"]["expected_cost_usd"].get<double>(), 1e-9);
}

// With a deadline and a budget, the plan meets the budget as simulated without a market policy;
// the recommended policy's expected cost can pass it, and the advice says so (in --json,
// within_budget), where it said nothing (review of plan against the docs).
TEST(PlanCli, AnAdvisedPolicyAboveTheBudgetSaysSo) {
  const std::string request =
      "plan --workload resnet-32 --steps 64000 --arch ps --deadline 1h --budget 1.04 --runs 50 "
      "--threads 1";
  const CliResult o = run_cli(request + " --json");
  ASSERT_EQ(o.exit_code, 0) << o.out;
  const auto advice = nlohmann::json::parse(o.out)["recommended"]["policy"]["advice"];
  ASSERT_TRUE(advice.is_object()) << o.out;
  EXPECT_EQ(advice["within_budget"].get<bool>(), advice["expected_cost_usd"].get<double>() <= 1.04)
      << advice;
  EXPECT_FALSE(advice["within_budget"].get<bool>()) << advice;  // $1.05 on 2026-11-30
  const CliResult text = run_cli(request);
  ASSERT_EQ(text.exit_code, 0) << text.out;
  EXPECT_NE(text.out.find("missed the deadline; above the budget ($1.04)"), std::string::npos)
      << text.out;
}

// With a minute of margin every deadline-safe policy goes on demand at once: the advice was
// `greedy` at $2.92 for a plan that the table priced at $1.22 without a market policy (and an
// all-on-demand plan in the same table was cheaper than the advice). Running without one is
// advised when it kept every deadline for over 5% less, the safe policy's price said beside it,
// and the scenario written is the plan as its figures were simulated.
TEST(PlanCli, ATightPlanIsAdvisedWithoutAMarketPolicyWhenTheSafeOnesCostFarMore) {
  const auto path = fresh_path("tight", "plan.toml");
  const CliResult o = run_cli(
      "plan --workload resnet-32 --steps 64000 --deadline 1h --runs 20 --threads 1 "
      "--seed 1 --json --emit-scenario " +
      path.string());
  ASSERT_EQ(o.exit_code, 0) << o.out;
  const auto r = nlohmann::json::parse(o.out)["recommended"];
  const auto& p = r["policy"];
  EXPECT_EQ(p["market_policy"], "none") << p;
  EXPECT_TRUE(p["fallback"].is_null()) << p;
  const auto& a = p["advice"];
  EXPECT_EQ(a["recommended"], "none");
  EXPECT_NEAR(a["expected_cost_usd"].get<double>(), r["expected_cost_usd"].get<double>(), 1e-9);
  const double greedy = a["policies"][0]["expected_cost_usd"].get<double>();
  EXPECT_GT(greedy, 2 * r["expected_cost_usd"].get<double>()) << a;
  const std::string text = p["text"];
  EXPECT_NE(text.find("run without a market policy (the workers stay on spot; nothing guards the "
                      "deadline): expected $1.22"),
            std::string::npos)
      << text;
  EXPECT_NE(
      text.find(fmt::format("the cheapest deadline-safe one, `greedy`, expected ${:.2f}", greedy)),
      std::string::npos)
      << text;
  const std::string scenario = read_text(path);
  EXPECT_NE(scenario.find("market = \"none\""), std::string::npos) << scenario;
  const CliResult sim =
      run_cli("simulate " + path.string() + " --runs 20 --seed 1 --threads 1 --json");
  ASSERT_EQ(sim.exit_code, 0) << sim.out;
  EXPECT_NEAR(nlohmann::json::parse(sim.out)["cost_usd"]["mean"].get<double>(),
              r["expected_cost_usd"].get<double>(), 1e-9);
}

TEST(PlanCli, EmittedScenarioIsThePlanAndSimulateReproducesTheAdvice) {
  const auto path = fresh_path("scenario", "plan.toml");
  const CliResult o = run_cli(kPlan + " --json --emit-scenario " + path.string());
  ASSERT_EQ(o.exit_code, 0) << o.out;
  const auto j = nlohmann::json::parse(o.out);
  EXPECT_EQ(j["scenario_file"], path.string());
  const auto& r = j["recommended"];
  const auto& p = r["policy"];

  transient::sim::ScenarioLoadOptions options;
  options.data_dir = TRANSIENT_SHARED_DATA_DIR;
  const transient::sim::Scenario s = transient::sim::load_scenario(path.string(), options);
  EXPECT_EQ(s.total_steps, 64000.0);
  EXPECT_EQ(s.deadline_s, 7200.0);
  EXPECT_EQ(s.architecture, transient::perf::Architecture::allreduce);
  ASSERT_EQ(s.workers.size(), r["workers"].size());
  for (std::size_t i = 0; i < s.workers.size(); ++i) {
    EXPECT_EQ(s.workers[i].type.name, r["workers"][i]["type"]);
    EXPECT_EQ(s.workers[i].type.zone, r["workers"][i]["zone"]);
    EXPECT_EQ(std::string(transient::cloud::to_string(s.workers[i].market)),
              r["workers"][i]["market"]);
    EXPECT_EQ(s.workers[i].count, r["workers"][i]["count"].get<int>());
  }
  ASSERT_EQ(s.parameter_servers.size(), 1u);
  EXPECT_EQ(s.parameter_servers[0].type.name, r["support_servers"][0]["type"]);
  EXPECT_EQ(s.replacement, p["replacement"]["policy"]);
  EXPECT_EQ(s.market_policy, p["market_policy"]);
  EXPECT_EQ(s.recovery, p["recovery"]);
  EXPECT_EQ(s.decision_interval_s, p["fallback"]["decision_interval_s"].get<double>());
  ASSERT_NE(s.market, nullptr);
  EXPECT_EQ(s.market->name(), "lifetime");
  // The periodic checkpoints the job is told to write (--checkpoint-every) and --json says: the
  // scenario had none ("0s") where the advice was simulated without them.
  EXPECT_EQ(p["market_policy"], p["advice"]["recommended"]);
  EXPECT_EQ(p["checkpoint_interval_s"].get<double>(), 600.0);
  EXPECT_EQ(s.checkpoint_interval_s, p["checkpoint_interval_s"].get<double>());
  EXPECT_EQ(p["advice"]["checkpoint_interval_s"].get<double>(), 600.0);
  EXPECT_EQ(s.notice_s, 30.0);  // GCE's, whose lifetimes and catalog these are

  // The same runs (seeds 1..20) as the advice: the recommended policy's expected cost.
  const CliResult sim =
      run_cli("simulate " + path.string() + " --runs 20 --seed 1 --threads 1 --json");
  ASSERT_EQ(sim.exit_code, 0) << sim.out;
  const auto k = nlohmann::json::parse(sim.out);
  EXPECT_NEAR(k["cost_usd"]["mean"].get<double>(), p["advice"]["expected_cost_usd"].get<double>(),
              1e-9);
  EXPECT_EQ(k["deadline_miss_probability"].get<double>(), 0.0);
}

// The emitted scenario's notice is the market's, as the plan was simulated with: EC2's two
// minutes for servers of an AWS catalog (it was GCE's 30 s whatever the cloud).
TEST(PlanCli, TheEmittedNoticeIsTheCloudsOfTheServers) {
  const auto path = fresh_path("aws_notice", "plan.toml");
  const CliResult o = run_cli(
      "plan --workload resnet-32 --steps 64000 --deadline 4h --catalog aws-deepvm --runs 4 "
      "--threads 1 --emit-scenario " +
      path.string());
  ASSERT_EQ(o.exit_code, 0) << o.out;
  const std::string text = read_text(path);
  EXPECT_NE(text.find("notice = \"120s\"\n"), std::string::npos) << text;
  EXPECT_NE(text.find("interval = \"600s\"\n"), std::string::npos) << text;
}

// A plan made with a `transient fit` model file writes it into the scenario as model_file (the
// scenario's `model` names the throughput model: the file's path under `model` as well was a
// TOML file that `simulate` refused), and simulate then predicts with the same file.
TEST(PlanCli, AScenarioEmittedWithAFitModelFileSimulatesWithIt) {
  const auto path = fresh_path("fit_model", "plan.toml");
  const auto model = path.parent_path() / "model.json";
  const CliResult fit = run_cli("fit --data " + std::string(TRANSIENT_SHARED_DATA_DIR) +
                                "/cmdare -o " + model.string());
  ASSERT_EQ(fit.exit_code, 0) << fit.out;
  const std::string flags = kPlan + " --json --throughput fitted --model " + model.string();
  const CliResult o = run_cli(flags + " --emit-scenario " + path.string());
  ASSERT_EQ(o.exit_code, 0) << o.out;
  const std::string text = read_text(path);
  EXPECT_NE(text.find("model = \"fitted\"\n"), std::string::npos) << text;
  EXPECT_NE(text.find("model_file = \"" + model.string() + "\"\n"), std::string::npos) << text;
  const auto p = nlohmann::json::parse(o.out)["recommended"]["policy"];
  const CliResult sim =
      run_cli("simulate " + path.string() + " --runs 20 --seed 1 --threads 1 --json");
  ASSERT_EQ(sim.exit_code, 0) << sim.out;
  EXPECT_NEAR(nlohmann::json::parse(sim.out)["cost_usd"]["mean"].get<double>(),
              p["advice"]["expected_cost_usd"].get<double>(), 1e-9);
  // The file is what the figures come from: the built-in fitted parameters predict otherwise.
  const CliResult builtin = run_cli(kPlan + " --json --throughput fitted");
  ASSERT_EQ(builtin.exit_code, 0) << builtin.out;
  EXPECT_NE(nlohmann::json::parse(builtin.out)["recommended"]["predicted_time_s"],
            nlohmann::json::parse(o.out)["recommended"]["predicted_time_s"]);
}

// `plan --evaluate` and `simulate` of the scenario it writes print the same statistics for the
// same seed and runs: one definition (sim::summarize) of the mean and p95 time and the rest.
TEST(PlanCli, EvaluateAndSimulatePrintTheSameStatistics) {
  const auto path = fresh_path("same_statistics", "plan.toml");
  const CliResult o = evaluate_4xk80("--budget 100", path);
  ASSERT_EQ(o.exit_code, 0) << o.out;
  const auto plan = nlohmann::json::parse(o.out);
  const CliResult s =
      run_cli("simulate " + path.string() + " --runs 20 --seed 3 --threads 1 --json");
  ASSERT_EQ(s.exit_code, 0) << s.out;
  const auto sim = nlohmann::json::parse(s.out);
  EXPECT_GT(sim["revocations"]["mean"].get<double>(), 0.0);  // the runs differ
  EXPECT_EQ(plan["p95_time_s"].get<double>(), sim["time_s"]["p95"].get<double>());
  EXPECT_EQ(plan["expected_time_s"].get<double>(), sim["time_s"]["mean"].get<double>());
  EXPECT_EQ(plan["expected_cost_usd"].get<double>(), sim["cost_usd"]["mean"].get<double>());
  EXPECT_DOUBLE_EQ(plan["unfinished_share"].get<double>(),
                   1.0 - sim["finished"].get<double>() / sim["runs"].get<double>());
  EXPECT_EQ(plan["deadline_miss_probability"].get<double>(),
            sim["deadline_miss_probability"].get<double>());
}

TEST(PlanCli, EmitScenarioRefusesAnExistingFileAndLeavesItAsItWas) {
  const auto path = fresh_path("exists", "plan.toml");
  std::ofstream(path) << "mine\n";
  const CliResult o = run_cli(kPlan + " --emit-scenario " + path.string());
  expect_one_line_error(o, "--emit-scenario " + path.string() + ": the file exists");
  EXPECT_EQ(read_text(path), "mine\n");
}

TEST(PlanCli, EmitScenarioToAnUnwritablePathIsOneLineAndWritesNothing) {
  // The parent "folder" is a file: nothing can be created beside the target.
  const auto blocker = fresh_path("unwritable", "not_a_folder");
  std::ofstream(blocker) << "x\n";
  const auto path = blocker / "plan.toml";
  const CliResult o = run_cli(kPlan + " --emit-scenario " + path.string());
  expect_one_line_error(o, "--emit-scenario " + path.string());
  int entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(blocker.parent_path())) {
    (void)e;
    ++entries;
  }
  EXPECT_EQ(entries, 1);  // the blocker alone: no temporary file left
  EXPECT_EQ(read_text(blocker), "x\n");
}

// A --plot in a missing directory failed after the plan, with an error naming no flag, and left
// the scenario of --emit-scenario written: it is refused before the search, naming --plot, and
// nothing is written.
TEST(PlanCli, AnUnwritablePlotIsRefusedFirstAndNothingIsWritten) {
  const auto path = fresh_path("unwritable_plot", "plan.toml");
  const auto plot = path.parent_path() / "missing" / "front.svg";
  const CliResult o =
      run_cli(kPlan + " --emit-scenario " + path.string() + " --plot " + plot.string());
  expect_one_line_error(o, "error: " + plot.string() + ": --plot: the directory " +
                               plot.parent_path().string() + " does not exist");
  EXPECT_FALSE(std::filesystem::exists(path));
  const auto folder = path.parent_path() / "folder.svg";
  std::filesystem::create_directories(folder);
  const CliResult into_dir =
      run_cli(kPlan + " --emit-scenario " + path.string() + " --plot " + folder.string());
  expect_one_line_error(into_dir, "error: " + folder.string() + ": --plot: is a directory");
  EXPECT_FALSE(std::filesystem::exists(path));
}

// Every server of aws-gpu has 8 GPUs, more workers than a global batch of 4 has samples: the
// reason said no configuration finished in 2 h and named a cluster that cannot run; the batch is
// the limit, and it says so.
TEST(PlanCli, ABatchNoServerCanSplitIsTheReasonGiven) {
  const CliResult o = run_cli(
      "plan --catalog aws-gpu --workload resnet-32 --steps 1000 --deadline 2h --runs 5 "
      "--threads 1 --global-batch 4 --json");
  ASSERT_EQ(o.exit_code, 0) << o.out;
  const auto j = nlohmann::json::parse(o.out);
  EXPECT_FALSE(j["feasible"].get<bool>());
  EXPECT_EQ(j["reason"],
            "no configuration trains a global batch of 4: every server of the catalog runs more "
            "workers (one per GPU), at least 8, so a worker would train on no sample; accepted: a "
            "global batch of 8 or more");
}

TEST(PlanCli, NothingToEmitForAnInfeasibleRequest) {
  const auto path = fresh_path("infeasible", "plan.toml");
  const CliResult o =
      run_cli("plan --workload resnet-32 --steps 64000 --deadline 5min --runs 5 --emit-scenario " +
              path.string());
  expect_one_line_error(o, "--emit-scenario: no plan is recommended");
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(PlanCli, EmittedTrainFlagsAreTheCoordinatorsAndMatchThePlan) {
  const CliResult flags_run = run_cli_split(kPlan + " --emit-train-flags");
  ASSERT_EQ(flags_run.exit_code, 0) << flags_run.out << flags_run.err;
  ASSERT_EQ(count_lines(flags_run.out), 1) << flags_run.out;
  std::map<std::string, std::string> flags;
  {
    std::istringstream words(flags_run.out);
    std::string flag, value;
    while (words >> flag) {
      ASSERT_EQ(flag.rfind("--", 0), 0u) << flags_run.out;
      ASSERT_TRUE(static_cast<bool>(words >> value)) << flag;
      flags[flag] = value;
    }
  }
  const auto j = nlohmann::json::parse(run_cli(kPlan + " --json").out);
  const auto& worker = j["recommended"]["workers"][0];
  const int servers = worker["count"];
  EXPECT_EQ(flags["--catalog"], "gce-2019");
  EXPECT_EQ(flags["--instance-type"], worker["type"]);
  // The zone the plan priced (a type sold in several zones at different prices needs it).
  EXPECT_EQ(flags["--zone"], worker["zone"]);
  EXPECT_EQ(flags["--market"], worker["market"]);
  EXPECT_EQ(flags["--min-workers"], std::to_string(servers));  // one GPU each
  EXPECT_EQ(flags["--steps"], "64000");
  // The plan's steps are the trainer's: resnet-32's batch of 128, split among the workers.
  EXPECT_EQ(flags["--global-batch"], "128");
  EXPECT_EQ(j["global_batch"], 128);
  EXPECT_EQ(flags["--checkpoint-every"], "600s");
  EXPECT_EQ(flags.size(), 8u);
  // CM-DARE's ResNet-32 is none of the trainer's models: --model is the user's to add, and a
  // note says so (a profile written by `transient profile` names its model:
  // ProfileTorchScript.ASequentialFileProfilesThroughTheCli).
  EXPECT_NE(flags_run.err.find("note: the workload resnet-32 names no model"), std::string::npos)
      << flags_run.err;
  EXPECT_EQ(count_lines(flags_run.err), 1) << flags_run.err;
  const auto catalog = transient::cloud::load_catalog(flags["--catalog"]);
  EXPECT_TRUE(catalog.find(flags["--instance-type"], flags["--zone"])
                  .has_market(*transient::cloud::parse_market(flags["--market"])));

  // Every flag is one `transient coordinator` declares: in its --help where the trainer is built,
  // else in the source that declares it.
  const bool trainer = run_cli("--version").out.find("without libtorch") == std::string::npos;
  const std::string options = trainer ? run_cli("coordinator --help").out
                                      : read_text(std::filesystem::path(TRANSIENT_SOURCE_DIR) /
                                                  "src/transient/cli/train_command.cc");
  for (const auto& [flag, value] : flags) {
    const std::string declared = trainer ? flag : "\"" + flag + "\"";
    EXPECT_NE(options.find(declared), std::string::npos) << flag;
  }
}

}  // namespace

namespace {

// The words of an --emit-train-flags line as flag -> value.
std::map<std::string, std::string> train_flags(const std::string& line) {
  std::map<std::string, std::string> flags;
  std::istringstream words(line);
  std::string flag, value;
  while (words >> flag >> value) flags[flag] = value;
  return flags;
}

// With all-reduce and a global batch of G, a cluster of more than G workers would leave one
// without a sample, which `transient train` refuses: the search recommends none (it recommended
// and listed clusters of 3 and 4), and says why of any it lists.
TEST(PlanCli, TheSearchRecommendsNoMoreWorkersThanTheGlobalBatchHasSamples) {
  const CliResult o = run_cli(kPlan + " --global-batch 2 --json");
  ASSERT_EQ(o.exit_code, 0) << o.out;
  const auto j = nlohmann::json::parse(o.out);
  auto workers_of = [](const nlohmann::json& plan) {
    int workers = 0;
    for (const auto& w : plan["workers"]) workers += w["count"].get<int>() * w["gpus"].get<int>();
    return workers;
  };
  EXPECT_LE(workers_of(j["recommended"]), 2) << j["recommended"].dump();
  for (const auto& c : j["candidates"]) {
    if (workers_of(c) <= 2) continue;
    EXPECT_FALSE(c["acceptable"].get<bool>()) << c.dump();
    EXPECT_NE(c["verdict"].get<std::string>().find("workers for a global batch of 2: a worker "
                                                   "would train on no sample"),
              std::string::npos)
        << c.dump();
  }
}

TEST(PlanCli, TrainFlagsCarryThePlansBatch) {
  const CliResult global = run_cli_split(kPlan + " --global-batch 512 --emit-train-flags");
  ASSERT_EQ(global.exit_code, 0) << global.out;
  EXPECT_EQ(train_flags(global.out)["--global-batch"], "512");
  EXPECT_EQ(train_flags(global.out).count("--per-worker-batch"), 0u);
  const CliResult per_worker = run_cli_split(kPlan + " --per-worker-batch 64 --emit-train-flags");
  ASSERT_EQ(per_worker.exit_code, 0) << per_worker.out;
  EXPECT_EQ(train_flags(per_worker.out)["--per-worker-batch"], "64");
  EXPECT_EQ(train_flags(per_worker.out).count("--global-batch"), 0u);
  const auto j = nlohmann::json::parse(run_cli(kPlan + " --per-worker-batch 64 --json").out);
  EXPECT_EQ(j["per_worker_batch"], 64);
  EXPECT_FALSE(j.contains("global_batch"));
}

TEST(PlanCli, BothBatchFlagsAreOneLineError) {
  const CliResult o = run_cli(kPlan + " --global-batch 128 --per-worker-batch 32");
  expect_one_line_error(o, "--global-batch and --per-worker-batch exclude each other");
  const CliResult zero = run_cli(kPlan + " --global-batch 0");
  EXPECT_EQ(zero.exit_code, 2) << zero.out;
  EXPECT_EQ(count_lines(zero.out), 1) << zero.out;
}

// A server with several GPUs runs one worker per GPU: the trainer waits for all of them.
TEST(PlanCli, MultiGpuServersRunOneWorkerPerGpu) {
  const CliResult o = run_cli_split(
      "plan --workload resnet-32 --steps 64000 --deadline 10h --runs 0 --catalog aws-gpu "
      "--evaluate 2xp3dn.24xlarge@use1-az1:on-demand --emit-train-flags");
  ASSERT_EQ(o.exit_code, 0) << o.out;
  EXPECT_EQ(train_flags(o.out)["--min-workers"], "16") << o.out;
  const CliResult json = run_cli(
      "plan --workload resnet-32 --steps 64000 --deadline 10h --runs 0 --catalog aws-gpu "
      "--evaluate 2xp3dn.24xlarge@use1-az1:on-demand --json");
  ASSERT_EQ(json.exit_code, 0) << json.out;
  const auto j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j["workers"][0]["count"], 2);
  EXPECT_EQ(j["workers"][0]["gpus"], 8);
  EXPECT_EQ(train_flags(o.out)["--global-batch"], "128") << o.out;
}

// `predict` and `plan` use one model with one meaning of a step: the same cluster has the same
// step time in both.
TEST(PlanCli, PlanAndPredictGiveTheSameStepTime) {
  for (const std::string batch : {"", " --per-worker-batch 32", " --global-batch 1024"}) {
    for (const std::string cluster : {"4xk80:spot", "2xv100,2xk80"}) {
      const CliResult plan = run_cli(
          "plan --workload resnet-32 --steps 64000 --deadline 10h --runs 0 --json --evaluate " +
          cluster + batch);
      ASSERT_EQ(plan.exit_code, 0) << plan.out;
      const CliResult predict =
          run_cli("predict --workload resnet-32 --json --cluster " + cluster + batch);
      ASSERT_EQ(predict.exit_code, 0) << predict.out;
      const auto a = nlohmann::json::parse(plan.out);
      const auto b = nlohmann::json::parse(predict.out);
      EXPECT_NEAR(a["step_time_s"].get<double>(), b["step_time_s"].get<double>(), 1e-12)
          << cluster << batch;
      EXPECT_NEAR(a["steps_per_s"].get<double>(), b["steps_per_s"].get<double>(), 1e-9)
          << cluster << batch;
      EXPECT_EQ(a["architecture"], "allreduce");
      EXPECT_EQ(b["architecture"], "allreduce");
    }
  }
}

}  // namespace

namespace {

// With all-reduce and a fixed global batch a mix is slower than the sum of its groups, which the
// programme adds: the front also holds the homogeneous clusters, whose speeds are exact.
TEST(PlanCli, AllReduceFrontHoldsHomogeneousClusters) {
  const CliResult o = run_cli(kPlan + " --json");
  ASSERT_EQ(o.exit_code, 0) << o.out;
  const auto j = nlohmann::json::parse(o.out);
  int homogeneous = 0;
  double fastest = 0.0;
  for (const auto& e : j["pareto"]) {
    if (e["workers"].size() == 1 && e["workers"][0]["count"].get<int>() >= 3) ++homogeneous;
    fastest = std::max(fastest, e["steps_per_s"].get<double>());
  }
  EXPECT_GE(homogeneous, 3) << j["pareto"].dump(1);
  // No judged candidate is faster than the front's fastest point.
  for (const auto& e : j["candidates"])
    EXPECT_LE(e["steps_per_s"].get<double>(), fastest * (1 + 1e-9));
}

}  // namespace

namespace {

// An infeasible deadline names the fastest cluster the model knows, not the programme's additive
// fastest mix.
TEST(PlanCli, InfeasibleDeadlineNamesTheFastestPointOfTheFront) {
  const CliResult o = run_cli(
      "plan --workload resnet-32 --steps 64000 --deadline 20min --runs 20 --threads 1 --json");
  ASSERT_EQ(o.exit_code, 0) << o.out;
  const auto j = nlohmann::json::parse(o.out);
  ASSERT_FALSE(j["feasible"].get<bool>());
  const nlohmann::json* fastest = nullptr;
  for (const auto& e : j["pareto"]) {
    if (!fastest || e["predicted_time_s"] < (*fastest)["predicted_time_s"]) fastest = &e;
  }
  ASSERT_NE(fastest, nullptr);
  EXPECT_NE(j["reason"].get<std::string>().find(
                "the fastest (" + (*fastest)["configuration"].get<std::string>() + ")"),
            std::string::npos)
      << j["reason"] << "\n"
      << (*fastest)["configuration"];
}

}  // namespace

namespace {

// The plan's batch goes into the scenario it writes: the simulator's model trains on it too, and
// the scenario gives the plan's speed.
TEST(PlanCli, EmittedScenarioCarriesTheBatch) {
  const auto path = fresh_path("scenario_batch", "plan.toml");
  const CliResult o =
      run_cli(kPlan + " --per-worker-batch 32 --json --emit-scenario " + path.string());
  ASSERT_EQ(o.exit_code, 0) << o.out;
  const auto j = nlohmann::json::parse(o.out);
  EXPECT_NE(read_text(path).find("per_worker_batch = \"32\""), std::string::npos)
      << read_text(path);
  transient::sim::ScenarioLoadOptions options;
  options.data_dir = TRANSIENT_SHARED_DATA_DIR;
  const transient::sim::Scenario s = transient::sim::load_scenario(path.string(), options);
  ASSERT_NE(s.throughput, nullptr);
  const auto& r = j["recommended"];
  transient::plan::Configuration c;
  for (const auto& g : s.workers) c.workers.push_back(g);
  EXPECT_NEAR(s.throughput->predict(c.shape(s.architecture)).steps_per_s,
              r["steps_per_s"].get<double>(), 1e-9);
}

}  // namespace

namespace {

// An infeasible budget names the cheapest cluster the model knows, not the programme's cheapest
// mix, whose groups' speeds add up (more than a mix trains at with all-reduce): the front has a
// cheaper one.
TEST(PlanCli, InfeasibleBudgetNamesTheCheapestPointOfTheFront) {
  const CliResult o =
      run_cli("plan --workload resnet-32 --steps 64000 --budget 0.9 --runs 2 --threads 1 --json");
  ASSERT_EQ(o.exit_code, 0) << o.out;
  const auto j = nlohmann::json::parse(o.out);
  ASSERT_FALSE(j["feasible"].get<bool>());
  const nlohmann::json* cheapest = nullptr;
  for (const auto& e : j["pareto"]) {
    if (!cheapest || e["predicted_cost_usd"] < (*cheapest)["predicted_cost_usd"]) cheapest = &e;
  }
  ASSERT_NE(cheapest, nullptr);
  EXPECT_NE(j["reason"].get<std::string>().find(
                "the cheapest (" + (*cheapest)["configuration"].get<std::string>() + ")"),
            std::string::npos)
      << j["reason"] << "\n"
      << (*cheapest)["configuration"];
}

// The quantile is named with the decimals it has: --confidence 0.996 is p99.6 (it was "p100").
TEST(PlanCli, TheQuantileIsNamedWithItsDecimals) {
  const CliResult o = run_cli(
      "plan --workload resnet-32 --steps 64000 --deadline 2h --runs 4 --threads 1 --confidence "
      "0.996 --evaluate 4xk80:spot");
  ASSERT_EQ(o.exit_code, 0) << o.out;
  EXPECT_NE(o.out.find(" p99.6 time "), std::string::npos) << o.out;
  // Its heading, wider than the others, keeps two spaces before it (it read "exp time p99.6
  // time"), and the row's columns end where their headings do.
  const auto header = o.out.find("exp time  p99.6 time  exp cost");
  ASSERT_NE(header, std::string::npos) << o.out;
  const auto line_start = o.out.rfind('\n', header) + 1;
  const auto row_start = o.out.find('\n', header) + 1;
  const auto cost_end = o.out.find("exp cost", header) + 8 - line_start;
  EXPECT_EQ(o.out.find(' ', o.out.find('$', row_start)) - row_start, cost_end) << o.out;
  EXPECT_NE(o.out.find("meets the deadline at p99.6 ("), std::string::npos) << o.out;
  EXPECT_EQ(o.out.find("p100"), std::string::npos) << o.out;
}

}  // namespace

namespace {

// --evaluate judges one cluster as written: a flag of the search it would ignore (each was
// accepted and changed nothing) is one line naming the flag.
// Zones that name none of the catalog's are refused naming --zones and the zones there are.
TEST(PlanCli, ZonesNowhereAreRefusedNamingTheFlag) {
  const CliResult o =
      run_cli("plan --workload resnet-32 --steps 64000 --deadline 2h --zones nowhere");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_EQ(o.out,
            "error: --zones nowhere: no GPU instance type of catalog gce-2019 there; accepted: "
            "the catalog's zones (or their regions): us-central1-a, us-east1-c\n");
}

TEST(PlanCli, EvaluateRefusesTheFlagsOfTheSearch) {
  const std::string evaluate =
      "plan --workload resnet-32 --steps 64000 --deadline 2h --runs 2 --evaluate 4xk80:spot ";
  for (const std::string flag : {"--zones us-east1-c", "--regions 2", "--max-servers 4",
                                 "--top-k 3", "--plot /tmp/transient_plan_evaluate.svg"}) {
    const CliResult o = run_cli(evaluate + flag);
    expect_one_line_error(o, "error: " + flag.substr(0, flag.find(' ')) + ": ");
    EXPECT_NE(o.out.find("--evaluate does not make"), std::string::npos) << o.out;
  }
  EXPECT_FALSE(std::filesystem::exists("/tmp/transient_plan_evaluate.svg"));
}

// A type named without its zone was priced at the catalog's first row: aws-gpu's p3dn.24xlarge
// was judged at apne1-az4's $13.20 an hour spot, where use1-az6 sells it at $3.26. Where the
// zones' prices differ the zone is asked for, as TYPE@ZONE; `predict`, which prices nothing,
// takes the type without it.
TEST(PlanCli, EvaluatingATypeSoldInSeveralZonesAtDifferentPricesNeedsItsZone) {
  const std::string evaluate =
      "plan --workload resnet-32 --steps 64000 --deadline 10h --runs 2 --catalog aws-gpu "
      "--evaluate ";
  const CliResult unzoned = run_cli(evaluate + "1xp3dn.24xlarge:spot");
  expect_one_line_error(unzoned,
                        "error: cluster \"1xp3dn.24xlarge:spot\": catalog aws-gpu: type "
                        "p3dn.24xlarge is sold in several zones at different prices: apne1-az4 "
                        "(on demand $42.78/h, spot $13.2/h), ");
  EXPECT_NE(unzoned.out.find("accepted: one of these zones given with the type as "
                             "p3dn.24xlarge@ZONE"),
            std::string::npos)
      << unzoned.out;
  const CliResult zoned = run_cli(evaluate + "1xp3dn.24xlarge@use1-az6:spot");
  ASSERT_EQ(zoned.exit_code, 0) << zoned.out;
  EXPECT_NE(zoned.out.find("1 x p3dn.24xlarge spot (use1-az6)"), std::string::npos) << zoned.out;
  EXPECT_NE(zoned.out.find("evaluate                   3.263 "), std::string::npos) << zoned.out;
  expect_one_line_error(run_cli(evaluate + "1xp3dn.24xlarge@use1-az9:spot"),
                        "error: cluster \"1xp3dn.24xlarge@use1-az9:spot\": catalog aws-gpu: type "
                        "p3dn.24xlarge is not in zone \"use1-az9\"; accepted: apne1-az4, ");
  const CliResult predicted =
      run_cli("predict --workload resnet-32 --catalog aws-gpu --cluster 2xp3dn.24xlarge");
  EXPECT_EQ(predicted.exit_code, 0) << predicted.out;
}

// --plot is honoured beside --emit-train-flags, which prints only the flags (no picture was
// written: the flags were printed and the command returned first).
TEST(PlanCli, PlotIsWrittenWithTrainFlags) {
  const auto path = fresh_path("plot_with_flags", "front.svg");
  const CliResult o = run_cli_split(kPlan + " --emit-train-flags --plot " + path.string());
  ASSERT_EQ(o.exit_code, 0) << o.out << o.err;
  EXPECT_EQ(count_lines(o.out), 1) << o.out;
  EXPECT_EQ(read_text(path).rfind("<svg", 0), 0u);
}

}  // namespace

namespace {

// A cluster too large for its market requests a million servers in a run: the run is counted
// unfinished, and the plan is judged (it was an error naming a [market] table the user never
// wrote, which also ended a whole search). A sample a worker: a smaller global batch is refused.
TEST(PlanCli, ARunThatRequestsAMillionServersIsUnfinished) {
  const CliResult o = run_cli(
      "plan --workload resnet-32 --steps 64000 --deadline 2h --runs 1 --threads 1 --json "
      "--evaluate 100000xk80:spot --global-batch 100000");
  ASSERT_EQ(o.exit_code, 0) << o.out;
  const auto j = nlohmann::json::parse(o.out);
  EXPECT_EQ(j["unfinished_share"], 1.0);
  EXPECT_FALSE(j["acceptable"].get<bool>());
}

// Without a deadline, a plan's spot servers are rented until the budget ("stop renting at $B"):
// the plan's figures are runs that stop there, unfinished, and the scenario it writes stops them
// there too, so `simulate` gives the same figures.
TEST(PlanCli, ABudgetOnlyPlanIsSimulatedAndWrittenWithItsStop) {
  const auto path = fresh_path("budget_stop", "plan.toml");
  const CliResult o = run_cli(
      "plan --workload resnet-32 --steps 64000 --budget 1.55 --runs 20 --threads 1 --seed 3 --json "
      "--evaluate 4xk80:spot --emit-scenario " +
      path.string());
  ASSERT_EQ(o.exit_code, 0) << o.out;
  const auto plan = nlohmann::json::parse(o.out);
  EXPECT_NE(plan["policy"]["text"].get<std::string>().find("stop renting at $1.55"),
            std::string::npos);
  // Revocations make one run of the 20 dearer than $1.55 (it would cost $1.558): it stops there.
  EXPECT_EQ(plan["budget_stop_share"].get<double>(), 0.05);
  EXPECT_TRUE(plan["acceptable"].get<bool>());
  EXPECT_LE(plan["expected_cost_usd"].get<double>(), 1.55 + 1e-9);
  EXPECT_NE(read_text(path).find("[job]\nsteps = 64000\nbudget = 1.55\n"), std::string::npos)
      << read_text(path);
  const CliResult s =
      run_cli("simulate " + path.string() + " --runs 20 --seed 3 --threads 1 --json");
  ASSERT_EQ(s.exit_code, 0) << s.out;
  const auto sim = nlohmann::json::parse(s.out);
  EXPECT_EQ(plan["expected_cost_usd"].get<double>(), sim["cost_usd"]["mean"].get<double>());
  EXPECT_EQ(plan["p95_time_s"].get<double>(), sim["time_s"]["p95"].get<double>());
  EXPECT_DOUBLE_EQ(plan["budget_stop_share"].get<double>(),
                   sim["budget_stops"].get<double>() / sim["runs"].get<double>());
}

}  // namespace
