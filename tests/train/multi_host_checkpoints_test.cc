// Elastic training across hosts (multi_host_test.cc) where the test reads what the checkpoints
// hold, with libtorch: workers that cannot see the job directory keep its records and
// checkpoints with the coordinator, and every checkpoint stored there loads.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "train/cli_process.h"
#include "train/emulated_hosts.h"
#include "train/job_records.h"
#include "train/multi_host.h"

namespace transient::train {
namespace {

using namespace testing;

// The job's files live with the coordinator: workers whose hosts cannot see the job directory
// at all (a tmpfs hides it in their mount namespace; the token comes in TRANSIENT_TOKEN, as an
// orchestrator passes it) train, send their step records and checkpoints to the coordinator, and
// a worker that joins after every other left resumes from a checkpoint it fetches from there.
TEST_F(MultiHost,
       WorkersThatCannotSeeTheJobDirectoryKeepItsRecordsAndCheckpointsWithTheCoordinator) {
  make_hosts(4);
  const std::string dir = fresh_dir("hosts-own-disks");
  constexpr int kSteps = 300;
  auto coordinator = start_coordinator(dir, kSteps, 2, {"--checkpoint-every", "50"});
  const std::string address = front_door(dir);
  const std::string token = slurp(dir + "/token").substr(0, 64);
  auto without_the_job = [&](int host, const std::string& log) {
    auto through = hosts_->on(host);
    const std::vector<std::string> hidden{"/usr/bin/unshare",
                                          "--mount",
                                          "--propagation",
                                          "private",
                                          "/usr/bin/env",
                                          "TRANSIENT_TOKEN=" + token,
                                          "/bin/sh",
                                          "-c",
                                          "mount -t tmpfs tmpfs \"$0\" && exec \"$@\"",
                                          dir};
    through.insert(through.end(), hidden.begin(), hidden.end());
    return std::make_unique<CliProcess>(
        std::vector<std::string>{"worker", "--coordinator", address, "--threads", "1"}, log,
        through);
  };
  // Where the job stood, for a wait that fails.
  const auto stands = [&] {
    return "the coordinator: " + coordinator->how() + "\n" +
           where_the_job_stands(dir, {dir + "-coordinator.err", dir + "-a.err", dir + "-b.err"});
  };
  auto a = without_the_job(1, dir + "-a");
  auto b = without_the_job(2, dir + "-b");
  ASSERT_TRUE(wait_until([&] {
    return events_named(events_so_far(dir), "checkpoint").size() >= 2;
  })) << stands();
  {
    // Both leave well before the job's end, whatever the machine's speed (it had 1500 steps).
    HeldWorkers held(dir);
    ASSERT_EQ(held.pids().size(), 2u);
    ::kill(a->pid(), SIGTERM);
    ::kill(b->pid(), SIGTERM);
  }
  EXPECT_EQ(a->wait().exit_code, 0);
  EXPECT_EQ(b->wait().exit_code, 0);
  ASSERT_TRUE(wait_until([&] { return last_event(events_so_far(dir), "waiting") != nullptr; }))
      << stands();
  auto c = without_the_job(3, dir + "-c");
  const auto done = coordinator->wait();
  ASSERT_EQ(done.exit_code, 0) << done.err;
  EXPECT_EQ(c->wait().exit_code, 0) << slurp(dir + "-c.err");
  const auto events = read_events(dir);
  const auto generations = events_named(events, "generation");
  ASSERT_GE(generations.size(), 2u);
  EXPECT_NE(generations.back().at("checkpoint"), "")
      << "the last worker did not resume from a checkpoint";
  EXPECT_EQ(summary_of(dir).at("steps"), kSteps);
  expect_every_checkpoint_loads(dir);
  expect_every_sample_once(dir, kSteps, 2000, 100);
}

}  // namespace
}  // namespace transient::train
