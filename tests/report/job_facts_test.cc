// A job's facts (`transient status`, /metrics): figures from the records checked against the
// summary.json and events the fixture wrote, and the Prometheus text parsed back.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "common/lock_holder.h"
#include "report/job_dir_fixture.h"
#include "report/page_data.h"
#include "transient/core/atomic_file.h"
#include "transient/records/job_records.h"
#include "transient/report/internal/step_series.h"
#include "transient/report/job_facts.h"
#include "transient/report/job_report.h"

namespace transient::report {
namespace {

// name -> value of every sample line; the HELP and TYPE lines must name each metric first.
std::map<std::string, double> parse_prometheus(const std::string& text) {
  std::map<std::string, double> samples;
  std::map<std::string, std::string> types;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("# TYPE ", 0) == 0) {
      std::istringstream words(line.substr(7));
      std::string name, type;
      words >> name >> type;
      types[name] = type;
      continue;
    }
    if (line.rfind("# HELP ", 0) == 0) continue;
    std::istringstream words(line);
    std::string name;
    double value = 0;
    words >> name >> value;
    EXPECT_FALSE(words.fail()) << line;
    EXPECT_TRUE(types.count(name)) << name << " has no # TYPE line";
    samples[name] = value;
  }
  return samples;
}

TEST(ReportFacts, ParsesUtcIso8601) {
  EXPECT_DOUBLE_EQ(*parse_utc_iso8601("1970-01-02T00:00:01.500Z"), 86401.5);
  EXPECT_DOUBLE_EQ(*parse_utc_iso8601("2026-11-24T10:00:18.000Z"), 1795514418.0);
  EXPECT_FALSE(parse_utc_iso8601("2026-11-24 10:00:18"));
  EXPECT_FALSE(parse_utc_iso8601(""));
}

TEST(ReportFacts, FromAFinishedJob) {
  const auto job = testing::write_job_dir("facts");
  const double now = *parse_utc_iso8601(job.checkpoint_time) + 42.0;
  const JobFacts f = job_facts(records::read_job_records(job.dir), now);
  EXPECT_EQ(f.state, "finished");
  EXPECT_EQ(f.step, 300);
  EXPECT_EQ(f.total_steps, 300);
  EXPECT_EQ(f.generation, 3);
  EXPECT_EQ(f.workers, (std::vector<std::string>{"w0", "w3"}));
  EXPECT_DOUBLE_EQ(f.samples_per_s, job.samples_per_s);
  EXPECT_EQ(f.recoveries, 2);
  EXPECT_EQ(f.redone_steps, 1);
  EXPECT_EQ(f.revocations, 2);
  EXPECT_EQ(f.checkpoint_step, 300);
  EXPECT_DOUBLE_EQ(*f.checkpoint_age_s, 42.0);
  EXPECT_FALSE(f.cost_usd);
  EXPECT_DOUBLE_EQ(*f.test_accuracy, 0.88);
  EXPECT_TRUE(f.problems.empty());
}

// A job paused after step 320 was last evaluated at the end of the epoch at step 300: status and
// the page say so; a finished job's accuracy is its last step's and says nothing more.
TEST(ReportFacts, APausedJobsAccuracySaysWhenItWasEvaluated) {
  const auto job = testing::write_job_dir("paused_accuracy");
  EXPECT_NE(status_text(job_facts(records::read_job_records(job.dir), 0.0))
                .find("\ntest accuracy: 88.00%\n"),
            std::string::npos);
  std::string events = read_file(job.dir + "/events.jsonl");
  events = events.substr(0, events.find("{\"t\":18.100"));  // no "done"
  events += R"({"t":19.0,"event":"stopped","step":320,"test_accuracy":0.88,"wall_s":19})"
            "\n";
  write_file_atomically(job.dir + "/events.jsonl", events);
  auto summary = nlohmann::json::parse(read_file(job.dir + "/summary.json"));
  summary["steps"] = 320;
  summary["total_steps"] = 1000;
  summary["finished"] = false;
  summary["stopped"] = true;
  write_file_atomically(job.dir + "/summary.json", summary.dump());
  const JobFacts f = job_facts(records::read_job_records(job.dir), 0.0);
  EXPECT_EQ(f.state, "paused");
  EXPECT_EQ(f.step, 320);
  EXPECT_EQ(f.evaluated_step, 300);
  EXPECT_NE(status_text(f).find("\ntest accuracy: 88.00% (evaluated after step 300)\n"),
            std::string::npos)
      << status_text(f);
  EXPECT_NE(render_job_report(records::read_job_records(job.dir), {})
                .find("<td>test accuracy</td><td>88.00% (evaluated after step 300)</td>"),
            std::string::npos);
}

