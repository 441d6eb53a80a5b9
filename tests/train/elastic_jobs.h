// The elastic trainer's process tests' jobs (elastic_test.cc, and elastic_checkpoints_test.cc,
// which reads their checkpoints with libtorch): a job's flags, a worker's command, and a job whose
// standalone coordinator is killed while its workers train on. Without libtorch.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "train/cli_process.h"
#include "train/job_records.h"

namespace transient::train::testing {

// An elastic job on 2000 training samples (20 steps of 100 per epoch). The heartbeat timeout is
// long so that a loaded machine's slow step is never taken for a silent worker, except where a
// test is about silence.
inline std::vector<std::string> elastic_job(const std::string& job_dir, int workers, int steps) {
  return with(small_job(job_dir, workers, steps), {"--heartbeat-timeout", "30s"});
}

// A worker joining the job in `dir` through its coordinator's front door at `address`.
inline std::vector<std::string> worker_command(const std::string& dir, const std::string& address) {
  return {"worker", "--coordinator", address, "--token-file", dir + "/token", "--threads", "1"};
}

// Stops (SIGSTOP) the standalone coordinator of the 200-step job in `dir` before its workers'
// last step: it then neither reads what they send nor answers, while they train to the end.
// A failure if rank 0's rows show the workers already at its end.
inline ::testing::AssertionResult stop_before_the_last_step(CliProcess& coordinator,
                                                            const std::string& dir) {
  ::kill(coordinator.pid(), SIGSTOP);
  const std::string rows = slurp(dir + "/records/steps-w0.part.csv");
  if (std::count(rows.begin(), rows.end(), '\n') < 199) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "the workers trained too far before the coordinator was stopped";
}

// Two workers trained with a standalone coordinator of `steps` steps in `dir`, which is then
// killed: they train on without it.
struct CoordinatorKilled {
  std::string address;              // its front door, where a restarted one listens again
  std::vector<std::string> worker;  // the command of a worker
  std::unique_ptr<CliProcess> a, b;
};

// Restarts the coordinator of the job in `dir` and expects the job to end with it, after `steps`
// steps, and both workers to exit 0. False if the coordinator failed.
inline bool expect_a_restarted_coordinator_ends_the_job(const std::string& dir, CliProcess& a,
                                                        CliProcess& b, int steps) {
  CliProcess restarted({"coordinator", "--job-dir", dir}, dir + "-2");
  const auto done = restarted.wait();
  EXPECT_EQ(done.exit_code, 0) << done.err;
  if (done.exit_code != 0) return false;
  // It says a speed only where it saw steps trained (it said 0 samples/s when none).
  EXPECT_EQ(done.out.find(" 0 samples/s"), std::string::npos) << done.out;
  EXPECT_NE(done.out.find("test accuracy"), std::string::npos) << done.out;
  EXPECT_EQ(a.wait().exit_code, 0);
  EXPECT_EQ(b.wait().exit_code, 0);
  EXPECT_EQ(summary_of(dir).at("steps"), steps);
  return true;
}

// Starts that job and kills its coordinator once the workers train; false if they never do.
inline bool train_then_kill_the_coordinator(const std::string& dir, int steps,
                                            CoordinatorKilled& job) {
  CliProcess coordinator(coordinator_job(dir, steps, 2), dir + "-1");
  job.address = front_door(dir);
  job.worker = worker_command(dir, job.address);
  job.a = std::make_unique<CliProcess>(job.worker, dir + "-a");
  job.b = std::make_unique<CliProcess>(job.worker, dir + "-b");
  if (!wait_for_training(dir)) return false;
  coordinator.kill_group();
  return true;
}

// The members of the generation running when `event` happened.
inline std::vector<std::string> members_at(const std::vector<nlohmann::json>& events,
                                           const nlohmann::json& event) {
  std::vector<std::string> members;
  for (const auto& e : events) {
    if (e.at("event") == "generation" && e.at("gen") == event.at("gen")) {
      members = e.at("members").get<std::vector<std::string>>();
    }
  }
  return members;
}

}  // namespace transient::train::testing
