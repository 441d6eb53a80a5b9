// The `transient simulate` command through the real binary, on every scenario in examples/.
#include <gtest/gtest.h>

#include "common/cli_run.h"
#include "common/example_scenario.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace {

using transient::testing::CliResult;

std::string fmt_cost(double usd) {
  char text[32];
  std::snprintf(text, sizeof text, "cost $%.2f", usd);
  return text;
}

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

// An error quoting the file's text shows its control characters as '?': a key with a newline and
// a terminal escape printed two lines and turned the terminal red.
TEST(SimulateCli, AnErrorQuotingControlCharactersIsOneLineWithoutThem) {
  const std::string path = ::testing::TempDir() + "/control_key.toml";
  std::ofstream(path) << "[job]\nsteps = 10\n\"bad\\nkey\\u001b[31m\" = 1\n";
  const CliResult r = run_cli("simulate " + path);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown key \"bad?key?[31m\""), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(r.err.find('\x1b'), std::string::npos) << r.err;
}

// examples/two_zones_k80.toml with `from` replaced by `to` (each must occur), written to a
// temporary file named after `name`.
std::string two_zones_with(const std::string& name,
                           const std::vector<std::pair<std::string, std::string>>& edits) {
  const std::string path = ::testing::TempDir() + "/" + name + ".toml";
  EXPECT_TRUE(transient::testing::write_example_with("two_zones_k80", edits, path));
  return path;
}

// The two zones' [[regions]] of the example, to cut or replace.
const std::string kZoneB =
    "[[regions]]\nname = \"us-west-2b\"\nmodel = \"trace\"\nfile = \"us-west-2b_k80_1\"\n"
    "offset = \"random\"\n";

TEST(SimulateCli, SeveralRegionsRunAgainstTheMultiRegionOptimum) {
  const std::string file = std::string(TRANSIENT_SOURCE_DIR) + "/examples/two_zones_k80.toml";
  const CliResult many = run_cli("simulate " + file + " --runs 30 --threads 2 --json");
  ASSERT_EQ(many.exit_code, 0) << many.err;
  const auto json = nlohmann::json::parse(many.out);
  EXPECT_EQ(json["regions"], nlohmann::json({"us-west-2a", "us-west-2b"}));
  EXPECT_EQ(json["market_policy"], "market-aware");
  EXPECT_EQ(json["runs"], 30);
  EXPECT_EQ(json["finished"], 30);
  // A deadline-safe policy misses no deadline, and no run beats the optimum.
  EXPECT_EQ(json["deadline_miss_probability"].get<double>(), 0.0);
  EXPECT_EQ(json["runs_with_optimum"], 30);
  EXPECT_GE(json["cost_over_optimal"].get<double>(), 1.0 - 1e-9);
  EXPECT_LE(json["optimal"]["cost_usd"]["mean"].get<double>(),
            json["cost_usd"]["mean"].get<double>() + 1e-9);
  EXPECT_EQ(json["optimal"]["feasible_runs"], 30);
  EXPECT_LE(json["time_s"]["p99"].get<double>(), 18 * 3600.0);
  const CliResult again = run_cli("simulate " + file + " --runs 30 --threads 1 --json");
  EXPECT_EQ(again.out, many.out);

  // `optimal` is the multi-region optimum itself; on-demand-only costs more than market-aware.
  const CliResult optimal = run_cli(
      "simulate " +
      two_zones_with("two_zones_optimal", {{"market = \"market-aware\"", "market = \"optimal\""}}) +
      " --runs 30 --json");
  ASSERT_EQ(optimal.exit_code, 0) << optimal.err;
  const auto o = nlohmann::json::parse(optimal.out);
  EXPECT_NEAR(o["cost_over_optimal"].get<double>(), 1.0, 1e-9);
  EXPECT_NEAR(o["cost_usd"]["mean"].get<double>(),
              json["optimal"]["cost_usd"]["mean"].get<double>(), 1e-9);
  const CliResult on_demand =
      run_cli("simulate " +
              two_zones_with("two_zones_on_demand",
                             {{"market = \"market-aware\"", "market = \"on-demand-only\""}}) +
              " --runs 30 --json");
  ASSERT_EQ(on_demand.exit_code, 0) << on_demand.err;
  EXPECT_GT(nlohmann::json::parse(on_demand.out)["cost_over_optimal"].get<double>(),
            json["cost_over_optimal"].get<double>());
  EXPECT_NEAR(nlohmann::json::parse(on_demand.out)["mean_moves"].get<double>(), 0.0, 1e-12);
}