// What the records quote (a failure's text, the workers' names) is shown without control
// characters: `transient status` prints it to a terminal.
TEST(ReportFacts, StatusShowsTheRecordsTextWithoutControlCharacters) {
  JobFacts f;
  f.dir = "job";
  f.state = "failed";
  f.failure = "worker w0 failed: line\nbreak \x1b[31mred";
  f.generation = 2;
  f.workers = {"w\x1b]0;title\x07", "w1"};
  const std::string text = status_text(f);
  EXPECT_EQ(text.rfind("job job: failed (worker w0 failed: line?break ?[31mred)\n", 0), 0u) << text;
  EXPECT_NE(text.find("\nworkers: 2 in generation 2 (w?]0;title?, w1)\n"), std::string::npos)
      << text;
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
}

// A coordinator waiting for its first generation: status says how many workers it waits for and
// how many have joined (one joined, one joined and left, one to come).
TEST(ReportFacts, AJobWaitingForItsFirstWorkersSaysHowManyHaveJoined) {
  const std::string dir = ::testing::TempDir() + "/report_job_waiting";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  write_file_atomically(dir + "/coordinator.json",
                        R"({"job": {"workers": 3, "total_steps": 30}, "generation": -1})");
  write_file_atomically(dir + "/events.jsonl",
                        R"({"t":0.1,"event":"worker_joined","worker":"w0"})"
                        "\n"
                        R"({"t":0.2,"event":"worker_joined","worker":"w1"})"
                        "\n"
                        R"({"t":0.3,"event":"worker_left","worker":"w1","reason":"preempted"})"
                        "\n");
  const JobFacts f = job_facts(records::read_job_records(dir), 0.0);
  EXPECT_EQ(f.state, "running");
  EXPECT_EQ(f.first_generation_size, 3);
  EXPECT_EQ(f.joined, 1);
  EXPECT_NE(status_text(f).find("\nworkers: no generation formed yet; the first waits for 3, 1 "
                                "joined\n"),
            std::string::npos)
      << status_text(f);
}

// A running job's revocations, counted from its events, are the ones its summary will count:
// not a worker stopped by its owner, dropped as unreachable or that could not start.
TEST(ReportFacts, ARunningJobCountsTheRevocationsItsSummaryWill) {
  const std::string dir = ::testing::TempDir() + "/report_job_revocations";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::string events;
  for (const char* reason :
       {"failed", "silent", "preempted", "stopped", "unreachable", "misconfigured"}) {
    events += std::string(R"({"t":0.3,"event":"worker_left","worker":"w1","reason":")") + reason +
              "\"}\n";
  }
  write_file_atomically(dir + "/events.jsonl", events);
  EXPECT_EQ(job_facts(records::read_job_records(dir), 0.0).revocations, 3);
}

