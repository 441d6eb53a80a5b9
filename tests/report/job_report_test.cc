// The report of a job directory: the page's structure and data (what each chart is given), and
// the page opened in headless Chromium, where every chart must draw and no script may fail;
// a directory with damaged records still renders and names the bad lines.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "report/browser.h"
#include "report/job_dir_fixture.h"
#include "report/page_data.h"
#include "transient/core/atomic_file.h"
#include "transient/core/error.h"
#include "transient/report/html_page.h"
#include "transient/report/job_report.h"

namespace transient::report {
namespace {

using nlohmann::json;
using testing::chart_data;
using testing::dataset;
using testing::points_of;

std::string write_page(const std::string& dir, const std::string& page) {
  const std::string path = dir + "/report.html";
  write_file_atomically(path, page);
  return path;
}

TEST(ReportJobPage, IsOneSelfContainedPageWithEveryChart) {
  const auto job = testing::write_job_dir("structure");
  const std::string page = render_job_report(job.dir, {});
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(page.find("</html>"), std::string::npos);
  // Nothing is fetched: no src= or href= anywhere, Chart.js is inline.
  EXPECT_EQ(page.find(" src="), std::string::npos);
  EXPECT_EQ(page.find("<link"), std::string::npos);
  EXPECT_NE(page.find("Chart.js v3"), std::string::npos);
  EXPECT_EQ(page.find("Problems reading"), std::string::npos);
  const json charts = chart_data(page);
  for (const char* id :
       {"loss-step", "loss-time", "accuracy-step", "accuracy-time", "samples-per-s", "membership",
        "phases-mean", "phases-0", "phases-1", "phases-2", "stragglers", "checkpoints"}) {
    ASSERT_TRUE(charts.contains(id)) << id;
    EXPECT_GT(points_of(charts[id]), 0u) << id;
    EXPECT_NE(page.find(std::string("id=\"chart-") + id + "\""), std::string::npos) << id;
  }
  // A chart of each step's phases per place in the cluster: w3, which replaced w2, in w2's.
  EXPECT_FALSE(charts.contains("phases-3"));
  EXPECT_EQ(charts["phases-2"]["options"]["plugins"]["title"]["text"],
            "phases of each step: w2 -> w3");
  const json& place = charts["phases-2"]["data"]["datasets"][1]["data"];  // compute_s by step
  ASSERT_EQ(place.size(), 300u);
  EXPECT_TRUE(place[0].is_number()) << "w2's first step";
  EXPECT_TRUE(place[299].is_number()) << "w3's last step";
  EXPECT_EQ(charts["phases-mean"]["data"]["labels"].size(), 4u);  // the means: each worker
  EXPECT_EQ(charts["loss-step"]["data"]["datasets"][0]["data"].size(), 300u);
  for (const char* axis : {"x", "y", "size"}) {  // from the start, from nothing
    EXPECT_EQ(charts["checkpoints"]["options"]["scales"][axis]["min"], 0) << axis;
  }
  for (const char* axis : {"x", "y"}) {
    EXPECT_EQ(charts["samples-per-s"]["options"]["scales"][axis]["min"], 0) << axis;
    EXPECT_EQ(charts["stragglers"]["options"]["scales"][axis]["min"], 0) << axis;
  }
  EXPECT_EQ(dataset(charts["accuracy-step"], "test_accuracy")["data"].size(), 3u);
  // Loss against time: the steps are placed between the events that carry step and time.
  const json& by_time = charts["loss-time"]["data"]["datasets"][0]["data"];
  EXPECT_NEAR(by_time[99]["x"].get<double>(), 5.5, 1e-9);    // step 100: its checkpoint's t
  EXPECT_NEAR(by_time[299]["x"].get<double>(), 18.0, 1e-9);  // step 300
  for (std::size_t i = 1; i < by_time.size(); ++i)
    EXPECT_GE(by_time[i]["x"].get<double>(), by_time[i - 1]["x"].get<double>()) << i;
}

TEST(ReportJobPage, MembershipLanesShowJoinsLossesReplacementAndRecoveries) {
  const auto job = testing::write_job_dir("membership");
  const json chart = chart_data(render_job_report(job.dir, {}))["membership"];
  const std::vector<std::string> lanes = chart["data"]["labels"];
  // w3 replaces w2, in its lane.
  EXPECT_EQ(lanes, (std::vector<std::string>{"w0", "w1", "w2 -> w3", "recoveries"}));
  EXPECT_EQ(dataset(chart, "left: failed")["data"].size(), 1u);
  EXPECT_EQ(dataset(chart, "left: failed")["data"][0]["y"], "w2 -> w3");
  EXPECT_EQ(dataset(chart, "left: preempted")["data"][0]["y"], "w1");
  const json recoveries = dataset(chart, "recovery")["data"];
  ASSERT_EQ(recoveries.size(), 2u);
  EXPECT_NEAR(recoveries[0]["x"][0].get<double>(), 7.2 - 0.7, 1e-9);
  EXPECT_NEAR(recoveries[0]["x"][1].get<double>(), 7.2, 1e-9);
  // w3 waited from its join to generation 2, then trained to the end.
  const json training = dataset(chart, "training")["data"];
  EXPECT_EQ(training.size(), 4u);
  const json joined = dataset(chart, "joined")["data"];
  bool w3_waited = false;
  for (const auto& bar : joined) {
    w3_waited |= bar["y"] == "w2 -> w3" && bar["x"][0] == 8.8 && bar["x"][1] == 9.0;
  }
  EXPECT_TRUE(w3_waited) << joined.dump();
}

// Bars of the membership timeline end with their run: a job paused for 20 s was drawn training
// all through the pause. A member re-joining a restarted coordinator trains on (it was drawn
// waiting for the rest of the job: no generation event follows a re-join).
TEST(ReportJobPage, MembershipBarsEndWithTheirRunAndAReJoinedMemberTrains) {
  const std::string dir = ::testing::TempDir() + "/report_membership_runs";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/events.jsonl")
      << (R"({"t":0.1,"time":"2026-11-24T10:00:00.100Z","event":"worker_joined","worker":"w0"})"
          "\n"
          R"({"t":0.2,"time":"2026-11-24T10:00:00.200Z","event":"generation","gen":0,"members":["w0"],"start_step":0})"
          "\n"
          R"({"t":1.0,"time":"2026-11-24T10:00:01.000Z","event":"stopped","step":100})"
          "\n"
          R"({"t":0.1,"time":"2026-11-24T10:00:21.100Z","event":"worker_joined","worker":"w0"})"
          "\n"
          R"({"t":0.2,"time":"2026-11-24T10:00:21.200Z","event":"generation","gen":0,"members":["w0"],"start_step":100})"
          "\n"
          R"({"t":0.1,"time":"2026-11-24T10:00:23.000Z","event":"coordinator_restarted","gen":0,"members":["w0"]})"
          "\n"
          R"({"t":0.2,"time":"2026-11-24T10:00:23.100Z","event":"worker_rejoined","worker":"w0","gen":0})"
          "\n"
          R"({"t":0.6,"time":"2026-11-24T10:00:23.500Z","event":"done","step":200})"
          "\n");
  const json chart = chart_data(render_job_report(dir, {}))["membership"];
  const json training = dataset(chart, "training")["data"];
  double trained_s = 0;
  for (const auto& bar : training) {
    trained_s += bar["x"][1].get<double>() - bar["x"][0].get<double>();
  }
  // 0.8 s in the first run, 2.3 s in the second (across the coordinator's restart).
  EXPECT_NEAR(trained_s, 0.8 + 2.3, 1e-6) << training.dump();
  for (const auto& bar : dataset(chart, "joined")["data"]) {
    EXPECT_LT(bar["x"][1].get<double>() - bar["x"][0].get<double>(), 0.2) << bar.dump();
  }
}

TEST(ReportJobPage, StragglersAndTablesAreOnThePage) {
  const auto job = testing::write_job_dir("tables");
  const std::string page = render_job_report(job.dir, {});
  // w1 computes slowest while it trains: the straggler of steps 1..220.
  EXPECT_NE(page.find("<td>w1</td><td>220</td><td>220</td>"), std::string::npos);
  // The recoveries with their duration and redone steps.
  EXPECT_NE(page.find("<td>7.2</td><td>1</td><td>failed</td><td>w2</td><td>0.05</td>"
                      "<td>0.4</td><td>0.7</td><td>1</td>"),
            std::string::npos);
  // Checkpoints: the size from the manifest when it keeps the file.
  EXPECT_NE(page.find("<td>300</td><td>18</td><td class=\"unbroken\">2026-11-24T10:00:18.000Z</td>"
                      "<td>0.047</td><td>2400456</td><td>kept</td>"),
            std::string::npos);
  // Membership events: the time, the time of day and the event's name never wrap (a time broke
  // at its hyphens in the narrow column); a detail with an empty text (a generation that loads
  // no checkpoint) is left out.
  EXPECT_NE(page.find("<tr><td class=\"unbroken\">7</td><td class=\"unbroken\">"
                      "2026-11-24T10:00:07.000Z</td><td class=\"unbroken\">generation</td>"
                      "<td>gen=1, members=[&quot;w0&quot;,&quot;w1&quot;], start_step=119</td>"),
            std::string::npos);
  EXPECT_EQ(page.find("checkpoint=,"), std::string::npos);
  EXPECT_NE(page.find("<td>100</td><td>5.5</td>"), std::string::npos);
  EXPECT_NE(page.find("removed"), std::string::npos);
  EXPECT_NE(page.find("<td>samples_per_s</td><td>1988</td>"), std::string::npos);
  EXPECT_NE(page.find("No prices: this job was not given its servers"), std::string::npos);
  EXPECT_NE(page.find("<td>workers</td><td>2 in generation 3 (w0, w3)</td>"), std::string::npos);
  EXPECT_NE(page.find("<td>newest checkpoint</td><td>step 300"), std::string::npos);
  // The summary's table of names and values has no empty header row above it.
  EXPECT_EQ(page.find("<th></th>"), std::string::npos);
  EXPECT_NE(page.find("<table>\n<tr><td>state</td>"), std::string::npos);
}

// job.json's settings that 0 or "" leaves to a default say what decided instead; others, and
// those given, show as written.
TEST(ReportJobPage, SettingsLeftToTheirDefaultSayWhatDecided) {
  const auto job = testing::write_job_dir("settings");
  const std::string path = job.dir + "/job.json";
  std::ifstream in(path);
  json recorded = json::parse(in);
  in.close();
  recorded["settings"]["steps"] = 0;
  recorded["settings"]["epochs"] = 3;
  recorded["settings"]["per_worker_batch"] = 0;
  recorded["settings"]["val_data"] = "";
  recorded["settings"]["test_subset"] = 500;
  recorded["settings"]["weight_decay"] = 0;
  write_file_atomically(path, recorded.dump());
  const std::string page = render_job_report(job.dir, {});
  EXPECT_NE(page.find("<td>steps</td><td>0 (not given: the epochs decide)</td>"),
            std::string::npos);
  EXPECT_NE(page.find("<td>per_worker_batch</td><td>0 (not given: the global batch holds)</td>"),
            std::string::npos);
  EXPECT_NE(
      page.find("<td>val_data</td><td>" +
                escape_html("\"\" (not given: the data set's test set, or a tenth held out)") +
                "</td>"),
      std::string::npos);
  EXPECT_NE(page.find("<td>test_subset</td><td>500</td>"), std::string::npos);
  EXPECT_NE(page.find("<td>weight_decay</td><td>0</td>"), std::string::npos);  // a value, 0
  EXPECT_NE(page.find("<td>epochs</td><td>3</td>"), std::string::npos) << "the epochs decide";

  // --steps given: the epochs (their default, 2, or any) are not what ended the job.
  recorded["settings"]["steps"] = 400;
  recorded["settings"]["epochs"] = 2;
  write_file_atomically(path, recorded.dump());
  const std::string by_steps = render_job_report(job.dir, {});
  EXPECT_NE(by_steps.find("<td>steps</td><td>400</td>"), std::string::npos);
  EXPECT_NE(by_steps.find("<td>epochs</td><td>2 (not used: the steps decide)</td>"),
            std::string::npos);
}

TEST(ReportJobPage, CostOverTimeByMarketWhenTheJobKnewPrices) {
  const auto job = testing::write_job_dir("cost", false, true);
  const std::string page = render_job_report(job.dir, {});
  const json chart = chart_data(page)["cost"];
  // Two markets: the bill, and a line per market with a point at every "cost" event.
  EXPECT_EQ(dataset(chart, "all markets")["data"].size(), 3u);
  EXPECT_EQ(dataset(chart, "spot")["data"].size(), 3u);
  EXPECT_EQ(dataset(chart, "on-demand")["data"].size(), 3u);
  EXPECT_EQ(page.find("No prices"), std::string::npos);
  EXPECT_NE(page.find("$0.30"), std::string::npos);
}

TEST(ReportJobPage, AMissingChartLibraryIsAClearError) {
  const auto job = testing::write_job_dir("nochartjs");
  ReportOptions options;
  options.chart_js_path = job.dir + "/no-chart.js";
  try {
    render_job_report(job.dir, options);
    FAIL() << "rendered without Chart.js";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find(options.chart_js_path), std::string::npos);
    EXPECT_NE(std::string(error.what()).find("libjs-chart.js"), std::string::npos);
  }
}

TEST(ReportJobPage, TextFromTheRecordsCannotEndTheScript) {
  HtmlPage page("a <title>");
  page.add_chart(
      "c", {{"type", "scatter"},
            {"data",
             {{"datasets", {{{"label", "<!--<script></script><b>x"}, {"data", json::array()}}}}}}});
  const std::string html = page.render("var x = '</script>';");
  EXPECT_EQ(html.find("</script><b>"), std::string::npos);
  EXPECT_EQ(html.find("<!--"), std::string::npos);
  EXPECT_NE(html.find(R"(\u003c!--\u003cscript>\u003c/script>\u003cb>x)"), std::string::npos);
  EXPECT_NE(html.find("a &lt;title&gt;"), std::string::npos);
  EXPECT_NE(html.find("var x = '<\\/script>';"), std::string::npos);
}

// A cell's lines break at its spaces only: a word with a hyphen (a zone, a type) is kept whole,
// its text escaped; a lone "-" (no value) and the columns asked to be unbroken are as they were.
TEST(ReportJobPage, ACellsHyphenatedWordsAreKeptWhole) {
  HtmlPage page("cells");
  page.add_table(
      {"configuration", "time", "price"},
      {{"1 x n1-standard-4+p100 spot (us-east1-c) + <a-b>", "2026-11-29T12:06:15Z", "-"}}, {1});
  const std::string html = page.render("");
  EXPECT_NE(html.find("<td>1 x <span class=\"unbroken\">n1-standard-4+p100</span> spot "
                      "<span class=\"unbroken\">(us-east1-c)</span> + "
                      "<span class=\"unbroken\">&lt;a-b&gt;</span></td>"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("<td class=\"unbroken\">2026-11-29T12:06:15Z</td><td>-</td>"),
            std::string::npos);
  // A long word, hyphens or not, breaks where its column must narrow.
  HtmlPage paths("paths");
  paths.add_table({"field", "value"},
                  {{"data_dir", "/home/me/runs/2026-11-29-resnet/images 6.742"}});
  EXPECT_NE(paths.render("").find("<td><span class=\"breakable\">/home/me/runs/2026-11-29-resnet/"
                                  "images</span> 6.742</td>"),
            std::string::npos);
}

// An empty directory of its own for a job's records written by hand.
std::string fresh_dir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

constexpr const char* kStepsHeader =
    "step,worker,batch,data_s,compute_s,allreduce_s,optimizer_s,loss,gen,sample_begin\n";

// A long job on spot servers, each loss replaced: as many lanes as the cluster has places, each
// naming its first workers, its last and how many it had; a worker that joins with no place
// vacant (the cluster grows) has a lane of its own, and one stopped on purpose is not replaced.
TEST(ReportJobPage, AJobWithManyReplacementsKeepsALaneForEachPlace) {
  const std::string dir = fresh_dir("report_job_replacements");
  std::string events;
  auto add = [&](double t, const std::string& fields) {
    events += fmt::format(R"({{"t":{},"event":{}}})", t, fields) + "\n";
  };
  std::vector<std::string> members{"w0", "w1"};
  std::string steps = kStepsHeader;
  int step = 0;
  auto generation = [&](double t, int gen) {  // and a step of it
    add(t, fmt::format(R"("generation","gen":{},"members":["{}"],"start_step":0)", gen,
                       fmt::join(members, R"(",")")));
    ++step;
    for (std::size_t rank = 0; rank < members.size(); ++rank) {
      steps += fmt::format("{},{},50,0.001,0.01,0.002,0.001,1.0,{},0\n", step, rank, gen);
    }
  };
  int gen = 0;
  generation(0, gen++);
  int next = 2;
  for (int i = 0; i < 200; ++i) {  // each of the two places loses its worker 100 times
    const double t = 10.0 * (i + 1);
    const std::string lost = members[static_cast<std::size_t>(i % 2)];
    add(t,
        fmt::format(R"("worker_left","worker":"{}","reason":"preempted","gen":0,"step":1)", lost));
    const std::string joined = "w" + std::to_string(next++);
    add(t + 1, fmt::format(R"("worker_joined","worker":"{}")", joined));
    members[static_cast<std::size_t>(i % 2)] = joined;
    generation(t + 2, gen++);
  }
  add(2100, R"("worker_joined","worker":"w202")");  // a third place
  members.push_back("w202");
  generation(2101, gen++);
  add(2200, R"("worker_left","worker":"w202","reason":"stopped","gen":0,"step":1)");
  add(2300, R"("worker_joined","worker":"w203")");  // no place was vacant: a lane of its own
  add(2301, R"("worker_joined")");                  // no worker named: no lane
  write_file_atomically(dir + "/events.jsonl", events);
  write_file_atomically(dir + "/steps.csv", steps);
  const std::string page = render_job_report(dir, {});
  const json charts = chart_data(page);
  const json& chart = charts["membership"];
  // Its 606 membership events are a table folded under its size, which the reader opens.
  EXPECT_NE(page.find("<details><summary>606 rows</summary>\n<div class=\"table\"><table>\n"
                      "<tr><th>t (s)</th>"),
            std::string::npos);
  const std::vector<std::string> lanes = chart["data"]["labels"];
  EXPECT_EQ(lanes,
            (std::vector<std::string>{"w0 -> w2 -> ... -> w200 (101 workers)",
                                      "w1 -> w3 -> ... -> w201 (101 workers)", "w202", "w203"}));
  // Every worker's training is drawn, in its place's lane.
  std::set<std::string> trained;
  const json training = dataset(chart, "training");
  for (const auto& bar : training["data"]) trained.insert(bar["y"]);
  EXPECT_EQ(trained.size(), 3u);  // w203 joined no generation
  // Each step's phases: a chart for each place that trained, not for each of its 203 workers.
  EXPECT_TRUE(charts.contains("phases-2"));
  EXPECT_FALSE(charts.contains("phases-3"));
  EXPECT_EQ(charts["phases-0"]["options"]["plugins"]["title"]["text"],
            "phases of each step: w0 -> w2 -> ... -> w200 (101 workers)");
}

TEST(ReportJobPage, ALongJobIsDrawnInGroupsOfSteps) {
  const std::string dir = fresh_dir("report_job_long");
  std::string steps = kStepsHeader;
  for (int step = 1; step <= 10000; ++step) {
    for (int rank = 0; rank < 2; ++rank)
      steps += fmt::format("{},{},64,0.001,0.01,0.002,0.001,{},0,{}\n", step, rank, 1.0 / step,
                           64 * rank);
  }
  write_file_atomically(dir + "/steps.csv", steps);
  write_file_atomically(
      dir + "/events.jsonl",
      R"({"t":0,"event":"generation","gen":0,"members":["w0","w1"],"start_step":0})"
      "\n"
      R"({"t":140,"event":"done","step":10000})"
      "\n");
  const std::string page = render_job_report(dir, {});
  const json charts = chart_data(page);
  const json& loss = charts["loss-step"]["data"]["datasets"][0]["data"];
  EXPECT_EQ(loss.size(), 2500u);  // groups of 4 steps
  EXPECT_EQ(loss.back()["x"], 10000);
  EXPECT_NEAR(loss[0]["y"].get<double>(), (1.0 + 1.0 / 2 + 1.0 / 3 + 1.0 / 4) / 4, 1e-12);
  EXPECT_EQ(charts["phases-0"]["data"]["labels"].size(), 770u);  // groups of 13 steps
  EXPECT_EQ(charts["phases-0"]["data"]["labels"][0], "1-13");
  EXPECT_LT(page.size(), 2'000'000u);
}

// A job that ends mid-epoch (--steps) is evaluated at its last step: the "done" event's
// evaluation is the accuracy's and test loss's last point; a job that ends with an epoch has one
// point there, not two.
TEST(ReportJobPage, TheEvaluationAtTheJobsEndIsItsLastPoint) {
  const std::string dir = fresh_dir("report_job_mid_epoch");
  std::string steps = kStepsHeader;
  for (int step = 1; step <= 150; ++step) {
    steps += fmt::format("{},0,64,0.001,0.01,0.002,0.001,1.0,0,0\n", step);
  }
  write_file_atomically(dir + "/steps.csv", steps);
  const std::string started =
      R"({"t":0,"event":"generation","gen":0,"members":["w0"],"start_step":0})"
      "\n";
  const std::string done =
      R"({"t":3,"event":"done","step":150,"test_accuracy":0.8,"test_loss":0.6,"wall_s":3})"
      "\n";
  write_file_atomically(dir + "/events.jsonl", started + done);
  const std::string only_done = render_job_report(dir, {});
  EXPECT_EQ(only_done.find("No accuracy recorded"), std::string::npos);
  EXPECT_EQ(dataset(chart_data(only_done)["accuracy-step"], "test_accuracy")["data"],
            json::parse(R"([{"x":150,"y":0.8}])"));
  // One point is drawn where it is: on the job's steps and seconds from 0, and an accuracy on
  // 0..1 (Chart.js centred it in 149..151 and -0.5..2).
  const json one_point = chart_data(only_done);
  for (const char* id : {"accuracy-step", "accuracy-time", "loss-step", "loss-time"}) {
    const json& scales = one_point[id]["options"]["scales"];
    EXPECT_EQ(scales["x"]["min"], 0) << id;
    if (std::string(id).rfind("accuracy", 0) == 0) {
      EXPECT_EQ(scales["y"]["min"], 0) << id;
      EXPECT_EQ(scales["y"]["max"], 1) << id;
    } else {
      EXPECT_FALSE(scales["y"].contains("max")) << id;
    }
  }

  write_file_atomically(
      dir + "/events.jsonl",
      started +
          R"({"t":2,"event":"epoch","epoch":1,"step":100,"test_accuracy":0.7,"test_loss":0.9})"
          "\n" +
          done);
  const json charts = chart_data(render_job_report(dir, {}));
  EXPECT_EQ(dataset(charts["accuracy-step"], "test_accuracy")["data"],
            json::parse(R"([{"x":100,"y":0.7},{"x":150,"y":0.8}])"));
  EXPECT_EQ(dataset(charts["loss-time"], "test_loss")["data"],
            json::parse(R"([{"x":2,"y":0.9},{"x":3,"y":0.6}])"));

  // The fixture's job ends with its third epoch, at step 300, where "done" repeats it.
  const auto whole = testing::write_job_dir("ends_with_an_epoch");
  const json ended = chart_data(render_job_report(whole.dir, {}));
  const json accuracy = dataset(ended["accuracy-step"], "test_accuracy")["data"];
  ASSERT_EQ(accuracy.size(), 3u);
  EXPECT_EQ(accuracy[2]["x"], 300);
}

TEST(ReportJobBrowser, EveryChartDrawsWithoutAScriptError) {
  TRANSIENT_SKIP_WITHOUT_CHROMIUM();
  const auto job = testing::write_job_dir("browser");
  const std::string path = write_page(job.dir, render_job_report(job.dir, {}));
  const json check = testing::expect_page_draws(
      path, {"loss-step", "loss-time", "accuracy-step", "accuracy-time", "samples-per-s",
             "membership", "phases-mean", "phases-0", "phases-2", "stragglers", "checkpoints"});
  ASSERT_TRUE(check.is_object());
  // Chart.js laid out every point it was given: 300 training losses and 3 test losses.
  EXPECT_EQ(check["charts"]["loss-step"]["points"], 303);
  EXPECT_GE(check["charts"]["membership"]["points"].get<int>(), 10);
}

// A page read in a narrow window (half a laptop's screen) fits it: a table cell's long words (a
// Gloo error's source path, a generation's members and addresses) break where they must instead
// of widening the table past the window, and a table of many numeric columns scrolls sideways in
// a box of its own.
TEST(ReportJobBrowser, ANarrowWindowShowsThePageWithoutScrollingSideways) {
  TRANSIENT_SKIP_WITHOUT_CHROMIUM();
  const auto job = testing::write_job_dir("narrow");
  std::ofstream(job.dir + "/events.jsonl", std::ios::app)
      << R"({"t":6.6,"time":"2026-11-24T10:00:06.600Z","event":"generation_failed","worker":"w0",)"
      << R"("gen":0,"step":119,"error":"[/pytorch/third_party/gloo/gloo/transport/tcp/)"
      << R"(pair.cc:547] Connection closed by peer [127.0.0.1]:44251"})"
      << "\n";
  const std::string path = write_page(job.dir, render_job_report(job.dir, {}));
  // 1280 px: every browser check asks it (expect_page_draws).
  constexpr int kWidth = 600;
  const json check = testing::report_check(testing::run_chromium(
      testing::find_chromium(), "file://" + path, "--dump-dom", 5000, nullptr, kWidth));
  ASSERT_TRUE(check.is_object());
  EXPECT_EQ(check["width"]["window"], kWidth);
  EXPECT_LE(check["width"]["page"].get<int>(), kWidth) << "the page scrolls sideways";
  for (const auto& table : check["width"]["scrolling"]) {
    EXPECT_EQ(table.get<std::string>().find("details"), std::string::npos)
        << "the membership events scroll sideways";
  }
}

