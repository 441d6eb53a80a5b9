// Every failure path ends, and nothing that did not finish exits 0 (issue 18's reproducers):
// rollbacks after a divergence, a checkpoint directory or records that cannot be written, a
// missing manifest, a worker that cannot reach its coordinator, a local job left without
// workers. Real processes, real files. Those whose test reads or alters what the checkpoints
// hold (a checkpoint of NaN parameters, one that does not fit the model, a paused standalone
// coordinator's) are in failure_checkpoints_test.cc, in a test program with libtorch.
#include <gtest/gtest.h>
#include <signal.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/small_tmpfs.h"
#include "train/cli_process.h"
#include "train/job_records.h"
#include "transient/core/text.h"
#include "transient/train/checkpoint_directory.h"
#include "transient/train/trainer.h"

namespace transient::train {
namespace {

namespace fs = std::filesystem;
using namespace testing;  // the job record readers of job_records.h

// Whether process `pid` has a handler for `signal` (its SigCgt mask in /proc).
bool catches_signal(pid_t pid, int signal) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("SigCgt:", 0) == 0) {
      const unsigned long long mask = std::stoull(line.substr(7), nullptr, 16);
      return (mask >> (signal - 1)) & 1u;
    }
  }
  return false;
}

// A job that diverged after its 3 rollbacks goes on as its error line says: with --resume and a
// lower --lr (a resumed job refused any --lr: the advice could not be followed). Resumed without
// one it keeps its rollbacks spent (a resume counted them from 0 again: 3 more halvings).
TEST(Failure, ADivergedJobGoesOnAtALowerRateAndKeepsItsRollbacksSpent) {
  const std::string dir = fresh_dir("diverged-resumed");
  const auto diverged = run_cli(set_flag(with(small_job(dir, 1, 60), {"--on-divergence", "rollback",
                                                                      "--checkpoint-every", "5"}),
                                         "--lr", "1000"),
                                dir + ".1");
  ASSERT_EQ(diverged.exit_code, kExitDiverged) << diverged.err;
  EXPECT_NE(diverged.err.find("lower --lr and continue from it with --resume"), std::string::npos)
      << diverged.err;
  const auto again = run_cli({"train", "--resume", "--job-dir", dir}, dir + ".2");
  EXPECT_EQ(again.exit_code, kExitDiverged) << again.err;
  int rollbacks = 0;
  for (const auto& e : events_named(read_events(dir), "diverged")) {
    rollbacks += e.at("action") == "rollback";
  }
  EXPECT_EQ(rollbacks, 3);
  EXPECT_EQ(summary_of(dir).at("rollbacks"), 3);
  const auto higher =
      run_cli({"train", "--resume", "--job-dir", dir, "--lr", "200"}, dir + "-higher");
  EXPECT_EQ(higher.exit_code, kExitBadInput) << higher.err;
  EXPECT_NE(higher.err.find("--lr: 200 is not below 125, the rate the job diverged at"),
            std::string::npos)
      << higher.err;
  run_ok({"train", "--resume", "--job-dir", dir, "--lr", "0.05"}, dir + ".4");
  const auto summary = summary_of(dir);
  EXPECT_TRUE(summary.at("finished").get<bool>());
  EXPECT_DOUBLE_EQ(summary.at("lr_scale").get<double>(), 0.05 / 1000);
  const auto lowered = last_event(read_events(dir), "lr_lowered");
  ASSERT_NE(lowered, nullptr);
  EXPECT_EQ(lowered.at("lr"), 0.05);
}