TEST(ReportFacts, ARunningJobHasItsSpeedFromItsLastSteps) {
  const auto job = testing::write_job_dir("running");
  std::filesystem::remove(job.dir + "/summary.json");
  const JobFacts f = job_facts(records::read_job_records(job.dir), 0.0);
  EXPECT_EQ(f.state, "running");
  EXPECT_EQ(f.step, 300);
  // The last 20 steps: 2 members of 60 samples, the slowest taking 0.001+0.021+0.012+0.001 s.
  EXPECT_NEAR(f.samples_per_s, 120 / 0.035, 1e-6);
  EXPECT_FALSE(f.time_left_s);  // no total known
  // With the job's steps (coordinator.json): the steps left at the last steps' pace.
  std::ofstream(job.dir + "/coordinator.json") << R"({"job": {"total_steps": 500}})";
  const JobFacts left = job_facts(records::read_job_records(job.dir), 0.0);
  EXPECT_EQ(left.total_steps, 500);
  ASSERT_TRUE(left.time_left_s);
  EXPECT_NEAR(*left.time_left_s, 200 * 0.035, 1e-9);
  const std::string text = status_text(left);
  EXPECT_NE(text.find("step 300 of 500\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\ntime left: about 7.0 s (the steps left at the pace of the last ones)\n"),
            std::string::npos)
      << text;
  EXPECT_NEAR(parse_prometheus(prometheus_text(left)).at("transient_seconds_left"), 7.0, 1e-9);
  // A run that pauses after step 400 (--stop-at) has 100 steps left to run, not 200.
  std::ofstream(job.dir + "/coordinator.json")
      << R"({"job": {"total_steps": 500, "stop_at_step": 400}})";
  const JobFacts pausing = job_facts(records::read_job_records(job.dir), 0.0);
  ASSERT_TRUE(pausing.time_left_s);
  EXPECT_NEAR(*pausing.time_left_s, 100 * 0.035, 1e-9);
  std::ofstream(job.dir + "/coordinator.json") << R"({"job": {"total_steps": 500}})";
  const std::string page = render_job_report(records::read_job_records(job.dir), {});
  EXPECT_NE(page.find("<td>time left</td><td>about 7.0 s (the steps left at the pace of the last "
                      "ones)</td>"),
            std::string::npos);
  // Every step done but no summary yet: the job evaluates and writes its last checkpoint.
  std::ofstream(job.dir + "/coordinator.json") << R"({"job": {"total_steps": 300}})";
  const JobFacts done = job_facts(records::read_job_records(job.dir), 0.0);
  EXPECT_EQ(done.state, "running");
  EXPECT_TRUE(done.steps_done);
  EXPECT_EQ(done.time_left_s, 0.0);
  EXPECT_NE(status_text(done).find("\ntime left: its steps are done: the model is being "
                                   "evaluated and its last checkpoint written\n"),
            std::string::npos)
      << status_text(done);
  // The journal says the job ended, and no summary.json was written: neither running nor any
  // state a summary gives (the README names it).
  std::ofstream(job.dir + "/coordinator.json") << R"({"job": {"total_steps": 300}, "ended": true})";
  EXPECT_EQ(job_facts(records::read_job_records(job.dir), 0.0).state, "ended");
  // A finished job has none.
  EXPECT_FALSE(
      job_facts(records::read_job_records(testing::write_job_dir("ended").dir), 0.0).time_left_s);
  // A damaged coordinator.json says nothing of the total: a "job" that is no object, a total no
  // int64 holds (converted unchecked before: undefined behaviour), a fractional one.
  for (const char* damaged : {R"({"job": 5})", R"({"job": {"total_steps": 1e300}})",
                              R"({"job": {"total_steps": 2.5}})"}) {
    std::ofstream(job.dir + "/coordinator.json") << damaged;
    const JobFacts unknown = job_facts(records::read_job_records(job.dir), 0.0);
    EXPECT_EQ(unknown.total_steps, 0) << damaged;
    EXPECT_FALSE(unknown.time_left_s) << damaged;
  }
}

// summary.json's "test_accuracy": 1e308 showed as "inf%" in status and on the page, and a
// negative cost was taken: each is a problem naming the file and the field, and not used.
// A job resumed keeps the summary of its earlier run until the new run writes its own: while the
// new one runs, the job is running (it was shown paused, at the earlier run's speed and cost,
// with no time left), and once it ended, the summary is the job's again.
TEST(ReportFacts, AResumedJobRunsUntilItsNewRunEnds) {
  const auto job = testing::write_job_dir("resumed_running");
  const JobFacts before = job_facts(records::read_job_records(job.dir), 0.0);
  ASSERT_EQ(before.state, "finished");
  {
    std::ofstream events(job.dir + "/events.jsonl", std::ios::app);
    events
        << R"({"t":0.02,"time":"2026-11-24T10:05:00.020Z","event":"worker_joined","worker":"w0"})"
        << "\n"
        << R"({"t":0.16,"time":"2026-11-24T10:05:00.160Z","event":"generation","gen":0,)"
        << R"("members":["w0"],"start_step":300})"
        << "\n";
  }
  const JobFacts running = job_facts(records::read_job_records(job.dir), 0.0);
  EXPECT_EQ(running.state, "running");
  EXPECT_NE(running.samples_per_s, job.samples_per_s);
  {
    std::ofstream events(job.dir + "/events.jsonl", std::ios::app);
    events << R"({"t":0.4,"time":"2026-11-24T10:05:00.400Z","event":"done","step":300})"
           << "\n";
  }
  EXPECT_EQ(job_facts(records::read_job_records(job.dir), 0.0).state, "finished");
}