TEST(SimulateCli, OneRunInSeveralRegionsPrintsItsScheduleAndTheOptimum) {
  const std::string file = std::string(TRANSIENT_SOURCE_DIR) + "/examples/two_zones_k80.toml";
  const CliResult text = run_cli("simulate " + file + " --seed 3");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("in 2 regions (us-west-2a, us-west-2b), market-aware policy"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("x the multi-region optimum"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("deadline 18 h 00 min: met"), std::string::npos) << text.out;
  const CliResult json_run = run_cli("simulate " + file + " --seed 3 --json");
  ASSERT_EQ(json_run.exit_code, 0) << json_run.err;
  const auto j = nlohmann::json::parse(json_run.out);
  // The schedule, tick by tick, adds up to the run: its moves are changes of region on spot.
  int moves = 0;
  std::string region;
  for (const auto& tick : j["ticks"]) {
    if (tick["mode"] == "spot" && !region.empty() && tick["region"] != region) ++moves;
    if (tick["mode"] != "idle") region = tick["region"];
  }
  EXPECT_EQ(moves, j["moves"].get<int>());
  EXPECT_GE(j["cost_usd"].get<double>(), j["optimal_cost_usd"].get<double>() - 1e-9);
  EXPECT_NE(text.out.find(fmt_cost(j["cost_usd"].get<double>())), std::string::npos) << text.out;
}

// A 12 h job on one K80 server with an 18 h deadline; `markets` are its [market] and
// [[regions]] tables.
std::string k80_job(const std::string& name, const std::string& markets,
                    const std::string& policy) {
  const std::string path = ::testing::TempDir() + "/" + name + ".toml";
  std::ofstream(path) << "[job]\nsteps = 195000\ndeadline = \"18h\"\n"
                         "[throughput]\nmodel = \"table\"\nworkload = \"resnet-32\"\n"
                         "architecture = \"allreduce\"\n"
                         "[[instance_types]]\nname = \"p2.xlarge\"\ngpu = \"K80\"\n"
                         "on_demand_usd_per_h = 0.90\nspot_usd_per_h = 0.27\n"
                         "[[cluster.workers]]\ntype = \"p2.xlarge\"\n"
                      << markets
                      << "[startup]\nspot = \"90s\"\non_demand = \"90s\"\n"
                         "[policy]\nmarket = \""
                      << policy << "\"\ndecision_interval = \"10m\"\n";
  return path;
}

// With one region the multi-region model is the single-region optimum's accounting: on a trace
// replayed from a tick boundary, `optimal` costs what the event simulator's `optimal` costs.
TEST(SimulateCli, OneRegionCostsWhatTheSingleRegionOptimumCosts) {
  for (const std::string offset : {"0s", "12h", "5d"}) {
    const std::string one_region =
        k80_job("one_region",
                "[market]\nnotice = \"2m\"\n[[regions]]\nname = \"us-west-2a\"\nmodel = \"trace\"\n"
                "file = \"us-west-2a_k80_1\"\noffset = \"" +
                    offset + "\"\n",
                "optimal");
    const std::string single =
        k80_job("single_region",
                "[market]\nnotice = \"2m\"\nmodel = \"trace\"\nfile = \"us-west-2a_k80_1\"\n"
                "offset = \"" +
                    offset + "\"\n",
                "optimal");
    const CliResult a = run_cli("simulate " + one_region + " --json");
    const CliResult b = run_cli("simulate " + single + " --json");
    ASSERT_EQ(a.exit_code, 0) << a.err;
    ASSERT_EQ(b.exit_code, 0) << b.err;
    const auto ja = nlohmann::json::parse(a.out);
    const auto jb = nlohmann::json::parse(b.out);
    EXPECT_EQ(ja["regions"].size(), 1u);
    EXPECT_FALSE(jb["missed_deadline"].get<bool>()) << offset;
    EXPECT_GT(ja["cost_usd"].get<double>(), 0.0);
    EXPECT_NEAR(ja["cost_usd"].get<double>(), jb["cost_usd"].get<double>(), 1e-6) << offset;
    EXPECT_NEAR(ja["time_s"].get<double>(), jb["time_s"].get<double>(), 1e-6) << offset;
  }
}

// A random model's servers are revoked at random moments, each region's on its own: with short
// lifetimes the runs differ, and the optimum moves to the region whose server still holds.
TEST(SimulateCli, RandomMarketsRevokeEachRegionOnItsOwn) {
  const std::string path =
      k80_job("exponential_regions",
              "[market]\nnotice = \"30s\"\n"
              "[[regions]]\nname = \"east\"\nmodel = \"exponential\"\nmean = \"40m\"\n"
              "[[regions]]\nname = \"west\"\nmodel = \"exponential\"\nmean = \"40m\"\n",
              "optimal");
  double least = 1e9;
  double most = 0.0;
  int moves = 0;
  for (int seed = 1; seed <= 6; ++seed) {
    const CliResult r = run_cli("simulate " + path + " --json --seed " + std::to_string(seed));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    ASSERT_TRUE(j["optimal_finished"].get<bool>());
    least = std::min(least, j["optimal_cost_usd"].get<double>());
    most = std::max(most, j["optimal_cost_usd"].get<double>());
    moves += j["optimal_moves"].get<int>();
  }
  EXPECT_LT(least, most);
  EXPECT_GT(moves, 0);
}

// Both zones' traces start at the same moment of a run (same seed), so the two-zone optimum is
// never dearer than either zone's alone, and cheaper in some runs (on the V100 traces, where the
// zones' outages differ more than on the K80 ones).
TEST(SimulateCli, TwoZonesOptimumIsNoDearerThanEitherZoneAlone) {
  const std::string both = two_zones_with("both_v100", {{"us-west-2a_k80_1", "us-west-2a_v100_1"},
                                                        {"us-west-2b_k80_1", "us-west-2b_v100_1"}});
  const std::string only_a =
      two_zones_with("only_a", {{kZoneB, ""}, {"us-west-2a_k80_1", "us-west-2a_v100_1"}});
  const std::string only_b =
      two_zones_with("only_b", {{kZoneB, ""}, {"us-west-2a_k80_1", "us-west-2b_v100_1"}});
  int cheaper = 0;
  for (int seed = 1; seed <= 12; ++seed) {
    const std::string flags = " --json --seed " + std::to_string(seed);
    double optimal[3];
    int i = 0;
    for (const auto& file : {both, only_a, only_b}) {
      const CliResult r = run_cli("simulate " + file + flags);
      ASSERT_EQ(r.exit_code, 0) << r.err;
      optimal[i++] = nlohmann::json::parse(r.out)["optimal_cost_usd"].get<double>();
    }
    EXPECT_LE(optimal[0], std::min(optimal[1], optimal[2]) + 1e-9) << seed;
    cheaper += optimal[0] < std::min(optimal[1], optimal[2]) - 1e-6;
  }
  EXPECT_GT(cheaper, 0);
}

TEST(SimulateCli, BadRegionIsOneErrorLineAndExitCode2) {
  struct Case {
    std::vector<std::pair<std::string, std::string>> edits;
    std::string where;     // what the line must name, after "error: FILE:LINE: "
    std::string accepted;  // what it must say is accepted
  };
  const std::vector<Case> cases = {
      {{{"name = \"us-west-2b\"\n", ""}},
       "[[regions]] name: missing",
       "accepted: the region's or zone's name"},
      {{{"name = \"us-west-2b\"", "name = \"us-west-2a\""}},
       "[[regions]] name",
       "a name not given before"},
      {{{"model = \"trace\"\nfile = \"us-west-2b", "model = \"tarce\"\nfile = \"us-west-2b"}},
       "unknown market model \"tarce\"",
       "accepted: lifetime"},
      {{{"file = \"us-west-2b_k80_1\"", "fil = \"us-west-2b_k80_1\""}}, "", "accepted"},
      {{{"file = \"us-west-2b_k80_1\"", "file = \"us-west-2b_k80_1\"\nnotice = \"30s\""}},
       "[[regions]] notice",
       "accepted in [[regions]]: name, model"},
      {{{"[market]\nnotice = \"2m\"", "[market]\nmodel = \"trace\"\nnotice = \"2m\""}},
       "[market] model",
       "accepted in [market]: notice"},
      {{{"market = \"market-aware\"", "market = \"none\""}},
       "[policy] market",
       "accepted: spot-only"},
      {{{"checkpoint = \"1m\"", "checkpoint = \"9m\""}},
       "[policy] market",
       "decision interval longer than"},
      {{{"usd = 0.0", "usd = -1"}}, "[move] usd", "accepted"},
      {{{"checkpoint = \"1m\"", "chekpoint = \"1m\""}},
       "unknown key \"chekpoint\" in [move]",
       "accepted: checkpoint, usd"},
  };
  int n = 0;
  for (const auto& c : cases) {
    const std::string path = two_zones_with("bad_region_" + std::to_string(n++), c.edits);
    const CliResult r = run_cli("simulate " + path);
    EXPECT_EQ(r.exit_code, 2) << path << ": " << r.out;
    EXPECT_EQ(r.err.rfind("error: " + path + ":", 0), 0u) << r.err;
    // FILE:LINE: with a line number, then the key and what is accepted.
    const std::string rest = r.err.substr(std::min(r.err.size(), path.size() + 8));
    EXPECT_TRUE(!rest.empty() && std::isdigit(static_cast<unsigned char>(rest[0]))) << r.err;
    EXPECT_NE(r.err.find(c.where), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(c.accepted), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  // [move] without regions.
  const std::string single = ::testing::TempDir() + "/move_without_regions.toml";
  {
    std::ifstream in(std::string(TRANSIENT_SOURCE_DIR) + "/examples/trace_deadline_k80.toml");
    std::stringstream text;
    text << in.rdbuf();
    std::ofstream(single) << text.str() << "\n[move]\ncheckpoint = \"1m\"\n";
  }
  const CliResult r = run_cli("simulate " + single);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("error: " + single + ":", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("add [[regions]]"), std::string::npos) << r.err;
}

// A deadline no run can meet (12 h of work by 10 h) is said before the figures, with the fastest
// run's time, in one region and in several; a deadline the runs meet is not.
TEST(SimulateCli, ADeadlineNoRunMetIsSaidBeforeTheFigures) {
  for (const std::string example : {"trace_deadline_k80", "two_zones_k80"}) {
    const CliResult met = run_cli("simulate " + std::string(TRANSIENT_SOURCE_DIR) + "/examples/" +
                                  example + ".toml --runs 10");
    ASSERT_EQ(met.exit_code, 0) << met.err;
    EXPECT_EQ(met.out.find("no run met"), std::string::npos) << met.out;

    const std::string path = ::testing::TempDir() + "/" + example + "_10h.toml";
    ASSERT_TRUE(transient::testing::write_example_with(
        example, {{"deadline = \"18h\"", "deadline = \"10h\""}}, path));
    const CliResult r = run_cli("simulate " + path + " --runs 10");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto said =
        r.out.find("no run met the deadline (10 h 00 min): the fastest of the 10 took 12 h");
    ASSERT_NE(said, std::string::npos) << r.out;
    EXPECT_LT(said, r.out.find("time (h)")) << r.out;
    EXPECT_NE(r.out.find("P(miss deadline)       1.0000"), std::string::npos) << r.out;
    if (example == "two_zones_k80") {  // no optimum either, so no figures of one
      EXPECT_NE(r.out.find("none: no schedule meets the deadline"), std::string::npos) << r.out;
      EXPECT_EQ(r.out.find("cost / optimal"), std::string::npos) << r.out;
    }
  }
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

namespace {

// A scenario of two spot workers whose servers live a second on average and take a minute to
// start: no run finishes, each requests servers until it gives up.
std::string short_lived_servers(const std::string& name) {
  const std::string path = ::testing::TempDir() + "/" + name + ".toml";
  std::ofstream(path) << "[job]\nsteps = 1000\n[throughput]\nmodel = \"analytic\"\nworkload = "
                         "\"resnet-32\"\n[cluster]\ncatalog = \"gce-2019\"\n[[cluster.workers]]\n"
                         "type = \"n1-standard-4+k80\"\ncount = 2\n[market]\nmodel = "
                         "\"exponential\"\nmean = \"1s\"\n[startup]\nspot = \"60s\"\n";
  return path;
}

// A run that requests a million servers gives up, unfinished, and says so: it was an error
// without the file's line ("[market]: one run requested 1000000 servers ...", exit 2).
TEST(SimulateCli, ARunThatRequestsAMillionServersGivesUpUnfinished) {
  const std::string path = short_lived_servers("million_requests");
  const CliResult one = run_cli("simulate " + path);
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_NE(one.out.find("NOT finished: gave up after 1,000,000 server requests (servers that "
                         "live shorter than they take to start are requested without end)"),
            std::string::npos)
      << one.out;
  // Its timeline of three million events shows its first and last hundred (it printed them all).
  EXPECT_NE(one.out.find("  ... 2,999,800 events not shown (--json has every one) ...\n"),
            std::string::npos)
      << one.out.substr(0, 20000);
  EXPECT_LT(std::count(one.out.begin(), one.out.end(), '\n'), 220);
  const CliResult many = run_cli("simulate " + path + " --runs 2 --threads 1");
  ASSERT_EQ(many.exit_code, 0) << many.err;
  EXPECT_NE(many.out.find("finished               0 of 2"), std::string::npos) << many.out;
  EXPECT_NE(many.out.find("note: 2 of the runs gave up after 1,000,000 server requests each"),
            std::string::npos)
      << many.out;
}

// [job] budget: renting stops when a run's cost reaches it, and the run is unfinished.
TEST(SimulateCli, ABudgetStopsTheRuns) {
  const std::string path = ::testing::TempDir() + "/budget_stop.toml";
  std::ofstream(path) << "[job]\nsteps = 64000\nbudget = 0.5\n[throughput]\nmodel = "
                         "\"analytic\"\nworkload = \"resnet-32\"\n[cluster]\ncatalog = "
                         "\"gce-2019\"\n[[cluster.workers]]\ntype = \"n1-standard-4+k80\"\n"
                         "count = 4\nmarket = \"on-demand\"\n";
  const CliResult one = run_cli("simulate " + path);
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_NE(one.out.find("NOT finished: renting stopped at the budget ($0.50) after "),
            std::string::npos)
      << one.out;
  EXPECT_NE(one.out.find("cost $0.50 "), std::string::npos) << one.out;
  const CliResult many = run_cli("simulate " + path + " --runs 3 --threads 1");
  ASSERT_EQ(many.exit_code, 0) << many.err;
  EXPECT_NE(many.out.find("finished               0 of 3 (0 failed, 3 stopped at the budget "
                          "$0.50)"),
            std::string::npos)
      << many.out;
}

// Without a deadline nothing can miss it: runs stopped at the horizon made `simulate` print
// P(miss deadline) 1.0000 (deadline none), and one run's --json "missed_deadline": true. They
// are unfinished runs, counted in "finished", and miss no deadline.
TEST(SimulateCli, WithoutADeadlineNoRunMissesIt) {
  const std::string path = ::testing::TempDir() + "/no_deadline_horizon.toml";
  std::ofstream(path) << "[job]\nsteps = 64000\nhorizon = \"10min\"\n[throughput]\nmodel = "
                         "\"analytic\"\nworkload = \"resnet-32\"\n[cluster]\ncatalog = "
                         "\"gce-2019\"\n[[cluster.workers]]\ntype = \"n1-standard-4+k80\"\n"
                         "count = 4\nmarket = \"on-demand\"\n";
  const CliResult many = run_cli("simulate " + path + " --runs 3 --threads 1");
  ASSERT_EQ(many.exit_code, 0) << many.err;
  EXPECT_NE(many.out.find("finished               0 of 3"), std::string::npos) << many.out;
  EXPECT_NE(many.out.find("P(miss deadline)       0.0000 (deadline none)"), std::string::npos)
      << many.out;
  const CliResult json = run_cli("simulate " + path + " --runs 3 --threads 1 --json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(nlohmann::json::parse(json.out)["deadline_miss_probability"], 0.0) << json.out;
  const CliResult one = run_cli("simulate " + path + " --json");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const auto run = nlohmann::json::parse(one.out);
  EXPECT_EQ(run["finished"], false) << one.out;
  EXPECT_EQ(run["missed_deadline"], false) << one.out;
}

// --seed was read as a double below 1.8e19: 18446744073709551610, a seed the docs allow
// (0 .. 2^64 - 1), was refused with a message stating another rule. It is read as a 64-bit
// integer, every seed of the range taken as written and the next refused with the range.
TEST(SimulateCli, EverySeedOfSixtyFourBitsIsTakenAsWritten) {
  const std::string scenario =
      std::string(TRANSIENT_SOURCE_DIR) + "/examples/paper_4_spot_k80.toml";
  for (const std::string seed : {"0", "18446744073709551610", "18446744073709551615"}) {
    const CliResult r = run_cli("simulate " + scenario + " --seed " + seed + " --json");
    ASSERT_EQ(r.exit_code, 0) << seed << ": " << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out)["seed"].get<std::uint64_t>(), std::stoull(seed));
  }
  for (const std::string seed : {"18446744073709551616", "-1", "1e3", "0x10", "1.5", "+3", ""}) {
    const CliResult r = run_cli("simulate " + scenario + " --seed '" + seed + "'");
    EXPECT_EQ(r.exit_code, 2) << seed << ": " << r.out;
    EXPECT_EQ(transient::testing::count_lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find("accepted: a whole number from 0 to 2^64 - 1 (18446744073709551615)"),
              std::string::npos)
        << seed << ": " << r.err;
  }
  // Leading zeros are decimal, not octal.
  const CliResult zeros = run_cli("simulate " + scenario + " --seed 010 --json");
  ASSERT_EQ(zeros.exit_code, 0) << zeros.err;
  EXPECT_EQ(nlohmann::json::parse(zeros.out)["seed"], 10);
}

// strtod reads hexadecimal: `simulate --runs 0x3` ran 3 runs and deadline = "0x10s" was 16 s.
TEST(SimulateCli, HexadecimalNumbersAreRefused) {
  const std::string scenario =
      std::string(TRANSIENT_SOURCE_DIR) + "/examples/paper_4_spot_k80.toml";
  const CliResult runs = run_cli("simulate " + scenario + " --runs 0x3");
  EXPECT_EQ(runs.exit_code, 2) << runs.out;
  EXPECT_NE(runs.err.find("\"0x3\"; accepted: "), std::string::npos) << runs.err;
  const std::string path = ::testing::TempDir() + "/hex_deadline.toml";
  ASSERT_TRUE(transient::testing::write_example_with(
      "paper_4_spot_k80", {{"steps = 64000", "steps = 64000\ndeadline = \"0x10s\""}}, path));
  const CliResult deadline = run_cli("simulate " + path);
  EXPECT_EQ(deadline.exit_code, 2) << deadline.out;
  EXPECT_NE(deadline.err.find("\"0x10s\" is not a duration"), std::string::npos) << deadline.err;
}

// simulate ran an all-reduce cluster of more workers than samples a step; it is refused at the
// batch's line in train's words.
TEST(SimulateCli, AGlobalBatchSmallerThanTheWorkersIsRefusedAtItsLine) {
  const std::string path = ::testing::TempDir() + "/small_global_batch.toml";
  std::ofstream(path) << "[job]\nsteps = 64000\n[throughput]\nmodel = \"analytic\"\nworkload = "
                         "\"resnet-32\"\nglobal_batch = 3\n[cluster]\ncatalog = \"gce-2019\"\n"
                         "[[cluster.workers]]\ntype = \"n1-standard-4+k80\"\ncount = 4\n"
                         "market = \"on-demand\"\n";
  const CliResult r = run_cli("simulate " + path);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_EQ(r.err, "error: " + path +
                       ":6: [throughput] global_batch: 3 samples a step for 4 workers would leave "
                       "a worker without any; accepted: a global batch of at least the workers, "
                       "or fewer workers\n");
}

}  // namespace