// A rollback with no checkpoint before the divergence starts the job afresh, from the seeded
// initial state, with the learning rate halved: exactly the run started with that rate.
TEST(Failure, ARollbackWithNoCheckpointRestartsExactlyAsARunAtHalfTheRate) {
  const std::string dir = fresh_dir("rollback-afresh");
  const auto job = with(set_flag(small_job(dir, 1, 200), "--lr", "8"),
                        {"--momentum", "0", "--checkpoint-every", "0"});
  // Paused after the rollback and resumed without the flag: the halved rate is the job's now.
  run_paused(with(job, {"--on-divergence", "rollback", "--stop-at", "120"}), dir);
  EXPECT_EQ(summary_of(dir).at("rollbacks"), 1);
  EXPECT_EQ(summary_of(dir).at("lr_scale"), 0.5);
  run_ok(with(job, {"--resume"}), dir + "-resumed");
  const auto summary = summary_of(dir);
  EXPECT_EQ(summary.at("lr_scale"), 0.5);
  const std::string half = fresh_dir("rollback-half-rate");
  run_ok(with(set_flag(small_job(half, 1, 200), "--lr", "4"),
              {"--momentum", "0", "--checkpoint-every", "0"}),
         half);
  EXPECT_EQ(summary.at("test_accuracy"), summary_of(half).at("test_accuracy"));
  EXPECT_EQ(summary.at("test_loss"), summary_of(half).at("test_loss"));
}

// Rollbacks that do not help (the rate is far too large for any of its halves): after the
// third the job stops as with --on-divergence stop, saying so.
TEST(Failure, AfterTheLastRollbackADivergenceStopsTheJob) {
  const std::string dir = fresh_dir("rollback-exhausted");
  const auto result = run_cli(
      with(set_flag(small_job(dir, 2, 300), "--lr", "1000"), {"--on-divergence", "rollback"}),
      dir + ".log");
  EXPECT_EQ(result.exit_code, kExitDiverged) << result.err;
  EXPECT_NE(result.err.find("after 3 rollbacks with a learning rate x0.125"), std::string::npos)
      << result.err;
  // Diverged within a few steps, before the first checkpoint (every 30 s): the advice says where
  // the job goes on from, where it said "the newest checkpoint before it is no checkpoint".
  EXPECT_NE(result.err.find("; no checkpoint was written before it: lower --lr and start again "
                            "from step 0 with --resume\n"),
            std::string::npos)
      << result.err;
  const auto summary = summary_of(dir);
  EXPECT_EQ(summary.at("rollbacks"), kMaxRollbacks);
  EXPECT_FALSE(summary.at("finished").get<bool>());
  const auto events = read_events(dir);
  const auto diverged = events_named(events, "diverged");
  ASSERT_EQ(diverged.size(), 4u);
  EXPECT_EQ(diverged.back().at("action"), "stop");
  const std::string bad_dir = fresh_dir("rollback-bad");
  const auto bad =
      run_cli(with(small_job(bad_dir, 1, 10), {"--on-divergence", "retry"}), bad_dir + "-refused");
  EXPECT_EQ(bad.exit_code, kExitBadInput) << bad.err;
}