// A paused job continued by a coordinator that waits for its workers has written no event yet:
// while the coordinator holds the job's lock and its journal does not say the job ended, a run
// is under way (it was shown paused, on the dashboard that coordinator served too).
TEST(ReportFacts, AJobWhoseCoordinatorHoldsItRunsBeforeItsRunWritesAnEvent) {
  const auto job = testing::write_job_dir("continued_waiting");
  std::ofstream(job.dir + "/coordinator.json") << R"({"job": {"total_steps": 500}, "pid": 1})";
  const std::string lock = job.dir + "/.coordinator.lock";
  std::ofstream(lock).close();
  if (records::probe_coordinator_lock(lock) == records::CoordinatorLock::kUnknown) {
    GTEST_SKIP() << "this machine cannot tell a lock of " << job.dir;
  }
  EXPECT_EQ(job_facts(records::read_job_records(job.dir), 0.0).state, "finished");
  testing::LockHolder coordinator(lock);
  EXPECT_EQ(job_facts(records::read_job_records(job.dir), 0.0).state, "running");
  // Its journal says the job ended (it writes the summary, then lets the lock go).
  std::ofstream(job.dir + "/coordinator.json")
      << R"({"job": {"total_steps": 500}, "pid": 1, "ended": true})";
  EXPECT_EQ(job_facts(records::read_job_records(job.dir), 0.0).state, "finished");
}

// A run resumed from a checkpoint before the step an earlier run reached is at its own step (the
// step was the highest any run had reached: a job paused at 100 read as at 300), and it is where
// its step rows say once they are ahead of its events (status named the generation's first step,
// or its last event's, until the next event).
TEST(ReportFacts, AResumedRunIsAtItsOwnStepNotTheHighestAnEarlierRunReached) {
  namespace fs = std::filesystem;
  const auto job = testing::write_job_dir("resumed_earlier");
  fs::remove(job.dir + "/summary.json");
  // The resume drops the rows after its checkpoint (step 100), as merge_step_records does.
  const auto keep_rows_up_to = [&](int last) {
    std::ifstream in(job.dir + "/steps.csv");
    std::string kept;
    std::string line;
    for (bool header = true; std::getline(in, line); header = false) {
      if (header || std::stoi(line.substr(0, line.find(','))) <= last) kept += line + "\n";
    }
    in.close();
    std::ofstream(job.dir + "/steps.csv") << kept;
  };
  keep_rows_up_to(100);
  {
    std::ofstream events(job.dir + "/events.jsonl", std::ios::app);
    events << R"({"t":0.16,"time":"2026-11-24T10:05:00.160Z","event":"generation","gen":4,)"
           << R"("members":["w4"],"start_step":100})"
           << "\n"
           << R"({"t":0.3,"time":"2026-11-24T10:05:00.300Z","event":"epoch","step":120})"
           << "\n";
  }
  EXPECT_EQ(job_facts(records::read_job_records(job.dir), 0.0).step, 120);
  {
    std::ofstream steps(job.dir + "/steps.csv", std::ios::app);
    for (int step = 101; step <= 130; ++step) {
      steps << step << ",0,120,0.001,0.02,0.01,0.001,0.5,4," << (step - 1) * 120 << "\n";
    }
  }
  EXPECT_EQ(job_facts(records::read_job_records(job.dir), 0.0).step, 130);
}