TEST(ReportJobBrowser, TheCheckFailsOnAScriptErrorOrAnEmptyChart) {
  TRANSIENT_SKIP_WITHOUT_CHROMIUM();
  // The check itself must be able to fail: a script error and a chart that draws nothing.
  HtmlPage page("broken");
  page.add_chart("empty",
                 {{"type", "scatter"},
                  {"data", {{"datasets", {{{"label", "none"}, {"data", json::array()}}}}}}});
  const std::string dir = ::testing::TempDir() + "/report_broken";
  std::filesystem::create_directories(dir);
  const std::string path = write_page(
      dir, page.render(read_chart_js(default_chart_js_path()) + "\nundefinedFunction();"));
  const json check = testing::report_check(testing::dump_dom(testing::find_chromium(), path));
  ASSERT_TRUE(check.is_object());
  ASSERT_EQ(check["errors"].size(), 1u) << check.dump();
  EXPECT_NE(check["errors"][0].get<std::string>().find("undefinedFunction"), std::string::npos);
  EXPECT_EQ(check["charts"]["empty"]["points"], 0);
  ::testing::TestPartResultArray failures;
  {
    ::testing::ScopedFakeTestPartResultReporter reporter(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &failures);
    testing::expect_page_draws(path, {"empty"});
  }
  std::string messages;
  for (int i = 0; i < failures.size(); ++i) messages += failures.GetTestPartResult(i).message();
  EXPECT_NE(messages.find("undefinedFunction"), std::string::npos) << messages;
  EXPECT_NE(messages.find("chart empty drew nothing"), std::string::npos) << messages;
  EXPECT_NE(messages.find("screenshot of the page: " + path + ".png"), std::string::npos);
  EXPECT_TRUE(std::filesystem::exists(path + ".png"));  // the screenshot kept on failure
}

