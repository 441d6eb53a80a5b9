// Failure paths (failure_test.cc) whose test reads or alters what a job's checkpoints hold, with
// libtorch: a diverging run's last good checkpoint, a checkpoint of NaN parameters, a rollback's,
// one that does not fit the model, a paused standalone coordinator's. Real processes, real files.
#include <gtest/gtest.h>
#include <signal.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "train/cli_here.h"
#include "train/cli_process.h"
#include "train/job_checkpoints.h"
#include "train/job_records.h"
#include "transient/train/checkpoint.h"
#include "transient/train/trainer.h"

namespace transient::train {
namespace {

namespace fs = std::filesystem;
using namespace testing;  // the job record readers of job_records.h

// The job's newest checkpoint, written again in its place with every parameter changed by
// `change` (and the manifest's checksum with it, so that resume takes it).
void write_altered_checkpoint(const std::string& dir,
                              const std::function<torch::Tensor(const torch::Tensor&)>& change) {
  CheckpointState state = latest_checkpoint(dir);
  for (auto& [name, tensor] : state.model_state) {
    if (tensor.is_floating_point()) tensor = change(tensor);
  }
  CheckpointDirectory directory(dir + "/checkpoints", 3);
  write_checkpoint(directory, state);
}

// A learning rate far too large: the loss becomes NaN or infinite. The job stops at that step
// with exit code 4, names the newest checkpoint before it, and prints no result.
TEST(Failure, ADivergingRunStopsWithTheStepAndTheLastGoodCheckpoint) {
  const std::string dir = fresh_dir("diverging");
  const auto result =
      run_cli(set_flag(with(small_job(dir, 2, 300), {"--checkpoint-every", "1"}), "--lr", "1000"),
              dir + ".log");
  EXPECT_EQ(result.exit_code, kExitDiverged) << result.err;
  EXPECT_NE(result.err.find("error: training diverged: the training loss was "), std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("the newest checkpoint before it is "), std::string::npos)
      << result.err;
  EXPECT_EQ(result.out.find("test accuracy"), std::string::npos) << result.out;
  const auto summary = summary_of(dir);
  EXPECT_FALSE(summary.at("finished").get<bool>());
  const auto step = summary.at("diverged_at_step").get<std::int64_t>();
  EXPECT_GT(step, 0);
  EXPECT_LT(step, 300);
  // Every checkpoint kept was written before the divergence and holds finite parameters.
  CheckpointDirectory directory(dir + "/checkpoints", 3);
  for (const auto& record : directory.list()) {
    EXPECT_LT(record.step, step);
    const auto state =
        deserialize_checkpoint(directory.read_verified(record), directory.path_of(record));
    for (const auto& [name, tensor] : state.model_state) {
      EXPECT_TRUE(torch::isfinite(tensor).all().item<bool>()) << name << " at " << record.file;
    }
  }
  EXPECT_EQ(last_event(read_events(dir), "diverged").at("step"), step);
}

// A checkpoint of NaN parameters is no "finished" run: resuming from it diverges at once.
TEST(Failure, ResumingFromNanParametersIsADivergenceNotASuccess) {
  const std::string dir = fresh_dir("nan-checkpoint");
  run_paused(with(small_job(dir, 1, 300), {"--stop-at", "100"}), dir);
  write_altered_checkpoint(
      dir, [](const torch::Tensor& t) { return torch::full_like(t, std::nan("")); });
  const auto result = run_cli(with(small_job(dir, 1, 300), {"--resume"}), dir + ".resume");
  EXPECT_EQ(result.exit_code, kExitDiverged) << result.err;
  EXPECT_EQ(summary_of(dir).at("diverged_at_step"), 101);
  EXPECT_EQ(result.out.find("test accuracy"), std::string::npos) << result.out;
}

// --on-divergence rollback after a fault: a checkpoint whose parameters went NaN (as silent
// corruption would leave them) diverges at the next step; the job sets that checkpoint aside,
// goes on from the one before it with the learning rate halved, and finishes.
TEST(Failure, ARollbackGoesOnFromTheCheckpointBeforeTheDivergenceAndFinishes) {
  const std::string dir = fresh_dir("rollback");
  const auto job = with(small_job(dir, 1, 300), {"--checkpoint-every", "25"});
  run_paused(with(job, {"--stop-at", "100"}), dir);
  write_altered_checkpoint(
      dir, [](const torch::Tensor& t) { return torch::full_like(t, std::nan("")); });
  const auto result = run_cli(with(job, {"--resume", "--on-divergence", "rollback"}), dir + ".r");
  ASSERT_EQ(result.exit_code, kExitFinished) << result.err;
  EXPECT_NE(result.err.find("rolling back to the newest checkpoint before step 100"),
            std::string::npos)
      << result.err;
  // A rollback loses no worker ("recovered from the loss of  (diverged)" named nobody).
  EXPECT_NE(result.err.find("recovered (diverged) in "), std::string::npos) << result.err;
  EXPECT_EQ(result.err.find("loss of  ("), std::string::npos) << result.err;
  const auto summary = summary_of(dir);
  EXPECT_TRUE(summary.at("finished").get<bool>());
  EXPECT_EQ(summary.at("rollbacks"), 1);
  EXPECT_EQ(summary.at("lr_scale"), 0.5);
  EXPECT_GT(summary.at("test_accuracy").get<double>(), 0.6);
  const auto diverged = last_event(read_events(dir), "diverged");
  EXPECT_EQ(diverged.at("step"), 101);
  EXPECT_EQ(diverged.at("action"), "rollback");
  EXPECT_EQ(diverged.at("set_aside"), nlohmann::json::array({"step-00000100.pt"}));
  // The NaN checkpoint is kept aside for a look; the manifest lists only finite states.
  EXPECT_TRUE(fs::exists(dir + "/checkpoints/diverged-step-00000100.pt"));
  CheckpointDirectory directory(dir + "/checkpoints", 3);
  for (const auto& record : directory.list()) {
    const auto state =
        deserialize_checkpoint(directory.read_verified(record), directory.path_of(record));
    for (const auto& [name, tensor] : state.model_state) {
      EXPECT_TRUE(torch::isfinite(tensor).all().item<bool>()) << name << " at " << record.file;
    }
  }
  // Steps 76..100 were trained again after the rollback: every step has its rows once.
  expect_every_sample_once(dir, 300, 2000, 100);
}

// A checkpoint that does not fit the model fails in every member alike: the job stops with the
// cause instead of waiting for a worker that could load it.
TEST(Failure, ACheckpointThatDoesNotFitStopsTheJobWithItsCause) {
  const std::string dir = fresh_dir("misfit");
  run_paused(with(small_job(dir, 2, 300), {"--stop-at", "50"}), dir);
  write_altered_checkpoint(dir,
                           [](const torch::Tensor& t) { return torch::zeros({t.numel() + 1}); });
  const auto result = run_cli(with(small_job(dir, 2, 300), {"--resume"}), dir + ".resume");
  EXPECT_EQ(result.exit_code, kExitFailed) << result.err;
  EXPECT_NE(result.err.find("error: the job failed after step"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("does not fit the model mlp"), std::string::npos) << result.err;
  EXPECT_FALSE(summary_of(dir).at("finished").get<bool>());
  // The checkpoint is kept as it was (still listed, at its step).
  const auto records = CheckpointDirectory(dir + "/checkpoints", 3).list();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].step, 50);
}

// A standalone coordinator paused by SIGTERM exits as paused, and `transient coordinator
// --job-dir` continues that job from its newest checkpoint with its own settings, to the
// --stop-at given now (none: the end), not the paused one's (it paused at 299 here).
TEST(Failure, APausedStandaloneCoordinatorIsContinuedByTheNextOne) {
  const std::string dir = fresh_dir("coordinator-paused");
  auto args = small_job(dir, 1, 100);
  args[0] = "coordinator";
  args.erase(args.begin() + 3, args.begin() + 5);  // --workers 1
  args = with(args, {"--min-workers", "1", "--checkpoint-every", "20", "--stop-at", "99"});
  CliProcess coordinator(args, dir + "-1");
  const std::vector<std::string> worker{
      "worker", "--coordinator", front_door(dir), "--token-file", dir + "/token", "--threads", "1"};
  // The first as a script's background command is started: SIGINT ignored. It still says what it
  // joins and how the job ended for it (only --quiet silences that).
  CliProcess first(worker, dir + "-a", {"/bin/sh", "-c", "trap '' INT; exec \"$@\"", "sh"});
  ASSERT_TRUE(wait_for_training(dir));
  {
    HeldWorkers held(dir);  // the pause comes long before the job's end on any machine
    ASSERT_EQ(held.pids().size(), 1u);
    ::kill(coordinator.pid(), SIGTERM);
  }
  const auto paused = coordinator.wait();
  EXPECT_EQ(paused.exit_code, kExitPaused) << paused.err;
  // What continues it is another coordinator (`transient train --resume` would start workers of
  // its own on this host).
  EXPECT_NE(paused.out.find("; continue with: transient coordinator --job-dir " + dir + "\n"),
            std::string::npos)
      << paused.out;
  const auto first_done = first.wait();
  EXPECT_NE(first_done.err.find(", rank 0 of 1, from step 0\n"), std::string::npos)
      << first_done.err;
  EXPECT_NE(first_done.err.find(": the coordinator ended the job after step "), std::string::npos)
      << first_done.err;
  const auto saved = latest_checkpoint(dir).step;
  EXPECT_LT(saved, 99);
  // It goes on as its journal says: a flag of its settings or launch would change nothing (it was
  // ignored) and is refused.
  const auto refused = run_here({"coordinator", "--job-dir", dir, "--lr", "0.9"});
  EXPECT_EQ(refused.exit_code, kExitBadInput) << refused.err;
  EXPECT_NE(refused.err.find("--lr: a coordinator continuing a paused job runs it as its journal "
                             "says; drop --lr"),
            std::string::npos)
      << refused.err;

  CliProcess again({"coordinator", "--job-dir", dir, "--min-workers", "1"}, dir + "-2");
  // Its journal replaces the paused one's (and names its own front door) before it listens.
  ASSERT_TRUE(wait_for_journal_of(dir, again.pid()));
  CliProcess second({"worker", "--coordinator", front_door(dir), "--token-file", dir + "/token"},
                    dir + "-b");
  const auto done = again.wait();
  ASSERT_EQ(done.exit_code, kExitFinished) << done.err;
  const auto second_done = second.wait();
  EXPECT_EQ(second_done.exit_code, kExitFinished);
  // A worker started by hand says when it joins a generation and when the job ends (those of
  // `transient train` leave that to the launcher's lines).
  EXPECT_NE(second_done.err.find(", rank 0 of 1, from step " + std::to_string(saved) + "\n"),
            std::string::npos)
      << second_done.err;
  EXPECT_NE(second_done.err.find(": the job has finished (step 100)\n"), std::string::npos)
      << second_done.err;
  EXPECT_EQ(summary_of(dir).at("steps"), 100);
  EXPECT_EQ(last_event(read_events(dir), "generation").at("start_step"), saved);
  expect_every_sample_once(dir, 100, 2000, 100);
}

}  // namespace
}  // namespace transient::train