// A job whose coordinator was killed (SIGKILL of `transient train` or `transient coordinator`)
// was "running" for ever, with a time left that never changed: while a real process holds the
// job's lock the job runs; once it is killed, the job is interrupted, and status says why and
// how to go on. A job whose journal says it ended, or that has no lock file (a job of an earlier
// version, another host's file system), is not called interrupted.
TEST(ReportFacts, AJobWhoseCoordinatorWasKilledIsInterrupted) {
  const auto job = testing::write_job_dir("coordinator_killed");
  std::filesystem::remove(job.dir + "/summary.json");
  std::ofstream(job.dir + "/coordinator.json") << R"({"job": {"total_steps": 500}, "pid": 1})";
  EXPECT_EQ(job_facts(records::read_job_records(job.dir), 0.0).state, "running");  // no lock file
  const std::string lock = job.dir + "/.coordinator.lock";
  std::ofstream(lock).close();
  if (records::probe_coordinator_lock(lock) == records::CoordinatorLock::kUnknown) {
    GTEST_SKIP() << "this machine cannot tell a lock of " << job.dir;
  }
  testing::LockHolder coordinator(lock);
  const JobFacts running = job_facts(records::read_job_records(job.dir), 0.0);
  EXPECT_EQ(running.state, "running");
  EXPECT_TRUE(running.time_left_s);
  EXPECT_TRUE(running.continue_with.empty());
  coordinator.kill();
  const JobFacts killed = job_facts(records::read_job_records(job.dir), 0.0);
  EXPECT_EQ(killed.state, "interrupted");
  EXPECT_FALSE(killed.time_left_s);
  const std::string text = status_text(killed);
  EXPECT_EQ(
      text.rfind("job " + job.dir +
                     ": interrupted\n"
                     "its coordinator is not running: it was killed or crashed; continue with "
                     "transient train --resume --job-dir " +
                     job.dir +
                     " if `transient train` ran it, or transient coordinator "
                     "--job-dir " +
                     job.dir + " if a standalone coordinator did\n",
                 0),
      0u)
      << text;
  EXPECT_EQ(text.find("time left"), std::string::npos) << text;
  // A journal that says which command ran the job: that one.
  std::ofstream(job.dir + "/coordinator.json")
      << R"({"job": {"total_steps": 500}, "pid": 1, "standalone": true})";
  EXPECT_EQ(job_facts(records::read_job_records(job.dir), 0.0).continue_with,
            "transient coordinator --job-dir " + job.dir + " (its workers re-join it)");
  std::ofstream(job.dir + "/coordinator.json")
      << R"({"job": {"total_steps": 500}, "pid": 1, "standalone": false})";
  EXPECT_EQ(job_facts(records::read_job_records(job.dir), 0.0).continue_with,
            "transient train --resume --job-dir " + job.dir);
  EXPECT_NE(render_job_report(records::read_job_records(job.dir), {})
                .find("<td>state</td><td>interrupted (its coordinator is not running: it was "
                      "killed or crashed)</td>"),
            std::string::npos);
  // Ended (the journal says so) or with its summary written, it is not interrupted.
  std::ofstream(job.dir + "/coordinator.json") << R"({"job": {"total_steps": 500}, "ended": true})";
  EXPECT_EQ(job_facts(records::read_job_records(job.dir), 0.0).state, "ended");
  testing::write_job_dir("coordinator_killed");
  std::ofstream(lock).close();
  EXPECT_EQ(job_facts(records::read_job_records(job.dir), 0.0).state, "finished");
}

// A job resumed after a crash from its checkpoint of step 250 had its third epoch (step 300)
// twice in events.jsonl, the crashed run's and the resumed run's: status showed the crashed
// run's accuracy "evaluated after step 300" while the resumed run was before it, and the page
// drew both points. Each epoch is its last run's.
TEST(ReportFacts, AnEpochAResumedRunTrainsAgainIsItsLastRuns) {
  const auto job = testing::write_job_dir("epochs_twice");
  std::filesystem::remove(job.dir + "/summary.json");
  std::string events = read_file(job.dir + "/events.jsonl");
  events = events.substr(0, events.find("{\"t\":18.100"));  // the crash: no "done"
  events += R"({"t":0.2,"time":"2026-11-24T10:05:00.200Z","event":"generation","gen":0,)"
            R"("members":["w0"],"start_step":250,"checkpoint":"step-00000250.pt"})"
            "\n";
  write_file_atomically(job.dir + "/events.jsonl", events);
  const JobFacts before = job_facts(records::read_job_records(job.dir), 0.0);
  EXPECT_EQ(before.evaluated_step, 200);
  EXPECT_DOUBLE_EQ(*before.test_accuracy, 0.83);
  events += R"({"t":3.0,"time":"2026-11-24T10:05:03.000Z","event":"epoch","epoch":3,"step":300,)"
            R"("train_loss":0.4,"test_accuracy":0.9,"test_loss":0.3})"
            "\n";
  write_file_atomically(job.dir + "/events.jsonl", events);
  const JobFacts after = job_facts(records::read_job_records(job.dir), 0.0);
  EXPECT_EQ(after.evaluated_step, 300);
  EXPECT_DOUBLE_EQ(*after.test_accuracy, 0.9);
  const auto charts =
      testing::chart_data(render_job_report(records::read_job_records(job.dir), {}));
  EXPECT_EQ(testing::dataset(charts["accuracy-step"], "test_accuracy")["data"],
            nlohmann::json::parse(R"([{"x":100,"y":0.71},{"x":200,"y":0.83},{"x":300,"y":0.9}])"));
  const auto by_time = testing::dataset(charts["accuracy-time"], "test_accuracy")["data"];
  ASSERT_EQ(by_time.size(), 3u);
  EXPECT_GT(by_time[2]["x"].get<double>(), 18.0);  // the resumed run's time, after the crash
}