// A full disk under checkpoints/ is an error naming the path, not a cascade of rank-0 deaths or
// a job that waits for ever. The disk is a 256 KiB tmpfs mounted there (root only).
TEST(Failure, AFullCheckpointDiskStopsTheJobNamingThePath) {
  const std::string dir = fresh_dir("full-disk");
  fs::create_directories(dir + "/checkpoints");
  const transient::testing::SmallTmpfs disk(dir + "/checkpoints", "256k");
  if (!disk.why_not().empty()) GTEST_SKIP() << disk.why_not();
  const auto result = run_cli(
      with(small_job(dir, 2, 300), {"--checkpoint-every", "5", "--keep", "5"}), dir + ".log");
  EXPECT_EQ(result.exit_code, kExitFailed) << result.err;
  EXPECT_NE(result.err.find("error: the job failed after step"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find(dir + "/checkpoints"), std::string::npos) << result.err;
  const auto events = read_events(dir);
  EXPECT_EQ(count_events(events, "worker_failed"), 1) << "one failure ends the job";
  EXPECT_EQ(count_events(events, "recovery"), 0) << "no member was re-formed around";
}

// A full disk under the job's own records (the journal, events.jsonl) while it runs stops the job
// naming the file and saying how to go on, and what was written stays whole: it ended as bad
// input (exit 2) with no word of the job. The disk is a 4 MiB tmpfs (root only), filled once the
// job trains; emptied, the job goes on.
TEST(Failure, AFullDiskUnderTheJobsRecordsStopsItSayingHowToGoOn) {
  const std::string dir = fresh_dir("full-records-disk");
  const transient::testing::SmallTmpfs disk(dir, "4m");
  if (!disk.why_not().empty()) GTEST_SKIP() << disk.why_not();
  const std::string job = dir + "/job";
  CliProcess running(with(small_job(job, 2, 100000), {"--checkpoint-every", "100000"}),
                     dir + ".log");
  const bool trained = wait_until(
      [&] { return slurp(job + "/events.jsonl").find("\"generation\"") != std::string::npos; });
  {
    std::ofstream filler(dir + "/filler", std::ios::binary);
    const std::string block(4096, 'x');
    while (filler.write(block.data(), static_cast<std::streamsize>(block.size())) &&
           filler.flush()) {
    }
  }
  const auto result = running.wait();
  fs::remove(dir + "/filler");
  EXPECT_TRUE(trained);
  EXPECT_EQ(result.exit_code, kExitFailed) << result.err;
  EXPECT_EQ(result.err.find("error:"), result.err.rfind("error:")) << result.err;  // one
  EXPECT_NE(result.err.find("No space left on device; the job stopped after step "),
            std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("once that is mended, continue it with: transient train --resume "
                            "--job-dir " +
                            job + "\n"),
            std::string::npos)
      << result.err;
  for (const char* file : {"/job.json", "/coordinator.json"}) {
    EXPECT_NO_THROW(nlohmann::json::parse(slurp(job + file))) << file;
  }
  EXPECT_NO_THROW(read_events(job));  // whole lines only
  const auto resumed =
      run_cli(with(small_job(job, 2, 100000), {"--resume", "--stop-at", "30"}), dir + ".resume");
  EXPECT_EQ(resumed.exit_code, kExitPaused) << resumed.err;
  EXPECT_NE(resumed.out.find("paused after step 30 of 100000"), std::string::npos) << resumed.out;
}

// Resumed with a lower --keep (a disk that cannot hold one more checkpoint beside the job's), the
// older checkpoints go before the workers start, said so: they stayed until the next one was
// written, and on that disk it could not be.
TEST(Failure, ALowerKeepOnResumeRemovesTheOlderCheckpointsFirst) {
  const std::string dir = fresh_dir("lower-keep");
  run_paused(with(small_job(dir, 1), {"--stop-at", "40", "--checkpoint-every", "10"}), dir);
  // The pause's at step 40 and one or two earlier ones: a checkpoint falling due while the writer
  // is still busy with the one before waits, and gives way to the next (on a loaded machine 30's
  // to 40's, or 20's to 30's and that to 40's, while 10's was being written).
  const auto before = CheckpointDirectory(dir + "/checkpoints", 3).list();
  ASSERT_GE(before.size(), 2u);
  ASSERT_EQ(before.back().step, 40);
  std::string older;
  for (std::size_t i = 0; i + 1 < before.size(); ++i) {
    older += (older.empty() ? "" : ", ") + checkpoint_name(before[i].step);
  }
  const auto resumed =
      run_cli(with(small_job(dir, 1), {"--resume", "--keep", "1", "--stop-at", "45"}), dir + ".1");
  EXPECT_EQ(resumed.exit_code, kExitPaused) << resumed.err;
  EXPECT_NE(
      resumed.err.find("transient: --keep 1: removed " +
                       counted(static_cast<long long>(before.size() - 1), "older checkpoint") +
                       " (" + older + ")\n"),
      std::string::npos)
      << resumed.err;
  const auto left = CheckpointDirectory(dir + "/checkpoints", 1).list();
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].step, 45);
  EXPECT_EQ(count_events(read_events(dir), "checkpoints_removed"), 1);
  for (std::size_t i = 0; i < before.size(); ++i) {
    EXPECT_FALSE(fs::exists(dir + "/checkpoints/" + checkpoint_name(before[i].step)));
  }
}

