// `transient report` and `transient status` as a user runs them: the real program on a job
// directory, on the JSON that `transient simulate --json` and `transient plan --json` print (made
// by running them), and on bad input (one line `error: ...`, exit code 2).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/cli_run.h"
#include "common/example_scenario.h"
#include "report/browser.h"
#include "report/job_dir_fixture.h"
#include "report/page_data.h"
#include "transient/core/atomic_file.h"
#include "transient/report/html_page.h"

namespace transient::report {
namespace {

using testing::CliResult;
using testing::run_cli;
using testing::run_cli_split;
using testing::write_example_with;

std::string temp_dir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/report_cli_" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// An example scenario of the project (examples/NAME).
std::string example(const std::string& name) {
  return std::string(TRANSIENT_SOURCE_DIR) + "/examples/" + name;
}

// `transient simulate ARGS --json`; when it succeeds, what it printed is also written to `path`
// for `transient report` to read.
CliResult simulate_into(const std::string& args, const std::string& path) {
  CliResult sim = run_cli_split("simulate " + args + " --json");
  if (sim.exit_code == 0) write_file_atomically(path, sim.out);
  return sim;
}

// `page` without the spans that keep a cell's hyphenated words whole, so that a cell reads as the
// text it was made of.
std::string without_word_spans(std::string page) {
  for (const std::string tag :
       {"<span class=\"unbroken\">", "<span class=\"breakable\">", "</span>"}) {
    for (auto at = page.find(tag); at != std::string::npos; at = page.find(tag, at)) {
      page.erase(at, tag.size());
    }
  }
  return page;
}

TEST(ReportCli, WritesTheJobPageIntoTheJobDirectory) {
  const auto job = testing::write_job_dir("cli");
  const CliResult r = run_cli_split("report " + job.dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, job.dir + "/report.html\n");
  EXPECT_NE(read_file(job.dir + "/report.html").find("chart-membership"), std::string::npos);
  const std::string elsewhere = temp_dir("output") + "/page.html";
  ASSERT_EQ(run_cli("report " + job.dir + " -o " + elsewhere).exit_code, 0);
  EXPECT_TRUE(std::filesystem::exists(elsewhere));
}

TEST(ReportCli, BadInputIsOneLineNamingTheFile) {
  const std::string dir = temp_dir("bad");
  testing::expect_one_line_error(run_cli("report " + dir + "/nothing"), dir + "/nothing");
  testing::expect_one_line_error(run_cli("report " + dir), "not a job directory");
  std::ofstream(dir + "/other.json") << R"({"hello": 1})";
  testing::expect_one_line_error(run_cli("report " + dir + "/other.json"),
                                 dir + "/other.json: not a report's input; accepted:");
  std::ofstream(dir + "/broken.json") << R"({"scenario": )";
  testing::expect_one_line_error(run_cli("report " + dir + "/broken.json"), dir + "/broken.json");
  // A scenario file is named as one, with the commands that draw its study.
  const std::string scenario = example("paper_4_spot_k80.toml");
  testing::expect_one_line_error(
      run_cli("report " + scenario),
      scenario + ": a scenario file, which report does not simulate: run `transient simulate " +
          scenario + " --json > study.json`, then `transient report study.json`; accepted:");
  std::ofstream(dir + "/plan.json") << R"({"feasible": true, "candidates": 3, "pareto": []})";
  testing::expect_one_line_error(run_cli("report " + dir + "/plan.json"),
                                 "\"candidates\" is not a list");
  testing::expect_one_line_error(run_cli("status " + dir), "not a job directory");
  // An output that is a directory is refused naming -o and what is accepted (it was "cannot
  // rename the temporary file into place: Is a directory").
  std::filesystem::create_directories(dir + "/pages");
  const auto job = testing::write_job_dir("output_dir");
  testing::expect_one_line_error(
      run_cli("report " + job.dir + " -o " + dir + "/pages"),
      "error: " + dir +
          "/pages: -o: is a directory; accepted: a file name for the page (e.g. "
          "page.html)");
}

// What the file system refuses made `report` and `status` print "internal failure: filesystem
// error" (exit 1): a name longer than it holds is one line naming it (exit 2); a record file that
// is a symlink loop is a problem listed beside what could be read, as a damaged file is.
TEST(ReportCli, WhatTheFileSystemRefusesIsNamedNotAnInternalFailure) {
  const std::string dir = temp_dir("refused");
  const std::string long_name = dir + "/" + std::string(300, 'a');
  for (const char* command : {"report ", "status "}) {
    const CliResult r = run_cli(command + long_name);
    testing::expect_one_line_error(r, "error: " + long_name + ": cannot be read: ");
    EXPECT_EQ(r.out.find("internal failure"), std::string::npos) << r.out;
  }
  const auto job = testing::write_job_dir("loop");
  std::filesystem::remove(job.dir + "/events.jsonl");
  std::filesystem::create_symlink("events.jsonl", job.dir + "/events.jsonl");
  const CliResult status = run_cli_split("status " + job.dir);
  EXPECT_EQ(status.exit_code, 0) << status.err;
  EXPECT_NE(status.out.find("1 problem reading the records:\n  " + job.dir +
                            "/events.jsonl: cannot be read: Too many levels of symbolic links\n"),
            std::string::npos)
      << status.out;
  const CliResult report = run_cli_split("report " + job.dir);
  EXPECT_EQ(report.exit_code, 0) << report.err;
  // A FIFO given to report would wait for a writer: refused before it is opened. (Were it
  // opened, the writer below lets the read end, so that the test fails rather than hangs.)
  const std::string fifo = dir + "/study.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::atomic<bool> done{false};
  std::thread writer([&] {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!done && std::chrono::steady_clock::now() < give_up) {
      const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
      if (fd >= 0) {
        ::close(fd);
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  const CliResult from_fifo = run_cli("report " + fifo);
  done = true;
  writer.join();
  testing::expect_one_line_error(from_fifo, "error: " + fifo + ": not a regular file; accepted: ");
}

// A simulate output whose histogram edges are strings made report fail inside nlohmann
// ("internal failure", exit 1); it is one line naming the file and what a histogram holds.
TEST(ReportCli, HistogramEdgesThatAreNotNumbersAreRefusedNamingTheFile) {
  const std::string dir = temp_dir("simulate_bad_edges");
  const CliResult sim =
      simulate_into(example("paper_4_spot_k80.toml") + " --runs 20", dir + "/study.json");
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  auto study = nlohmann::json::parse(sim.out);
  ASSERT_TRUE(study["histograms"]["time_s"]["edges"].is_array()) << sim.out;
  study["histograms"]["time_s"]["edges"][1] = "late";
  write_file_atomically(dir + "/bad.json", study.dump());
  testing::expect_one_line_error(
      run_cli("report " + dir + "/bad.json"),
      "error: " + dir +
          "/bad.json: histogram of time (h): expected {\"edges\": [n+1 numbers], \"counts\": [n "
          "numbers]}");
  study = nlohmann::json::parse(sim.out);
  study["histograms"]["cost_usd"]["counts"][0] = "many";
  write_file_atomically(dir + "/bad.json", study.dump());
  testing::expect_one_line_error(run_cli("report " + dir + "/bad.json"),
                                 "/bad.json: histogram of cost ($): expected");
}

// A study where no run finished has no times to draw: `simulate --json` writes the histogram of
// time as {"edges": [], "counts": []}, which report refused as not a histogram. The page says no
// run finished where the histogram would be, and draws the costs.
TEST(ReportCli, AStudyWhereNoRunFinishedSaysSoWhereTheTimeHistogramWouldBe) {
  const std::string dir = temp_dir("simulate_none_finished");
  ASSERT_TRUE(write_example_with("paper_4_spot_k80",
                                 {{"steps = 64000", "steps = 64000\nhorizon = \"10min\""}},
                                 dir + "/short.toml"));
  const CliResult sim = simulate_into(dir + "/short.toml --runs 5", dir + "/short.json");
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  const auto study = nlohmann::json::parse(sim.out);
  ASSERT_EQ(study["finished"], 0) << sim.out;
  ASSERT_TRUE(study["histograms"]["time_s"]["edges"].empty()) << sim.out;
  const CliResult r = run_cli_split("report " + dir + "/short.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string page = read_file(dir + "/short.html");
  EXPECT_NE(page.find("No run finished: there is no distribution of the time to draw."),
            std::string::npos);
  EXPECT_EQ(page.find("chart-time"), std::string::npos);
  EXPECT_NE(page.find("chart-cost"), std::string::npos);
}

TEST(StatusCli, PrintsWhereTheJobStands) {
  const auto job = testing::write_job_dir("status");
  const CliResult r = run_cli_split("status " + job.dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("job " + job.dir + ": finished\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("step 300 of 300\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("workers: 2 in generation 3 (w0, w3)\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("samples/s: 1988\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("recoveries: 2 (1 step redone), workers lost: 2\n"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("newest checkpoint: step 300, "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cost: unknown (the job was given no prices)\n"), std::string::npos);
  EXPECT_NE(r.out.find("test accuracy: 88.00%\n"), std::string::npos) << r.out;
}

TEST(StatusCli, NamesTheDamagedLines) {
  const auto job = testing::write_job_dir("status_damaged", true);
  const CliResult r = run_cli_split("status " + job.dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("4 problems reading the records:\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(job.dir + "/steps.csv:58: "), std::string::npos) << r.out;
}

TEST(ReportCli, SimulationDistributionsFromARealSimulateJson) {
  const std::string dir = temp_dir("simulate");
  const CliResult sim = simulate_into(example("paper_4_spot_k80.toml") + " --runs 200 --threads 2",
                                      dir + "/study.json");
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  const CliResult r = run_cli_split("report " + dir + "/study.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, dir + "/study.html\n");
  const std::string page = read_file(dir + "/study.html");
  EXPECT_NE(page.find("chart-time"), std::string::npos);
  EXPECT_NE(page.find("chart-cost"), std::string::npos);
  EXPECT_NE(page.find("<td>runs</td><td>200</td>"), std::string::npos);
  // No deadline, no runs past one, and no chance of missing one to show as 0.
  EXPECT_EQ(page.find("past the deadline"), std::string::npos);
  EXPECT_NE(page.find("<td>P(miss deadline)</td><td>- (no deadline set)</td>"), std::string::npos);
  TRANSIENT_SKIP_WITHOUT_CHROMIUM();
  testing::expect_page_draws(dir + "/study.html", {"time", "cost"});
}

// With a deadline, the time histogram's bins wholly past it are a series of their own, in red,
// stacked with the others so that each bin keeps one bar: here the spot-only policy on a trace with
// the deadline 10 minutes after the work, where most runs are late.
TEST(ReportCli, TheRunsPastTheDeadlineAreDrawnApart) {
  const std::string dir = temp_dir("simulate_deadline");
  ASSERT_TRUE(write_example_with("trace_deadline_k80",
                                 {{"deadline = \"18h\"", "deadline = \"12h10min\""},
                                  {"market = \"uniform-progress\"", "market = \"spot-only\""}},
                                 dir + "/late.toml"));
  const CliResult sim = simulate_into(dir + "/late.toml --runs 40", dir + "/late.json");
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  const auto json = nlohmann::json::parse(sim.out);
  // Count the runs in the bins wholly past the deadline, to find them drawn.
  const auto& histogram = json["histograms"]["time_s"];
  int past = 0;
  for (std::size_t i = 0; i < histogram["counts"].size(); ++i) {
    if (histogram["edges"][i].get<double>() >= json["deadline_s"].get<double>()) {
      past += histogram["counts"][i].get<int>();
    }
  }
  ASSERT_GT(past, 0) << sim.out;
  const CliResult r = run_cli_split("report " + dir + "/late.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string page = read_file(dir + "/late.html");
  EXPECT_NE(page.find("runs past the deadline (12 h 10 min)"), std::string::npos);
  EXPECT_NE(page.find("<td>deadline</td><td>12 h 10 min</td>"), std::string::npos);
  EXPECT_EQ(page.find("no deadline set"), std::string::npos);
  TRANSIENT_SKIP_WITHOUT_CHROMIUM();
  testing::expect_page_draws(dir + "/late.html", {"time", "cost"});
}

// An on-demand cluster's runs end within seconds of each other: the bins are that narrow, and
// their labels still tell them apart.
TEST(ReportCli, NarrowBinsAreLabelledApart) {
  const std::string dir = temp_dir("simulate_narrow");
  const CliResult sim =
      simulate_into(example("paper_1_on_demand_k80.toml") + " --runs 20", dir + "/od.json");
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  ASSERT_EQ(run_cli("report " + dir + "/od.json").exit_code, 0);
  const auto charts = testing::chart_data(read_file(dir + "/od.html"));
  for (const char* id : {"time", "cost"}) {
    const std::vector<std::string> labels = charts[id]["data"]["labels"];
    ASSERT_GT(labels.size(), 2u) << id;
    EXPECT_EQ(std::set<std::string>(labels.begin(), labels.end()).size(), labels.size())
        << id << ": " << charts[id]["data"]["labels"].dump();
  }
}

TEST(ReportCli, SeveralRegionsAgainstTheirOptimumFromARealSimulateJson) {
  const std::string dir = temp_dir("simulate_regions");
  const CliResult sim =
      simulate_into(example("two_zones_k80.toml") + " --runs 20 --threads 2", dir + "/zones.json");
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  const CliResult r = run_cli_split("report " + dir + "/zones.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string page = without_word_spans(read_file(dir + "/zones.html"));
  EXPECT_NE(page.find("<td>regions</td><td>us-west-2a, us-west-2b</td>"), std::string::npos);
  EXPECT_NE(page.find("<td>cost / optimal</td>"), std::string::npos);
  EXPECT_NE(page.find("cost of the optimum ($)"), std::string::npos);
  EXPECT_NE(page.find("chart-cost"), std::string::npos);
  // A study without its optimum is refused by name.
  auto study = nlohmann::json::parse(sim.out);
  study.erase("optimal");
  write_file_atomically(dir + "/bad.json", study.dump());
  const CliResult bad = run_cli_split("report " + dir + "/bad.json");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.err, "error: " + dir +
                         "/bad.json: field \"optimal\" is missing (the multi-region optimum)\n");
  // A deadline no schedule meets (12 h of work by 10 h): the page says there is no optimum
  // rather than showing one that costs $0.
  ASSERT_TRUE(write_example_with("two_zones_k80", {{"deadline = \"18h\"", "deadline = \"10h\""}},
                                 dir + "/late.toml"));
  const CliResult late = simulate_into(dir + "/late.toml --runs 5", dir + "/late.json");
  ASSERT_EQ(late.exit_code, 0) << late.err;
  EXPECT_TRUE(nlohmann::json::parse(late.out)["cost_over_optimal"].is_null()) << late.out;
  const CliResult late_report = run_cli_split("report " + dir + "/late.json");
  ASSERT_EQ(late_report.exit_code, 0) << late_report.err;
  const std::string late_page = read_file(dir + "/late.html");
  EXPECT_NE(late_page.find("<td>cost / optimal</td><td>none: no schedule meets the deadline</td>"),
            std::string::npos);
  EXPECT_NE(late_page.find("<td>cost of the optimum ($)</td><td>none</td>"), std::string::npos);
  TRANSIENT_SKIP_WITHOUT_CHROMIUM();
  testing::expect_page_draws(dir + "/zones.html", {"cost"});
  testing::expect_page_draws(dir + "/late.html", {"cost"});
}

TEST(ReportCli, OneSimulatedRunsTimeline) {
  const std::string dir = temp_dir("simulate_one");
  const CliResult sim = simulate_into(example("paper_4_spot_k80.toml"), dir + "/run.json");
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  ASSERT_EQ(run_cli("report " + dir + "/run.json -o " + dir + "/run.html").exit_code, 0);
  EXPECT_NE(read_file(dir + "/run.html").find("chart-timeline"), std::string::npos);
  TRANSIENT_SKIP_WITHOUT_CHROMIUM();
  testing::expect_page_draws(dir + "/run.html", {"timeline"});
}

// One run of a study of several regions writes where the job ran, decision by decision
// ("ticks"), and no timeline: report called it "not a report's input". Its page draws a lane per
// region.
TEST(ReportCli, OneRunOfSeveralRegionsIsDrawnRegionByRegion) {
  const std::string dir = temp_dir("simulate_one_region_run");
  const CliResult sim = simulate_into(example("two_zones_k80.toml"), dir + "/run.json");
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  ASSERT_TRUE(nlohmann::json::parse(sim.out).contains("ticks")) << sim.out;
  const CliResult r = run_cli_split("report " + dir + "/run.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string page = without_word_spans(read_file(dir + "/run.html"));
  EXPECT_NE(page.find("<td>regions</td><td>us-west-2a, us-west-2b</td>"), std::string::npos);
  const auto chart = testing::chart_data(page)["regions"];
  EXPECT_EQ(chart["data"]["labels"], nlohmann::json::array({"us-west-2a", "us-west-2b"}));
  EXPECT_FALSE(chart["data"]["datasets"].empty()) << chart.dump();
  TRANSIENT_SKIP_WITHOUT_CHROMIUM();
  testing::expect_page_draws(dir + "/run.html", {"regions"});
}

// `plan --evaluate --json` is one cluster's figures, with no front: report said it accepts "the
// output of transient plan --json" and then refused it. The refusal names it and says exactly
// what is accepted.
TEST(ReportCli, APlanEvaluationIsRefusedSayingWhichPlanOutputIsAccepted) {
  const std::string dir = temp_dir("plan_evaluate");
  const CliResult plan = run_cli_split(
      "plan --workload resnet-32 --steps 64000 --evaluate 4xk80:spot --runs 5 --json");
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  write_file_atomically(dir + "/ev.json", plan.out);
  testing::expect_one_line_error(
      run_cli("report " + dir + "/ev.json"),
      dir +
          "/ev.json: the output of `transient plan --evaluate --json`, one cluster's figures, "
          "which report does not draw; accepted: a job directory, the output of `transient "
          "simulate --json` or of `transient plan --json` without --evaluate");
}

// `report study.html` (a study saved under the page's name) and `report a.json -o a.json` wrote
// the page over the study they drew from. Both are refused, by any name of the same file, and the
// study is left as it was.
TEST(ReportCli, ThePageNeverReplacesItsInput) {
  const std::string dir = temp_dir("report_over_input");
  const CliResult sim =
      simulate_into(example("paper_4_spot_k80.toml") + " --runs 5", dir + "/study.html");
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  testing::expect_one_line_error(
      run_cli("report " + dir + "/study.html"),
      "error: " + dir + "/study.html: the page would replace the report's input " + dir +
          "/study.html; accepted: an output (-o FILE.html) other than the input");
  write_file_atomically(dir + "/study.json", sim.out);
  testing::expect_one_line_error(run_cli("report " + dir + "/study.json -o " + dir + "/study.json"),
                                 "the page would replace the report's input");
  std::filesystem::create_directories(dir + "/sub");
  testing::expect_one_line_error(
      run_cli("report " + dir + "/study.json -o " + dir + "/sub/../study.json"),
      "the page would replace the report's input");
  EXPECT_EQ(read_file(dir + "/study.json"), sim.out);
  EXPECT_EQ(read_file(dir + "/study.html"), sim.out);
  // Another output is written as before.
  ASSERT_EQ(run_cli("report " + dir + "/study.html -o " + dir + "/page.html").exit_code, 0);
  EXPECT_NE(read_file(dir + "/page.html").find("chart-cost"), std::string::npos);
}

// `report JOB -o JOB/events.jsonl` (or the token, a checkpoint, summary.json) wrote the page over
// the job's own files, exit 0: inside a job directory only a page (*.html) is written.
TEST(ReportCli, APageIsNeverWrittenOverAJobsFiles) {
  const auto job = testing::write_job_dir("report_over_job");
  const std::string events = read_file(job.dir + "/events.jsonl");
  for (const std::string name :
       {"events.jsonl", "summary.json", "steps.csv", "token", "sub/../events.jsonl", "new.txt"}) {
    const CliResult refused = run_cli("report " + job.dir + " -o " + job.dir + "/" + name);
    testing::expect_one_line_error(refused, "error: " + job.dir + "/" + name +
                                                ": inside the job directory " + job.dir +
                                                ", whose files are the report's input; accepted: "
                                                "a page named *.html there");
  }
  EXPECT_EQ(read_file(job.dir + "/events.jsonl"), events);
  EXPECT_FALSE(std::filesystem::exists(job.dir + "/new.txt"));
  ASSERT_EQ(run_cli("report " + job.dir + " -o " + job.dir + "/page.html").exit_code, 0);
  EXPECT_NE(read_file(job.dir + "/page.html").find("<!DOCTYPE html>"), std::string::npos);
}

TEST(ReportCli, PlanFrontAndCandidatesFromARealPlanJson) {
  const std::string dir = temp_dir("plan");
  const CliResult plan = run_cli_split(
      "plan --workload resnet-32 --steps 64000 --deadline 2h --arch ps --runs 50 --json");
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  write_file_atomically(dir + "/plan.json", plan.out);
  const CliResult r = run_cli_split("report " + dir + "/plan.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string html = read_file(dir + "/plan.html");
  const std::string page = without_word_spans(html);
  const auto json = nlohmann::json::parse(plan.out);
  ASSERT_FALSE(json["candidates"].empty());
  // Every candidate and every baseline is a row of a table, the baselines by their names, each
  // label on one line.
  for (const char* list : {"candidates", "baselines"}) {
    ASSERT_FALSE(json[list].empty()) << list;
    for (const auto& plan : json[list]) {
      EXPECT_NE(page.find("<td class=\"unbroken\">" + plan["label"].get<std::string>() + "</td>"),
                std::string::npos)
          << plan["label"];
    }
  }
  EXPECT_NE(page.find("<td class=\"unbroken\">all on-demand</td>"), std::string::npos);
  // The recommended plan's verdict and the policy to run it with, as the CLI prints them (the
  // text escaped as HTML).
  const auto& recommended = json["recommended"];
  ASSERT_TRUE(recommended.is_object());
  EXPECT_NE(page.find("<td>" + recommended["verdict"].get<std::string>() + "</td>"),
            std::string::npos);
  const std::string policy = recommended["policy"]["text"];
  EXPECT_NE(page.find("<td>" + escape_html(policy) + "</td>"), std::string::npos) << policy;
  // The configurations' types and zones are never broken at their hyphens.
  EXPECT_NE(html.find("<span class=\"unbroken\">(us-east1-c)</span>"), std::string::npos);
  EXPECT_NE(html.find("<span class=\"unbroken\">n1-standard-4</span>"), std::string::npos);
  EXPECT_NE(page.find("Pareto front"), std::string::npos);
  TRANSIENT_SKIP_WITHOUT_CHROMIUM();
  const auto check = testing::expect_page_draws(dir + "/plan.html", {"pareto"});
  ASSERT_TRUE(check.is_object());
  EXPECT_GE(check["charts"]["pareto"]["points"].get<std::size_t>(), json["pareto"].size());
}

// A request no configuration meets (64,000 steps in 10 minutes): the page says there are no
// candidates, as the CLI does, rather than a table of headers alone, and still draws the front.
TEST(ReportCli, APlanNoConfigurationMeetsSaysSo) {
  const std::string dir = temp_dir("plan_infeasible");
  const CliResult plan =
      run_cli_split("plan --workload resnet-32 --steps 64000 --deadline 10min --runs 20 --json");
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  ASSERT_TRUE(nlohmann::json::parse(plan.out)["candidates"].empty()) << plan.out;
  write_file_atomically(dir + "/late.json", plan.out);
  const CliResult r = run_cli_split("report " + dir + "/late.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string page = read_file(dir + "/late.html");
  EXPECT_NE(page.find("none: no configuration meets the request, even without revocations"),
            std::string::npos);
  EXPECT_NE(page.find("<td>recommended</td><td>none</td>"), std::string::npos);
  // The deadline as the user wrote it, not as 0.1667 hours.
  EXPECT_NE(page.find("<td>deadline</td><td>10 min 00 s</td>"), std::string::npos);
  EXPECT_NE(page.find("<td class=\"unbroken\">all on-demand</td>"), std::string::npos);
  TRANSIENT_SKIP_WITHOUT_CHROMIUM();
  testing::expect_page_draws(dir + "/late.html", {"pareto"});
}

}  // namespace
}  // namespace transient::report