// Its last members gone and the job waiting for a worker: no members, no speed, no time left (it
// showed the gone worker, the last steps' speed and a time left that never changed). A
// divergence's step, which never completed, is not the job's step.
TEST(ReportFacts, AJobWaitingForAWorkerHasNoMembersSpeedOrTimeLeft) {
  const auto job = testing::write_job_dir("waiting_for_one");
  std::filesystem::remove(job.dir + "/summary.json");
  {
    std::ofstream events(job.dir + "/events.jsonl", std::ios::app);
    for (const char* id : {"w0", "w3"}) {
      events << R"({"t":30.0,"time":"2026-11-24T10:00:30.000Z","event":"worker_left","worker":")"
             << id << R"(","reason":"failed"})"
             << "\n";
    }
    events << R"({"t":30.5,"time":"2026-11-24T10:00:30.500Z","event":"waiting","step":250})"
           << "\n";
    events << R"({"t":30.6,"time":"2026-11-24T10:00:30.600Z","event":"diverged","step":9999})"
           << "\n";
  }
  const JobFacts waiting = job_facts(records::read_job_records(job.dir), 0.0);
  EXPECT_EQ(waiting.state, "running");
  EXPECT_TRUE(waiting.workers.empty()) << status_text(waiting);
  // A worker that left before the last generation formed is not taken from it: w3 of a run
  // resumed (whose ids start again) is a member.
  {
    std::ofstream events(job.dir + "/events.jsonl", std::ios::app);
    events << R"({"t":31.0,"time":"2026-11-24T10:00:31.000Z","event":"generation","gen":5,)"
           << R"("members":["w3"],"start_step":250})"
           << "\n";
  }
  EXPECT_EQ(job_facts(records::read_job_records(job.dir), 0.0).workers,
            std::vector<std::string>{"w3"});
  EXPECT_EQ(waiting.samples_per_s, 0.0);
  EXPECT_FALSE(waiting.time_left_s.has_value());
  EXPECT_EQ(waiting.step, 300);
}

TEST(ReportFacts, ASummaryFigureOutOfRangeIsAProblemNotAFigure) {
  const auto job = testing::write_job_dir("summary_out_of_range", false, true);
  auto summary = nlohmann::json::parse(read_file(job.dir + "/summary.json"));
  summary["test_accuracy"] = 1e308;
  summary["cost_usd"] = -4.5;
  write_file_atomically(job.dir + "/summary.json", summary.dump());
  const auto records = records::read_job_records(job.dir);
  const std::string text = status_text(job_facts(records, 0.0));
  EXPECT_EQ(text.find("inf"), std::string::npos) << text;
  // What the events say stands instead: the last evaluation's accuracy, the bill of the last
  // "cost" event.
  EXPECT_NE(text.find("\ncost: $0.30\ntest accuracy: 88.00%\n"), std::string::npos) << text;
  EXPECT_NE(text.find(job.dir + "/summary.json: field \"test_accuracy\": unexpected 1e+308; "
                                "accepted: a number from 0 to 1, or null (not evaluated)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(job.dir + "/summary.json: field \"cost_usd\": unexpected -4.5"),
            std::string::npos)
      << text;
  EXPECT_EQ(render_job_report(records, {}).find("inf%"), std::string::npos);
}