TEST(ReportJobBrowser, DamagedRecordsStillRenderAndNameTheBadLines) {
  const auto job = testing::write_job_dir("damaged", true);
  const std::string page = render_job_report(job.dir, {});
  const std::string steps = job.dir + "/steps.csv";
  const std::string events = job.dir + "/events.jsonl";
  EXPECT_NE(page.find("Problems reading the records (4)"), std::string::npos);
  EXPECT_NE(page.find(steps + ":58: has 4 fields, expected 10 (cut short or garbled)"),
            std::string::npos);
  EXPECT_NE(page.find(steps + ":91: column &quot;compute_s&quot;"), std::string::npos);
  EXPECT_NE(page.find(events + ":4: not a JSON line"), std::string::npos);
  EXPECT_NE(page.find(events + ":22: not a JSON line"), std::string::npos);
  // The readable rest is drawn: the two bad rows' steps keep their other members' rows.
  EXPECT_EQ(chart_data(page)["loss-step"]["data"]["datasets"][0]["data"].size(), 300u);
  if (testing::find_chromium().empty()) GTEST_SKIP() << "headless Chromium is not installed";
  testing::expect_page_draws(write_page(job.dir, page), {"loss-step", "membership", "stragglers"});
}

}  // namespace
}  // namespace transient::report