// `transient train` whose only worker is killed, with no replacement to come: the job fails
// naming what ended the last worker, and does not say that it waits for one to join.
TEST(Failure, ALocalJobWithNoWorkerLeftAndNoneToComeFailsSayingSo) {
  const std::string dir = fresh_dir("none-left");
  const auto result =
      run_cli(with(small_job(dir, 1, 100000), {"--revoke", "kill@step20:rank0"}), dir + ".log");
  EXPECT_EQ(result.exit_code, kExitFailed) << result.err;
  EXPECT_NE(result.err.find("transient: no worker left\n"), std::string::npos) << result.err;
  EXPECT_EQ(result.err.find("waits for one to join"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("every worker has exited and none is left to continue (the last "
                            "killed by signal 9"),
            std::string::npos)
      << result.err;
}

// --resume with checkpoints but no manifest is refused, never a silent restart from step 0.
TEST(Failure, AMissingManifestIsRefusedAndTheCheckpointsKept) {
  const std::string dir = fresh_dir("no-manifest");
  run_paused(with(small_job(dir, 1), {"--stop-at", "40", "--checkpoint-every", "20"}), dir);
  fs::remove(dir + "/checkpoints/manifest.json");
  const auto before = snapshot_files(dir + "/checkpoints");
  const auto result = run_cli(with(small_job(dir, 1), {"--resume"}), dir + "-resumed");
  EXPECT_EQ(result.exit_code, kExitBadInput) << result.err;
  EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
  EXPECT_NE(result.err.find("manifest.json: missing, while the directory holds 2 checkpoints "
                            "(newest step-00000040.pt)"),
            std::string::npos)
      << result.err;
  EXPECT_EQ(snapshot_files(dir + "/checkpoints"), before);
}

// A worker that cannot reach its coordinator honours a preemption notice at once (it used to
// keep trying for 30 s).
TEST(Failure, AWorkerThatCannotReachItsCoordinatorLeavesOnSigterm) {
  const std::string dir = fresh_dir("unreachable");
  CliProcess worker({"worker", "--coordinator", "127.0.0.1:1", "--token", "t"}, dir + ".log");
  // Once it handles SIGTERM (its handler is installed before it first tries to connect), and has
  // said what it waits for.
  ASSERT_TRUE(wait_until([&] { return catches_signal(worker.pid(), SIGTERM); }, 30));
  ASSERT_TRUE(wait_until(
      [&] {
        return slurp(dir + ".log.err")
                   .find(
                       "transient worker: nothing answers at 127.0.0.1:1 yet; trying for 30 s "
                       "in all\n") != std::string::npos;
      },
      20))
      << slurp(dir + ".log.err");
  ::kill(worker.pid(), SIGTERM);
  ASSERT_TRUE(wait_until([&] { return worker.exited(); }, 10))
      << "the worker ignored SIGTERM while connecting";
  const auto result = worker.wait();
  EXPECT_EQ(result.exit_code, kExitFinished) << result.err;
  EXPECT_NE(result.err.find("preempted before it joined the job"), std::string::npos) << result.err;
}

// A coordinator's paused job continued by `transient train --resume` keeps its front door: its
// workers, started apart, re-join at the journal's port (it listened on a new one, and they found
// nothing there). Its dashboard, off, stays off, and each run's summary gives the threads its
// workers trained with (review).
TEST(Failure, ACoordinatorsJobResumedByTrainKeepsItsPortAndItsDashboardOff) {
  const std::string dir = fresh_dir("coordinator-resumed-by-train");
  CliProcess coordinator(coordinator_job(dir, 300, 1, {"--stop-at", "20", "--dashboard", "off"}),
                         dir + "-1");
  const std::string door = front_door(dir);
  CliProcess worker(
      {"worker", "--coordinator", door, "--token-file", dir + "/token", "--threads", "2"},
      dir + "-a");
  ASSERT_EQ(coordinator.wait().exit_code, kExitPaused);
  EXPECT_EQ(worker.wait().exit_code, kExitFinished);
  // The summary's threads are those its worker trained with (the coordinator's own were
  // recorded, its host's cores where it was given none).
  EXPECT_EQ(summary_of(dir).at("threads_per_worker"), 2);
  const auto resumed =
      run_cli({"train", "--resume", "--job-dir", dir, "--workers", "1", "--stop-at", "25"},
              dir + "-resumed");
  EXPECT_EQ(resumed.exit_code, kExitPaused) << resumed.err;
  EXPECT_EQ(front_door(dir), door);
  EXPECT_EQ(resumed.err.find("dashboard on"), std::string::npos) << resumed.err;
  EXPECT_EQ(summary_of(dir).at("threads_per_worker"), 1);  // the job's, as its workers ran
}

// The summary's threads are the members': a worker that said its threads and left before a
// generation took it trained nothing (the summary said null, as though the members differed).
TEST(Failure, AWorkerThatLeftBeforeTrainingIsNotInTheSummarysThreads) {
  const std::string dir = fresh_dir("threads-of-members");
  CliProcess coordinator(coordinator_job(dir, 300, 2, {"--stop-at", "20", "--dashboard", "off"}),
                         dir + "-1");
  const std::string door = front_door(dir);
  auto worker = [&](const std::string& name, const std::string& threads) {
    return std::make_unique<CliProcess>(
        std::vector<std::string>{"worker", "--coordinator", door, "--token-file", dir + "/token",
                                 "--threads", threads},
        dir + "-" + name);
  };
  auto early = worker("early", "3");
  ASSERT_TRUE(
      wait_until([&] { return !events_named(events_so_far(dir), "worker_ready").empty(); }));
  ::kill(early->pid(), SIGTERM);
  EXPECT_EQ(early->wait().exit_code, kExitFinished);
  auto a = worker("a", "2");
  auto b = worker("b", "2");
  ASSERT_EQ(coordinator.wait().exit_code, kExitPaused);
  EXPECT_EQ(a->wait().exit_code, kExitFinished);
  EXPECT_EQ(b->wait().exit_code, kExitFinished);
  EXPECT_EQ(summary_of(dir).at("threads_per_worker"), 2);
}

// A standalone coordinator's job that diverged goes on as train's does, by another coordinator
// with --resume and a lower --lr, its workers joining again: the next coordinator refused it
// ("the job has ended; there is nothing to take back"), and any --lr with it.
TEST(Failure, ADivergedStandaloneCoordinatorJobGoesOnWithResumeAtALowerRate) {
  const std::string dir = fresh_dir("coordinator-diverged");
  auto args = small_job(dir, 1, 60);
  args[0] = "coordinator";
  args.erase(args.begin() + 3, args.begin() + 5);  // --workers 1
  args = set_flag(with(args, {"--min-workers", "1"}), "--lr", "1000");
  CliProcess coordinator(args, dir + "-1");
  const std::vector<std::string> worker{
      "worker", "--coordinator", front_door(dir), "--token-file", dir + "/token", "--threads",
      "1",      "--quiet"};
  CliProcess first(worker, dir + "-a");
  const auto diverged = coordinator.wait();
  ASSERT_EQ(diverged.exit_code, kExitDiverged) << diverged.err;
  first.wait();
  const auto refused = run_cli({"coordinator", "--job-dir", dir}, dir + "-plain");
  EXPECT_EQ(refused.exit_code, kExitBadInput) << refused.err;
  EXPECT_NE(refused.err.find("the job has ended (see summary.json); there is nothing to take "
                             "back; one that failed or diverged is continued with --resume"),
            std::string::npos)
      << refused.err;

  CliProcess again(
      {"coordinator", "--job-dir", dir, "--resume", "--lr", "0.05", "--min-workers", "1"},
      dir + "-2");
  ASSERT_TRUE(wait_for_journal_of(dir, again.pid()));
  CliProcess second({"worker", "--coordinator", front_door(dir), "--token-file", dir + "/token",
                     "--threads", "1", "--quiet"},
                    dir + "-b");
  const auto done = again.wait();
  ASSERT_EQ(done.exit_code, kExitFinished) << done.err;
  EXPECT_EQ(second.wait().exit_code, kExitFinished);
  const auto summary = summary_of(dir);
  EXPECT_TRUE(summary.at("finished").get<bool>());
  EXPECT_EQ(summary.at("steps"), 60);
  EXPECT_DOUBLE_EQ(summary.at("lr_scale").get<double>(), 0.05 / 1000);
  ASSERT_NE(last_event(read_events(dir), "lr_lowered"), nullptr);
}

}  // namespace
}  // namespace transient::train