// A "gen" of 1e300 in a generation event was converted to an integer unchecked (undefined
// behaviour), and 2.5 was taken as generation 2: neither is a generation.
TEST(ReportFacts, AGenerationThatIsNoWholeNumberIsNone) {
  for (const char* gen : {"1e300", "2.5", "-1e300"}) {
    const auto read = records::parse_events(
        std::string(R"({"t":1,"event":"generation","members":["w0","w1"],"gen":)") + gen + "}\n",
        "events.jsonl");
    ASSERT_EQ(read.events.size(), 1u) << gen;
    const internal::RankNames names(read.events);
    EXPECT_EQ(names.last_gen(), -1) << gen;
    EXPECT_EQ(names.last_members(), (std::vector<std::string>{"w0", "w1"})) << gen;
    EXPECT_EQ(names.worker_of(2, 1, 10), "rank 1") << gen;
  }
}

// Each run of a resumed job numbers its generations from 0: a step row's generation is the
// latest of its number that started before the row's step. Rows of the first run were credited
// to the second run's members (w1, killed at step 30, was credited with steps 31 to 100).
TEST(ReportFacts, AStepIsCreditedToTheRunThatTrainedIt) {
  const auto read = records::parse_events(
      R"({"t":0.1,"event":"generation","gen":0,"members":["w0","w1"],"start_step":0})"
      "\n"
      R"({"t":0.5,"event":"generation","gen":1,"members":["w0","w2"],"start_step":30})"
      "\n"
      R"({"t":0.9,"event":"stopped","step":100})"
      "\n"
      R"({"t":0.1,"event":"generation","gen":0,"members":["w1","w0"],"start_step":100})"
      "\n",
      "events.jsonl");
  const internal::RankNames names(read.events);
  EXPECT_EQ(names.worker_of(0, 1, 20), "w1");
  EXPECT_EQ(names.worker_of(1, 1, 31), "w2");
  EXPECT_EQ(names.worker_of(1, 1, 100), "w2");
  EXPECT_EQ(names.worker_of(0, 1, 101), "w0");
  EXPECT_EQ(names.worker_of(0, 0, 150), "w1");
}

TEST(ReportMetrics, PrometheusTextAgreesWithTheSummary) {
  const auto job = testing::write_job_dir("metrics", false, true);
  const double now = *parse_utc_iso8601(job.checkpoint_time) + 5.0;
  const auto records = records::read_job_records(job.dir);
  const std::string text = prometheus_text(job_facts(records, now));
  const auto samples = parse_prometheus(text);
  const auto& summary = records.summary->json;
  EXPECT_EQ(samples.at("transient_step"), summary["steps"].get<double>());
  EXPECT_EQ(samples.at("transient_workers"), 2);
  EXPECT_DOUBLE_EQ(samples.at("transient_samples_per_second"),
                   summary["samples_per_s"].get<double>());
  EXPECT_EQ(samples.at("transient_recoveries_total"), summary["recoveries"].get<double>());
  EXPECT_DOUBLE_EQ(samples.at("transient_checkpoint_age_seconds"), 5.0);
  EXPECT_DOUBLE_EQ(samples.at("transient_cost_usd"), summary["cost_usd"].get<double>());
  EXPECT_NE(text.find("# TYPE transient_recoveries_total counter"), std::string::npos);
}

TEST(ReportMetrics, UnknownFiguresAreLeftOut) {
  const auto job = testing::write_job_dir("metrics_no_cost");
  const auto samples =
      parse_prometheus(prometheus_text(job_facts(records::read_job_records(job.dir), 0)));
  EXPECT_EQ(samples.count("transient_cost_usd"), 0u);
  EXPECT_EQ(samples.size(), 5u);
  // The cost from the "cost" events when summary.json has none: the last one's bill.
  const auto priced = testing::write_job_dir("metrics_cost_events", false, true);
  std::filesystem::remove(priced.dir + "/summary.json");
  const JobFacts f = job_facts(records::read_job_records(priced.dir), 0);
  EXPECT_DOUBLE_EQ(*f.cost_usd, 0.30);
}

