#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>

#include "transient/core/error.h"
#include "transient/sim/monte_carlo.h"
#include "transient/sim/scenario_loader.h"
#include "transient/sim/simulator.h"

namespace transient::sim {
namespace {

// Line numbers below count from the first line of this text.
const std::string kValid = R"(name = "golden"
[job]
steps = 1000
[throughput]
model = "table"
table = "unused"
[[instance_types]]
name = "k80-server"
gpu = "K80"
on_demand_usd_per_h = 0.72
spot_usd_per_h = 0.36
[[instance_types]]
name = "cpu-server"
on_demand_usd_per_h = 0.36
[[cluster.workers]]
type = "k80-server"
count = 2
market = "on-demand"
[[cluster.parameter_servers]]
type = "cpu-server"
[startup]
on_demand = "10s"
[recovery]
model = "in-place"
reform = "5s"
)";

ScenarioLoadOptions options() {
  ScenarioLoadOptions o;
  o.data_dir = TRANSIENT_SHARED_DATA_DIR;
  return o;
}

// The speeds table the scenarios name, one file per test process: CTest runs this suite's
// tests as processes side by side, and one shared path was truncated by one test while another
// read it (a flaky failure under -j4). Written before the tests and removed after them.
class SpeedsFile : public ::testing::Environment {
 public:
  static std::string path() {
    return ::testing::TempDir() + "/unit_speeds_" + std::to_string(::getpid()) + ".csv";
  }
  void SetUp() override { std::ofstream(path()) << "gpu,workers,steps_per_s\nK80,1,1\nK80,2,2\n"; }
  void TearDown() override { std::remove(path().c_str()); }
};
[[maybe_unused]] ::testing::Environment* const kSpeedsFile =
    ::testing::AddGlobalTestEnvironment(new SpeedsFile);

std::string with_speeds(std::string text) {
  const std::string path = SpeedsFile::path();
  const auto at = text.find("\"unused\"");
  return text.replace(at, 8, "\"" + path + "\"");
}

std::string error_of(const std::string& text) {
  try {
    parse_scenario(text, "bad.toml", ".", options());
  } catch (const InputError& error) {
    return error.what();
  }
  return "no error";
}

std::string replace(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

TEST(ScenarioLoader, ValidScenarioRunsAsTheGoldenOne) {
  const Scenario s = parse_scenario(with_speeds(kValid), "golden.toml", ".", options());
  EXPECT_EQ(s.name, "golden");
  ASSERT_EQ(s.workers.size(), 1u);
  EXPECT_EQ(s.workers[0].count, 2);
  ASSERT_EQ(s.parameter_servers.size(), 1u);
  const RunResult r = Simulator(s).run(1);
  EXPECT_NEAR(r.time_s, 515.0, 1e-9);
  EXPECT_NEAR(r.cost_usd, 2 * 515 * 0.0002 + 515 * 0.0001, 1e-9);
}

// One default architecture everywhere (issue 16): all-reduce, what `transient train` runs.
TEST(ScenarioLoader, ArchitectureDefaultsToAllReduce) {
  const Scenario s = parse_scenario(with_speeds(kValid), "golden.toml", ".", options());
  EXPECT_EQ(s.architecture, perf::Architecture::allreduce);
}

// The job's batch is a number, or the same number as a string (what `plan --emit-scenario`
// writes); either reaches the throughput model, which checks it.
TEST(ScenarioLoader, TheJobsBatchIsANumberOrItsText) {
  std::string analytic = replace(kValid, "model = \"table\"\ntable = \"unused\"",
                                 "model = \"analytic\"\nworkload = \"resnet-32\"\nBATCH");
  analytic = replace(analytic, "gpu = \"K80\"", "gpu = \"K80\"\ngpu_tflops = 4.113");
  for (const std::string batch : {"global_batch = 512", "global_batch = \"512\"",
                                  "per_worker_batch = 64", "global_batch = 512.0"}) {
    const Scenario s = parse_scenario(replace(analytic, "BATCH", batch), "b.toml", ".", options());
    EXPECT_NE(s.throughput, nullptr) << batch;
  }
  EXPECT_NE(error_of(replace(analytic, "BATCH", "global_batch = 0")).find("global_batch is \"0\""),
            std::string::npos);
  // A number that is no whole batch is the model's to refuse, as the number it is (512.0 and
  // 512.5 were both "expected a string in quotes").
  EXPECT_NE(error_of(replace(analytic, "BATCH", "global_batch = 512.5"))
                .find("global_batch is \"512.5\"; accepted: "),
            std::string::npos);
}

// A bad parameter of the throughput model is reported at its own line (line 7 here), not at the
// first parameter's (workload, line 6).
TEST(ScenarioLoader, AThroughputParameterIsRefusedAtItsLine) {
  const std::string analytic = replace(kValid, "model = \"table\"\ntable = \"unused\"",
                                       "model = \"analytic\"\nworkload = \"resnet-32\"\nBATCH");
  EXPECT_EQ(error_of(replace(analytic, "BATCH", "global_batch = 512.5")),
            "bad.toml:7: global_batch is \"512.5\"; accepted: a whole number from 1 to 1e6 "
            "samples");
  EXPECT_EQ(error_of(replace(analytic, "BATCH", "global_batch = 512\nper_worker_batch = 64"))
                .rfind("bad.toml:8: global_batch and per_worker_batch exclude each other", 0),
            0u);
  EXPECT_EQ(error_of(replace(analytic, "BATCH", "model_file = \"m.json\"\nper_worker_batch = 0"))
                .rfind("bad.toml:8: per_worker_batch is \"0\"", 0),
            0u);
  EXPECT_EQ(error_of(replace(replace(analytic, "\"resnet-32\"", "\"resnet-99\""), "BATCH", ""))
                .rfind("bad.toml:6: ", 0),
            0u);
}

// A market policy weighs spot against on demand (the deadline state, the optimum): a worker type
// sold in one market only is refused at the policy, naming the type and the price it lacks,
// where the run stopped on an internal check (exit 1) before.
TEST(ScenarioLoader, AMarketPolicyNeedsAWorkerTypeSoldInBothMarkets) {
  std::string spot_only = replace(with_speeds(kValid), "on_demand_usd_per_h = 0.72\n", "");
  spot_only = replace(spot_only, "market = \"on-demand\"", "market = \"spot\"");
  spot_only = replace(spot_only, "steps = 1000", "steps = 1000\ndeadline = \"3h\"");
  for (const std::string policy : {"spot-only", "greedy", "market-aware", "optimal"}) {
    EXPECT_EQ(error_of(spot_only + "[policy]\nmarket = \"" + policy + "\"\n"),
              "bad.toml:27: [policy] market: a market policy moves the workers between spot and "
              "on demand, and \"k80-server\" has no on-demand price; accepted: a type sold in "
              "both markets, or market = \"none\"")
        << policy;
  }
  // Without a market policy the same cluster runs on spot.
  const Scenario s = parse_scenario(spot_only, "spot.toml", ".", options());
  EXPECT_GT(Simulator(s).run(1).cost_usd, 0.0);
}

// A replacement type is priced by the throughput model where the scenario names it, as a
// worker's type is: a GPU the speed table lacks failed only the runs that drew a replacement.
TEST(ScenarioLoader, AReplacementTypeTheThroughputModelCannotPriceIsRefusedWhereItIsNamed) {
  std::string text = replace(with_speeds(kValid), "[[cluster.workers]]",
                             "[[instance_types]]\nname = \"p100-server\"\ngpu = \"P100\"\n"
                             "spot_usd_per_h = 0.3\n[cluster]\nreplacement_types = "
                             "[\"p100-server\"]\n[[cluster.workers]]");
  const std::string error = error_of(text);
  EXPECT_EQ(error.rfind("bad.toml:20: [cluster] replacement_types: ", 0), 0u) << error;
  EXPECT_NE(error.find("P100"), std::string::npos) << error;
  EXPECT_NE(error.find("accepted: K80"), std::string::npos) << error;
}

// A catalog type sold in several zones at different prices was its first row's when the
// scenario named no zone (aws-gpu's p3dn.24xlarge simulated at $13.20 an hour spot whatever
// zone was meant): the zone is asked for where the type is named. A replacement type is taken
// in the workers' zone.
TEST(ScenarioLoader, ACatalogTypeSoldInSeveralZonesAtDifferentPricesNeedsItsZone) {
  const std::string text =
      "[job]\nsteps = 1000\n[throughput]\nmodel = \"analytic\"\nworkload = \"resnet-32\"\n"
      "[cluster]\ncatalog = \"aws-gpu\"\nreplacement_types = [\"p4d.24xlarge\"]\n"
      "[[cluster.workers]]\ntype = \"p3dn.24xlarge\"\ncount = 2\n";
  const std::string error = error_of(text);
  EXPECT_EQ(error.rfind("bad.toml:10: [[cluster.workers]] type: catalog aws-gpu: type "
                        "p3dn.24xlarge is sold in several zones at different prices: apne1-az4 "
                        "(on demand $42.78/h, spot $13.2/h), ",
                        0),
            0u)
      << error;
  const Scenario s = parse_scenario(text + "zone = \"use1-az6\"\n", "zoned.toml", ".", options());
  EXPECT_DOUBLE_EQ(s.workers.at(0).type.spot_usd_per_h, 3.2632);
  ASSERT_EQ(s.replacement_types.size(), 1u);
  EXPECT_EQ(s.replacement_types[0].zone, "use1-az6");
  EXPECT_DOUBLE_EQ(s.replacement_types[0].spot_usd_per_h, 5.0933);
}

// A second table of a name silently replaced the first (its prices used, nothing said); a GPU
// model with 0 GPUs was priced and timed as a GPU server; a price of 1e-303 printed FLOPs per
// dollar of inf. Each is refused at its key.
TEST(ScenarioLoader, InstanceTypesAreOneTableANameGpusToMatchAndRealPrices) {
  const std::string valid = with_speeds(kValid);
  EXPECT_EQ(error_of(replace(valid, "[[cluster.workers]]",
                             "[[instance_types]]\nname = \"k80-server\"\ngpu = \"K80\"\n"
                             "on_demand_usd_per_h = 90\n[[cluster.workers]]")),
            "bad.toml:16: [[instance_types]] name: \"k80-server\" is defined by an earlier "
            "[[instance_types]] table; accepted: one table per name");
  EXPECT_EQ(error_of(replace(valid, "gpu = \"K80\"\n", "gpu = \"K80\"\ngpus = 0\n")),
            "bad.toml:10: [[instance_types]] gpus: 0 GPUs of model K80; accepted: a count >= 1");
  EXPECT_EQ(error_of(replace(valid, "spot_usd_per_h = 0.36", "spot_usd_per_h = 1e-303")),
            "bad.toml:11: [[instance_types]] spot_usd_per_h: a price from 0.0001 $ per hour, or "
            "0 when the type has no such market");
}

// Servers revoked about as they start would be requested without end (the run's memory
// growing): a run gives up at a million requests, unfinished, as a run that reaches the horizon
// (it was an error naming [market], which ended `simulate` without a line and a plan's whole
// search).
TEST(ScenarioLoader, ARunWhoseServersNeverStartGivesUpUnfinished) {
  std::string text = replace(with_speeds(kValid), "market = \"on-demand\"", "market = \"spot\"");
  text += "[market]\nmodel = \"exponential\"\nmean = \"1s\"\n";
  text = replace(text, "on_demand = \"10s\"", "on_demand = \"10s\"\nspot = \"60s\"");
  const Scenario s = parse_scenario(text, "fast.toml", ".", options());
  const RunResult r = Simulator(s).run(1);
  EXPECT_FALSE(r.finished);
  EXPECT_TRUE(r.request_cap);
  EXPECT_FALSE(r.missed_deadline);  // there is no deadline to miss
  EXPECT_EQ(r.requests, kMaxRequestsPerRun);
  EXPECT_GT(r.time_s, 0.0);
  EXPECT_LT(r.time_s, s.horizon_s);
  const MonteCarloSummary summary = summarize({r, r});
  EXPECT_EQ(summary.request_caps, 2);
  EXPECT_EQ(summary.finished, 0);
}

// Periodic checkpoints a millisecond apart made billions of events a run (simulate hung, its
// timeline grew to gigabytes); a write as long as the interval stopped training for good; a write
// without periodic checkpoints was ignored. Each is refused at its key.
TEST(ScenarioLoader, CheckpointsAreASecondApartAndWrittenWithinTheirInterval) {
  const std::string valid = with_speeds(kValid);
  const auto checkpoint = [&](const std::string& keys) {
    return error_of(valid + "[checkpoint]\n" + keys);
  };
  for (const std::string interval : {"\"1ms\"", "0.5"}) {
    EXPECT_EQ(checkpoint("interval = " + interval + "\n"),
              "bad.toml:27: [checkpoint] interval: accepted: \"0s\" (no periodic checkpoints) or "
              "a duration of at least 1 s")
        << interval;
  }
  EXPECT_EQ(
      checkpoint("interval = \"10m\"\nwrite = \"10m\"\n"),
      "bad.toml:28: [checkpoint] write: 10 min 00 s for a checkpoint every 10 min 00 s leaves "
      "no time to train; accepted: a duration shorter than the interval");
  EXPECT_EQ(checkpoint("write = \"5s\"\n"),
            "bad.toml:27: [checkpoint] write: the time a periodic checkpoint stops training, and "
            "there are no periodic checkpoints; accepted: write with an interval, or no write");
  EXPECT_EQ(checkpoint("interval = \"1s\"\nwrite = \"0.5s\"\n"), "no error");
  EXPECT_EQ(checkpoint("interval = \"0s\"\n"), "no error");

  // The simulator itself refuses such a scenario made in code.
  Scenario s = parse_scenario(valid, "golden.toml", ".", options());
  s.checkpoint_interval_s = 0.001;
  EXPECT_THROW(Simulator{s}, InputError);
  s.checkpoint_interval_s = 60.0;
  s.checkpoint_write_s = 60.0;
  EXPECT_THROW(Simulator{s}, InputError);

  // A printed timeline leaves the periodic checkpoints out (the run still counts them).
  s.checkpoint_write_s = 0.0;
  s.checkpoint_interval_s = 1.0;
  std::vector<TimelineEntry> timeline;
  const RunResult r = Simulator(s).run(1, &timeline, TimelineDetail::without_checkpoints);
  EXPECT_GT(r.checkpoints, 400);
  EXPECT_EQ(std::count_if(timeline.begin(), timeline.end(),
                          [](const TimelineEntry& e) { return e.kind == EventKind::checkpoint; }),
            0);
  EXPECT_EQ(timeline.back().kind, EventKind::done);
}

// Keys that contradict another, or that another makes meaningless, were accepted and ignored:
// a horizon before the deadline (every run cut before it), CM-DARE's gpu or region with a start-up
// given as a duration, a deviation beside a start-up model. Each is refused at its key.
TEST(ScenarioLoader, ContradictionsAreRefusedAtTheirKey) {
  const std::string valid = with_speeds(kValid);
  EXPECT_EQ(
      error_of(replace(valid, "steps = 1000", "steps = 1000\ndeadline = \"2h\"\nhorizon = \"1h\"")),
      "bad.toml:5: [job] horizon: 1 h 00 min ends the runs before the deadline (2 h 00 min); "
      "accepted: a horizon at or after the deadline");
  EXPECT_EQ(
      error_of(replace(valid, "steps = 1000", "steps = 1000\ndeadline = \"2h\"\nhorizon = \"2h\"")),
      "no error");
  for (const std::string key : {"gpu = \"K80\"", "region = \"east\""}) {
    const std::string name = key.substr(0, key.find(' '));
    EXPECT_EQ(error_of(replace(valid, "on_demand = \"10s\"", "on_demand = \"10s\"\n" + key)),
              "bad.toml:23: [startup] " + name +
                  ": selects CM-DARE's measured start-up times, and neither spot nor on_demand "
                  "is \"cmdare\"; accepted: " +
                  name + " with spot or on_demand = \"cmdare\", or no " + name);
  }
  EXPECT_EQ(
      error_of(replace(valid, "on_demand = \"10s\"", "on_demand = \"default\"\non_demand_std = 5")),
      "bad.toml:23: [startup] on_demand_std: the deviation of a start-up given as a duration, and "
      "on_demand is \"default\" (a start-up model, not a duration); accepted: on_demand_std with "
      "a duration for on_demand, or no on_demand_std");
  EXPECT_EQ(
      error_of(replace(valid, "on_demand = \"10s\"", "on_demand = \"10s\"\non_demand_std = 5")),
      "no error");
}

// Keys another setting makes meaningless were ignored: chief_loss beside another recovery model
// than async-ps-chief, decision_interval without a market policy, a worker's zone on a type of
// [[instance_types]] that is in another zone. Each is refused at its key.
TEST(ScenarioLoader, KeysThatAnotherSettingMakesMeaninglessAreRefused) {
  const std::string valid = with_speeds(kValid);
  EXPECT_EQ(error_of(valid + "chief_loss = \"fail\"\n"),
            "bad.toml:26: [recovery] chief_loss: what async-ps-chief recovery does when the chief "
            "is lost, and the model here is \"in-place\"; accepted: chief_loss with model = "
            "\"async-ps-chief\", or no chief_loss");
  EXPECT_EQ(error_of(valid + "[policy]\ndecision_interval = \"10m\"\n"),
            "bad.toml:27: [policy] decision_interval: how often a market policy decides, and "
            "there is no market policy; accepted: decision_interval with [policy] market, or no "
            "decision_interval");
  EXPECT_EQ(error_of(replace(valid, "market = \"on-demand\"",
                             "market = \"on-demand\"\nzone = "
                             "\"mars-1a\"")),
            "bad.toml:19: [[cluster.workers]] zone: \"mars-1a\": type k80-server of "
            "[[instance_types]] is in no zone; accepted: its own zone there, or no zone");
  EXPECT_EQ(error_of(replace(
                replace(valid, "market = \"on-demand\"", "market = \"on-demand\"\nzone = \"z1\""),
                "gpu = \"K80\"", "gpu = \"K80\"\nzone = \"z1\"")),
            "no error");
  // The hour-of-day model's start_hour beside [job] start_hour: the model's won without a word.
  const std::string job_hour = replace(valid, "steps = 1000", "steps = 1000\nstart_hour = 12");
  const std::string market = "[market]\nmodel = \"hour-of-day\"\ngpu = \"K80\"\n";
  EXPECT_EQ(error_of(job_hour + market + "start_hour = 3\n"),
            "bad.toml:30: [market] start_hour: the hour of day the runs start at is [job] "
            "start_hour (line 4), given too; accepted: one of the two");
  EXPECT_EQ(
      error_of(job_hour + "[[regions]]\nname = \"a\"\nmodel = \"hour-of-day\"\nstart_hour = 3\n"
                          "[[regions]]\nname = \"b\"\nmodel = \"hour-of-day\"\n"),
      "bad.toml:30: [[regions]] start_hour: the hour of day the runs start at is [job] "
      "start_hour (line 4), given too; accepted: one of the two");
  EXPECT_EQ(error_of(job_hour + market), "no error");
  EXPECT_EQ(error_of(valid + market + "start_hour = 3\n"), "no error");
}

// A deadline or horizon is above 0 and up to 30 days, and every refusal says so: inf said
// "accepted: a number in [0, 2.592e6]", where "0s" is refused too ("> 0").
TEST(ScenarioLoader, ADeadlineIsRefusedWithTheRangeReallyAccepted) {
  const std::string valid = with_speeds(kValid);
  const std::string accepted =
      " is not a duration above 0 and up to 30 days; accepted: e.g. \"90s\", \"5m\", \"1.5h\", "
      "\"1h30m\", \"2d\", or a number of seconds above 0 and up to 2592000";
  for (const std::string deadline : {"inf", "0", "\"0s\"", "\"31d\"", "-5"}) {
    EXPECT_EQ(error_of(replace(valid, "steps = 1000", "steps = 1000\ndeadline = " + deadline)),
              "bad.toml:4: [job] deadline: " + (deadline == "0" ? "0" : deadline) + accepted);
  }
  EXPECT_EQ(error_of(replace(valid, "steps = 1000", "steps = 1000\nhorizon = 0")),
            "bad.toml:4: [job] horizon: 0" + accepted);
  EXPECT_EQ(error_of(replace(valid, "steps = 1000", "steps = 1000\ndeadline = \"2h\"")),
            "no error");
}

// [job] budget: dollars, after which renting stops (Scenario::budget_usd); the multi-region model
// has no such stop, so it is refused beside [[regions]].
TEST(ScenarioLoader, ABudgetIsDollarsInOneRegion) {
  const std::string valid = with_speeds(kValid);
  const Scenario s = parse_scenario(replace(valid, "steps = 1000", "steps = 1000\nbudget = 12.5"),
                                    "b.toml", ".", options());
  EXPECT_EQ(s.budget_usd, 12.5);
  EXPECT_EQ(parse_scenario(valid, "b.toml", ".", options()).budget_usd, kNoBudget);
  EXPECT_EQ(error_of(replace(valid, "steps = 1000", "steps = 1000\nbudget = 0")),
            "bad.toml:4: [job] budget: 0 is out of range; accepted: a number in [0.01, 1e9]");
  EXPECT_EQ(error_of(replace(valid, "steps = 1000", "steps = 1000\nbudget = 5") +
                     "[[regions]]\nname = \"a\"\nmodel = \"exponential\"\nmean = \"1h\"\n"),
            "bad.toml:4: [job] budget: several regions ([[regions]]) are simulated without a "
            "budget stop; accepted: a budget in one region ([market]), or none");
}

TEST(ScenarioLoader, ErrorsNameFileLineAndAcceptedValues) {
  const std::string valid = with_speeds(kValid);
  EXPECT_EQ(error_of(replace(valid, "model = \"in-place\"", "model = \"magic\"")),
            "bad.toml:24: [recovery] model: unknown recovery model \"magic\"; accepted: "
            "in-place, restart-from-checkpoint, async-ps-chief");
  EXPECT_EQ(error_of(replace(valid, "count = 2", "count = 0")),
            "bad.toml:17: [[cluster.workers]] count: accepted: a whole number in [1, 100000]");
  EXPECT_EQ(error_of(replace(valid, "type = \"k80-server\"", "type = \"k90\"")),
            "bad.toml:16: [[cluster.workers]] type: unknown instance type \"k90\"; accepted: "
            "cpu-server, k80-server");
  EXPECT_EQ(error_of(replace(valid, "reform = \"5s\"", "reform = \"soon\"")),
            "bad.toml:25: [recovery] reform: \"soon\" is not a duration up to 30 days; accepted: "
            "e.g. \"90s\", \"5m\", \"1.5h\", \"1h30m\", \"2d\", or a number of seconds from 0 "
            "to 2592000");
  // Durations are bounded where they enter: 31 days, or 1e308 days (infinite seconds), are not.
  EXPECT_EQ(
      error_of(replace(valid, "reform = \"5s\"", "reform = \"31d\""))
          .rfind("bad.toml:25: [recovery] reform: \"31d\" is not a duration up to 30 days", 0),
      0u);
  EXPECT_EQ(
      error_of(replace(valid, "reform = \"5s\"", "reform = \"1e308d\""))
          .rfind("bad.toml:25: [recovery] reform: \"1e308d\" is not a duration up to 30 days", 0),
      0u);
  // Steps: one accepted range, whether the number is below it or not whole.
  EXPECT_EQ(error_of(replace(valid, "steps = 1000", "steps = -5")),
            "bad.toml:3: [job] steps: -5 is out of range; accepted: a number in [1, 1e12]");
  EXPECT_EQ(error_of(replace(valid, "steps = 1000", "steps = 0")),
            "bad.toml:3: [job] steps: 0 is out of range; accepted: a number in [1, 1e12]");
  EXPECT_EQ(error_of(replace(valid, "steps = 1000", "steps = 2.5")),
            "bad.toml:3: [job] steps: accepted: a whole number of steps in [1, 1e12]");
  EXPECT_EQ(error_of(replace(valid, "steps = 1000", "steps = 1000\nsteps_per_epoch = 3")),
            "bad.toml:4: unknown key \"steps_per_epoch\" in [job]; accepted: steps, deadline, "
            "budget, horizon, start_hour");
  EXPECT_EQ(error_of(replace(valid, "market = \"on-demand\"", "market = \"cheap\"")),
            "bad.toml:18: [[cluster.workers]] market: \"cheap\"; accepted: spot, on-demand");
  // A GPU the speed table does not have: at the worker's type, with the GPUs it has.
  EXPECT_EQ(error_of(replace(valid, "gpu = \"K80\"", "gpu = \"V100\"")).rfind("bad.toml:16: ", 0),
            0u);
  EXPECT_NE(error_of(replace(valid, "gpu = \"K80\"", "gpu = \"V100\"")).find("accepted: K80"),
            std::string::npos);
  EXPECT_EQ(
      error_of(valid + "[policy]\nmarket = \"greedy\"\n"),
      "bad.toml:27: [policy] market: a market policy needs a deadline; add deadline to [job]");
  // Decision ticks from a second: a prior counts a month of them (1 ms made more than an int).
  EXPECT_EQ(error_of(valid + "[policy]\ndecision_interval = 0.001\n"),
            "bad.toml:27: [policy] decision_interval: accepted: a duration of at least 1 s");
  EXPECT_EQ(error_of(valid + "[policy]\nmarket = \"lucky\"\n"),
            "bad.toml:27: [policy] market: unknown market policy \"lucky\"; accepted: spot-only, "
            "on-demand-only, greedy, uniform-progress, market-aware, optimal, none");
  EXPECT_EQ(error_of(replace(valid, "model = \"table\"", "model = \"oracle\""))
                .rfind("bad.toml:5: [throughput] model: unknown throughput model \"oracle\"; "
                       "accepted: table",
                       0),
            0u);
  const std::string market = error_of(valid + "[market]\nmodel = \"weather\"\n");
  EXPECT_EQ(market.rfind("bad.toml:", 0), 0u) << market;
  EXPECT_NE(market.find("lifetime"), std::string::npos) << market;
  EXPECT_EQ(error_of("[job]\nsteps = 10\n[throughput\n").rfind("bad.toml:3", 0), 0u);
}

TEST(ScenarioLoader, TheOptimumIsRefusedWhereEachServerIsRevokedOnItsOwn) {
  // On spot with a deadline, in the market given, asking for the optimum.
  auto scenario = [](const std::string& market) {
    return replace(replace(with_speeds(kValid), "steps = 1000", "steps = 1000\ndeadline = \"2h\""),
                   "market = \"on-demand\"", "market = \"spot\"") +
           "[market]\n" + market + "\n[policy]\nmarket = \"optimal\"\n";
  };
  // A spot availability trace: spot is a matter of the time, the offline optimum a bound.
  const Scenario trace = parse_scenario(scenario("model = \"trace\"\nfile = \"us-west-2a_k80_1\""),
                                        "trace.toml", ".", options());
  EXPECT_TRUE(trace.market->spot_by_time());
  // Several workers each revoked on its own (lifetimes drawn per server, a cap on a trace's
  // servers, a fleet's nodes): refused at the policy's line, naming what is accepted.
  const std::string lifetimes = error_of(scenario("model = \"lifetime\"\ncdf = \"All_data\""));
  EXPECT_EQ(lifetimes,
            "bad.toml:31: [policy] market: optimal needs a market where the optimum knows what "
            "each server meets: spot that comes and goes with the time alone (a SkyPilot "
            "availability trace, no cap), or one worker on a market that draws each server on its "
            "own (lifetime, hour-of-day, exponential, a capped trace, a fleet's node events); "
            "the lifetime model here revokes each of the 2 workers on its own; accepted here: "
            "spot-only, on-demand-only, greedy, uniform-progress, market-aware, or the market as "
            "[[regions]]");
  const std::string fleet = error_of(scenario("model = \"trace\"\nfile = \"p3\""));
  EXPECT_EQ(fleet.rfind("bad.toml:31: ", 0), 0u) << fleet;
  EXPECT_NE(fleet.find("the trace model here revokes each of the 2 workers on its own"),
            std::string::npos)
      << fleet;
  EXPECT_EQ(error_of(scenario("model = \"trace\"\nfile = \"us-west-2a_k80_1\"\ncap = \"2h\""))
                .rfind("bad.toml:32: ", 0),
            0u);
  // One worker on them: the optimum knows its servers request by request (on a fleet, the
  // one server it holds at a time is given a node among all those present).
  const auto one = [&](const std::string& market) {
    return replace(scenario(market), "count = 2", "count = 1");
  };
  EXPECT_EQ(error_of(one("model = \"lifetime\"\ncdf = \"All_data\"")), "no error");
  EXPECT_EQ(error_of(one("model = \"trace\"\nfile = \"us-west-2a_k80_1\"\ncap = \"2h\"")),
            "no error");
  EXPECT_EQ(error_of(one("model = \"trace\"\nfile = \"p3\"")), "no error");
  // The online policies take any market.
  EXPECT_EQ(error_of(replace(scenario("model = \"lifetime\"\ncdf = \"All_data\""),
                             "market = \"optimal\"", "market = \"greedy\"")),
            "no error");
}

TEST(ScenarioLoader, RegionsEachWithTheirMarketAndTheMoveCost) {
  const std::string text =
      replace(with_speeds(kValid), "steps = 1000", "steps = 1000\ndeadline = \"2h\"") +
      "[market]\nnotice = \"2m\"\n"
      "[[regions]]\nname = \"a\"\nmodel = \"exponential\"\nmean = \"3h\"\n"
      "[[regions]]\nname = \"b\"\nmodel = \"trace\"\nfile = \"us-west-2b_k80_1\"\n"
      "[move]\ncheckpoint = \"90s\"\nusd = 0.25\n"
      "[policy]\nmarket = \"greedy\"\n";
  const Scenario s = parse_scenario(text, "regions.toml", ".", options());
  ASSERT_EQ(s.regions.size(), 2u);
  EXPECT_EQ(s.regions[0].name, "a");
  EXPECT_EQ(s.regions[0].market->name(), "exponential");
  EXPECT_EQ(s.regions[1].name, "b");
  EXPECT_EQ(s.regions[1].market->name(), "trace");
  EXPECT_EQ(s.market, nullptr);
  EXPECT_DOUBLE_EQ(s.notice_s, 120.0);
  EXPECT_DOUBLE_EQ(s.move_s, 90.0);
  EXPECT_DOUBLE_EQ(s.move_usd, 0.25);
  // Each region's parameters go to its model, which checks them.
  const std::string bad = error_of(replace(text, "mean = \"3h\"", "mean = \"-3h\""));
  EXPECT_EQ(bad.rfind("bad.toml:", 0), 0u) << bad;
  EXPECT_NE(bad.find("mean"), std::string::npos) << bad;
  const std::string with_none =
      replace(text, "[move]", "[[regions]]\nname = \"c\"\nmodel = \"none\"\n[move]");
  const auto none_at = with_none.find("model = \"none\"");
  const auto none_line = std::count(with_none.begin(), with_none.begin() + none_at, '\n') + 1;
  const std::string none = error_of(with_none);
  EXPECT_EQ(none.rfind("bad.toml:" + std::to_string(none_line) +
                           ": [[regions]] model: \"none\": a region without a spot market",
                       0),
            0u)
      << none;
}

}  // namespace
}  // namespace transient::sim
