// The page of one simulated run: its servers over time, a lane per place in the cluster.
#include "transient/report/study_report.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "report/page_data.h"
#include "transient/core/error.h"

namespace transient::report {
namespace {

using nlohmann::json;
using testing::chart_data;
using testing::dataset;

// One run of `timeline` (events: time_s, event, server, detail), as `simulate --json` writes it.
json one_run(const json& timeline) {
  return {{"scenario", "lanes"}, {"seed", 1},      {"finished", true},
          {"cost_usd", 1.5},     {"time_s", 7200}, {"timeline", timeline}};
}

json event(double hours, const std::string& name, int server, const std::string& detail = "") {
  return {{"time_s", hours * 3600}, {"event", name}, {"server", server}, {"detail", detail}};
}

// Servers 0 and 1 start; 0 gets a notice and is revoked, and 2, requested then, takes its lane;
// the job's decisions and its end are on a lane of their own.
TEST(ReportOneRun, AReplacementRunsInTheLaneOfTheServerItReplaces) {
  const json timeline = json::array(
      {event(0, "decision", -1, "spot"), event(0, "requested", 0, "p2.xlarge spot"),
       event(0, "requested", 1, "p2.xlarge spot"), event(0.1, "ready", 0, "p2.xlarge spot"),
       event(0.1, "ready", 1, "p2.xlarge spot"), event(1.0, "notice", 0, "p2.xlarge spot"),
       event(1.05, "revoked", 0, "p2.xlarge spot"),
       event(1.05, "requested", 2, "p2.xlarge on-demand"),
       event(1.2, "ready", 2, "p2.xlarge on-demand"),
       event(2.0, "done", -1, "progress 1000 steps")});
  const std::string page = render_simulation_report(one_run(timeline), "run.json", {});
  const json chart = chart_data(page)["timeline"];
  const std::vector<std::string> lanes = chart["data"]["labels"];
  EXPECT_EQ(lanes, (std::vector<std::string>{"servers 0 -> 2", "server 1: p2.xlarge spot", "job"}));
  // Server 0 ran from 0.1 h to its notice, was under notice until revoked; 2 started and ran to
  // the end, in the same lane.
  const json running = dataset(chart, "running")["data"];
  ASSERT_EQ(running.size(), 3u);
  EXPECT_EQ(running[0], json::parse(R"({"x":[0.1,1.0],"y":"servers 0 -> 2"})"));
  EXPECT_EQ(running[2], json::parse(R"({"x":[1.2,2.0],"y":"servers 0 -> 2"})"));
  EXPECT_EQ(dataset(chart, "under notice")["data"],
            json::parse(R"([{"x":[1.0,1.05],"y":"servers 0 -> 2"}])"));
  EXPECT_EQ(dataset(chart, "revoked")["data"],
            json::parse(R"([{"x":[1.05,1.05],"y":"servers 0 -> 2"}])"));
  EXPECT_EQ(dataset(chart, "done")["data"], json::parse(R"([{"x":[2.0,2.0],"y":"job"}])"));
  // The summary's texts are words, not JSON strings.
  EXPECT_NE(page.find("<td>scenario</td><td>lanes</td>"), std::string::npos);
  // The job's own events name no server in the table ("server -1" was shown).
  EXPECT_NE(page.find("<td>decision</td><td></td><td>spot</td>"), std::string::npos);
  EXPECT_EQ(page.find("<td>-1</td>"), std::string::npos);
}

// A long run of revocations, each replaced: as many lanes as the cluster has servers.
TEST(ReportOneRun, ALongRunOfReplacementsKeepsOneLane) {
  json timeline = json::array({event(0, "requested", 0, "k80 spot"), event(0, "ready", 0)});
  for (int server = 1; server <= 30; ++server) {
    timeline.push_back(event(server, "revoked", server - 1));
    timeline.push_back(event(server, "requested", server, "k80 spot"));
    timeline.push_back(event(server + 0.1, "ready", server));
  }
  const json chart =
      chart_data(render_simulation_report(one_run(timeline), "run.json", {}))["timeline"];
  EXPECT_EQ(chart["data"]["labels"],
            json::parse(R"x(["servers 0 -> 1 -> ... -> 30 (31)", "job"])x"));
}

// A timeline naming an absurd server (a damaged or hand-made file) is refused naming the file,
// before anything is drawn for it.
TEST(ReportOneRun, AServerPastWhatARunRequestsIsRefusedNamingTheFile) {
  const json timeline = json::array({event(0, "requested", 2000000000, "k80 spot")});
  try {
    render_simulation_report(one_run(timeline), "run.json", {});
    ADD_FAILURE() << "taken";
  } catch (const InputError& error) {
    EXPECT_STREQ(error.what(),
                 "run.json: a timeline event of server 2000000000; accepted: servers 0..99999 (-1 "
                 "for the job's own events)");
  }
  // ... and so is one no int holds, which was converted unchecked (undefined behaviour), and a
  // server below -1.
  for (const json& server : {json(1e300), json(-5), json(2.5)}) {
    try {
      json bad = json::array({event(0, "requested", 0, "k80 spot")});
      bad[0]["server"] = server;
      render_simulation_report(one_run(bad), "run.json", {});
      ADD_FAILURE() << "taken: " << server.dump();
    } catch (const InputError& error) {
      EXPECT_EQ(std::string(error.what()),
                "run.json: a timeline event of server " + server.dump() +
                    "; accepted: servers 0..99999 (-1 for the job's own events)");
    }
  }
}

// The quantile of time a plan reports is at its confidence: `plan --confidence 0.8 --json` has
// the p80 in "p95_time_s", and the page names it as the CLI does.
TEST(ReportPlan, TheQuantileColumnFollowsThePlansConfidence) {
  const json plan_entry = {{"label", "plan 1"},    {"configuration", "2x k80"},
                           {"usd_per_h", 1.0},     {"expected_time_s", 3600.0},
                           {"p95_time_s", 7200.0}, {"expected_cost_usd", 1.0},
                           {"acceptable", true},   {"verdict", "ok"}};
  json plan = {{"feasible", true},
               {"reason", "ok"},
               {"steps", 1000},
               {"confidence", 0.8},
               {"candidates", {plan_entry}},
               {"baselines", json::array()},
               {"pareto", json::array()},
               {"recommended", plan_entry}};
  std::string page = render_plan_report(plan, "plan.json", {});
  EXPECT_EQ(page.find("p95 time"), std::string::npos);
  EXPECT_NE(page.find("<td>p80 time (h)</td>"), std::string::npos);
  EXPECT_NE(page.find("<th>p80 time (h)</th>"), std::string::npos);
  plan["confidence"] = 0.996;
  page = render_plan_report(plan, "plan.json", {});
  EXPECT_NE(page.find("<td>p99.6 time (h)</td>"), std::string::npos);
  plan.erase("confidence");
  page = render_plan_report(plan, "plan.json", {});
  EXPECT_NE(page.find("<td>p95 time (h)</td>"), std::string::npos);
  plan["confidence"] = 7;
  try {
    render_plan_report(plan, "plan.json", {});
    ADD_FAILURE() << "taken";
  } catch (const InputError& error) {
    EXPECT_STREQ(error.what(),
                 "plan.json: field \"confidence\" is 7; accepted: a number from 0.01 to 0.999 "
                 "(plan --confidence)");
  }
}

}  // namespace
}  // namespace transient::report