// Each "cost" event holds the job's whole bill so far (Coordinator::account_cost: the earlier
// runs', whatever their market, and this run's), not its market's: a job paused on spot and
// resumed on on-demand was shown twice its bill by status, /metrics and the report's chart until
// summary.json was written (for ever if the coordinator died), the spot run's bill added to the
// on-demand run's, which already held it.
TEST(ReportFacts, AJobResumedOnAnotherMarketCostsItsBillOnce) {
  // Two servers at $0.36/h on spot ($0.0002/s) for 15 s, then at $0.72/h on demand for 12.5 s;
  // each run's coordinator counts t from its own start.
  std::string lines;
  const auto event = [&lines](double t, int second, const std::string& fields) {
    lines += fmt::format(R"({{"t":{},"time":"2026-11-24T10:{:02d}:{:02d}.000Z",{}}})", t,
                         second / 60, second % 60, fields) +
             "\n";
  };
  const auto cost = [&event](double t, int second, const char* market, double price, int servers,
                             double usd) {
    event(t, second,
          fmt::format(R"("event":"cost","market":"{}","instance_type":"n1-standard-8",)"
                      R"("price_usd_per_h":{},"servers":{},"cost_usd":{})",
                      market, price, servers, usd));
  };
  event(0.0, 0, R"("event":"generation","gen":0,"members":["w0","w1"],"start_step":0)");
  cost(10.0, 10, "spot", 0.36, 2, 0.002);
  cost(15.0, 15, "spot", 0.36, 0, 0.003);
  event(15.0, 15, R"("event":"stopped","step":150,"wall_s":15.0,"samples_per_s":1280)");
  event(0.0, 120, R"("event":"generation","gen":1,"members":["w2","w3"],"start_step":150)");
  cost(10.0, 130, "on-demand", 0.72, 2, 0.007);
  cost(12.5, 132, "on-demand", 0.72, 2, 0.008);  // running: no summary of this run yet
  records::JobRecords records;
  records.dir = "resumed-on-demand";
  records.events = records::parse_events(lines, "events.jsonl").events;
  ASSERT_EQ(records.events.size(), 7u);

  const JobFacts f = job_facts(records, 0.0);
  ASSERT_TRUE(f.cost_usd);
  EXPECT_DOUBLE_EQ(*f.cost_usd, 0.008);
  const std::string text = status_text(f);
  EXPECT_NE(text.find("\ncost: $0.0080\n"), std::string::npos) << text;
  EXPECT_DOUBLE_EQ(parse_prometheus(prometheus_text(f)).at("transient_cost_usd"), 0.008);

  // The chart: the bill, and what each market took of it (adding up to the bill at every point).
  const auto chart = testing::chart_data(render_job_report(records, {}))["cost"];
  ASSERT_EQ(chart["data"]["datasets"].size(), 3u);
  const auto ys = [&chart](const std::string& label) {
    const nlohmann::json set = testing::dataset(chart, label);
    std::vector<double> y;
    for (const auto& point : set["data"]) y.push_back(point["y"].get<double>());
    return y;
  };
  const auto bill = ys("all markets");
  const auto spot = ys("spot");
  const auto on_demand = ys("on-demand");
  const std::vector<double> expected_bill = {0.002, 0.003, 0.007, 0.008};
  const std::vector<double> expected_spot = {0.002, 0.003, 0.003, 0.003};
  const std::vector<double> expected_on_demand = {0.0, 0.0, 0.004, 0.005};
  ASSERT_EQ(bill.size(), expected_bill.size());
  ASSERT_EQ(spot.size(), expected_spot.size());
  ASSERT_EQ(on_demand.size(), expected_on_demand.size());
  for (std::size_t i = 0; i < expected_bill.size(); ++i) {
    EXPECT_NEAR(bill[i], expected_bill[i], 1e-12) << i;
    EXPECT_NEAR(spot[i], expected_spot[i], 1e-12) << i;
    EXPECT_NEAR(on_demand[i], expected_on_demand[i], 1e-12) << i;
  }
  // On one time axis: the resumed run's events after the first run's.
  const nlohmann::json points = testing::dataset(chart, "all markets")["data"];
  for (std::size_t i = 1; i < points.size(); ++i)
    EXPECT_GT(points[i]["x"].get<double>(), points[i - 1]["x"].get<double>()) << i;
}

TEST(ReportStatus, CostsBelowACentAreNotShownAsNothing) {
  EXPECT_EQ(usd_text(1.1749), "$1.17");
  EXPECT_EQ(usd_text(0.01), "$0.01");
  EXPECT_EQ(usd_text(0.000408958), "$0.00041");
  EXPECT_EQ(usd_text(0), "$0.00");
  EXPECT_EQ(usd_text(0.000014), "$0.000014");  // not $1.4e-05
}

}  // namespace
}  // namespace transient::report
