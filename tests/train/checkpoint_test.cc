#include "transient/train/checkpoint.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>

#include "train/cli_process.h"
#include "transient/core/atomic_file.h"
#include "transient/core/error.h"

namespace transient::train {
namespace {

namespace fs = std::filesystem;
using testing::fresh_dir;

CheckpointState sample_state(std::int64_t step) {
  torch::manual_seed(static_cast<std::uint64_t>(step));
  CheckpointState state;
  state.model = "mlp";
  state.global_batch = 64;
  state.seed = 3;
  state.step = step;
  state.epoch = 1;
  state.cursor = 640;
  state.model_state = {{"fc1.weight", torch::randn({16, 8})},
                       {"fc1.bias", torch::randn({16})},
                       {"bn.running_mean", torch::randn({4})}};
  state.optimizer = "adamw";
  state.optimizer_state = {
      {"step", {{"fc1.weight", torch::tensor(7, torch::kInt64)}}},
      {"exp_avg", {{"fc1.weight", torch::randn({16, 8})}}},
  };
  state.rng_state = at::detail::getDefaultCPUGenerator().get_state();
  return state;
}

TEST(Checkpoint, RoundTripsEveryField) {
  const auto state = sample_state(10);
  const auto back = deserialize_checkpoint(serialize_checkpoint(state), "memory");
  EXPECT_EQ(back.model, "mlp");
  EXPECT_EQ(back.global_batch, 64);
  EXPECT_EQ(back.seed, 3u);
  EXPECT_EQ(back.step, 10);
  EXPECT_EQ(back.epoch, 1);
  EXPECT_EQ(back.cursor, 640);
  ASSERT_EQ(back.model_state.size(), 3u);
  EXPECT_EQ(back.model_state[0].first, "fc1.weight");
  EXPECT_TRUE(torch::equal(back.model_state[0].second, state.model_state[0].second));
  EXPECT_EQ(back.model_state[2].first, "bn.running_mean");
  EXPECT_TRUE(torch::equal(back.model_state[2].second, state.model_state[2].second));
  EXPECT_EQ(back.optimizer, "adamw");
  ASSERT_EQ(back.optimizer_state.size(), 2u);
  EXPECT_EQ(back.optimizer_state[0].first, "step");
  EXPECT_EQ(back.optimizer_state[0].second[0].second.item<std::int64_t>(), 7);
  EXPECT_EQ(back.optimizer_state[1].first, "exp_avg");
  EXPECT_TRUE(torch::equal(back.optimizer_state[1].second[0].second,
                           state.optimizer_state[1].second[0].second));
  EXPECT_TRUE(torch::equal(back.rng_state, state.rng_state));
  EXPECT_EQ(back.loss_scale, 0) << "no grad_scaler entry in a job without fp16";
  auto scaled = state;  // fp16 training's loss scale, as GradScaler's state
  scaled.loss_scale = 1024;
  scaled.loss_scale_steps = 17;
  const auto scaled_back = deserialize_checkpoint(serialize_checkpoint(scaled), "memory");
  EXPECT_EQ(scaled_back.loss_scale, 1024);
  EXPECT_EQ(scaled_back.loss_scale_steps, 17);
}

TEST(Checkpoint, KeepsTheLastKAndListsThemInTheManifest) {
  const std::string dir = fresh_dir("keep");
  CheckpointDirectory directory(dir, 2);
  for (std::int64_t step : {10, 20, 30}) write_checkpoint(directory, sample_state(step));
  const auto records = directory.list();
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].step, 20);
  EXPECT_EQ(records[1].step, 30);
  EXPECT_FALSE(fs::exists(fs::path(dir) / "step-00000010.pt"));
  for (const auto& record : records) {
    const auto state =
        deserialize_checkpoint(directory.read_verified(record), directory.path_of(record));
    EXPECT_EQ(state.step, record.step);
  }
}

TEST(Checkpoint, AFlippedByteIsDetected) {
  const std::string dir = fresh_dir("flip");
  CheckpointDirectory directory(dir, 3);
  const auto record = write_checkpoint(directory, sample_state(5));
  const std::string path = directory.path_of(record);
  std::string bytes = read_file(path);
  bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 0x01);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  try {
    directory.read_verified(directory.list().back());
    FAIL() << "a corrupt checkpoint was accepted";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find(path), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("corrupt"), std::string::npos) << error.what();
  }
}

TEST(Checkpoint, ATruncatedFileIsDetected) {
  const std::string dir = fresh_dir("truncate");
  CheckpointDirectory directory(dir, 3);
  const auto record = write_checkpoint(directory, sample_state(5));
  fs::resize_file(directory.path_of(record), static_cast<std::uintmax_t>(record.bytes / 2));
  EXPECT_THROW(directory.read_verified(directory.list().back()), InputError);
}

TEST(Checkpoint, LeftoversOfAKilledWriterAreRemovedAndNeverListed) {
  const std::string dir = fresh_dir("leftovers");
  CheckpointDirectory directory(dir, 3);
  write_checkpoint(directory, sample_state(5));
  const auto leftover = fs::path(dir) / "step-00000010.pt.tmp.123.456";
  std::ofstream(leftover) << "half a checkpoint";
  EXPECT_EQ(directory.list().size(), 1u);
  directory.remove_leftovers();
  EXPECT_FALSE(fs::exists(leftover));
  EXPECT_TRUE(fs::exists(fs::path(dir) / "step-00000005.pt"));
}

TEST(Checkpoint, BackgroundWriterWritesEverythingSubmittedBeforeItIsDestroyed) {
  const std::string dir = fresh_dir("writer");
  CheckpointDirectory directory(dir, 10);
  std::vector<std::int64_t> written;
  {
    CheckpointWriter writer(
        [&](const CheckpointState& state) { return write_checkpoint(directory, state); },
        [&](const CheckpointRecord& r) { written.push_back(r.step); });
    for (std::int64_t step = 1; step <= 5; ++step) {
      writer.submit(sample_state(step));
      writer.wait();
    }
    writer.submit(sample_state(6));
  }
  EXPECT_EQ(written, (std::vector<std::int64_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(directory.list().size(), 6u);
}

// submit() never waits for the write in progress: a state still waiting for the writer is
// superseded by the newer one (its step returned, to be recorded), and the newest is written.
// It waited, and a rank 0 whose checkpoints went slowly (a coordinator cut off) stood still,
// its peers' collectives timing out.
TEST(Checkpoint, BackgroundWriterNeverHoldsTheTrainingThreadAndWritesTheNewestWaiting) {
  const std::string dir = fresh_dir("writer-slow");
  CheckpointDirectory directory(dir, 10);
  std::vector<std::int64_t> written;
  std::mutex mutex;
  std::condition_variable changed;
  bool writing = false;
  bool release = false;
  {
    CheckpointWriter writer(
        [&](const CheckpointState& state) {
          std::unique_lock<std::mutex> lock(mutex);
          writing = true;
          changed.notify_all();
          changed.wait(lock, [&] { return release; });  // a store that does not answer
          return write_checkpoint(directory, state);
        },
        [&](const CheckpointRecord& r) { written.push_back(r.step); });
    EXPECT_EQ(writer.submit(sample_state(1)), std::nullopt);
    {
      std::unique_lock<std::mutex> lock(mutex);
      changed.wait(lock, [&] { return writing; });
    }
    EXPECT_EQ(writer.submit(sample_state(2)), std::nullopt);
    EXPECT_EQ(writer.submit(sample_state(3)), std::optional<std::int64_t>(2));
    EXPECT_EQ(writer.submit(sample_state(4)), std::optional<std::int64_t>(3));
    {
      std::lock_guard<std::mutex> lock(mutex);
      release = true;
    }
    changed.notify_all();
  }
  EXPECT_EQ(written, (std::vector<std::int64_t>{1, 4}));
}

// While nothing is being written, a state the writer thread has not yet woken up to take is
// written, not superseded by the next one (on a loaded machine a job checkpointing every 5 steps
// lost step 5's so, to step 10's taken 10 ms later, and had no earlier one to resume from).
TEST(Checkpoint, BackgroundWriterWritesEveryStateSubmittedWhileNoneIsBeingWritten) {
  const std::string dir = fresh_dir("writer-idle");
  CheckpointDirectory directory(dir, 200);
  for (std::int64_t step = 1; step < 200; step += 2) {
    std::vector<std::int64_t> written;
    {
      CheckpointWriter writer(
          [&](const CheckpointState& state) { return write_checkpoint(directory, state); },
          [&](const CheckpointRecord& r) { written.push_back(r.step); });
      EXPECT_EQ(writer.submit(sample_state(step)), std::nullopt);
      EXPECT_EQ(writer.submit(sample_state(step + 1)), std::nullopt) << "step " << step;
    }
    ASSERT_EQ(written, (std::vector<std::int64_t>{step, step + 1}));
  }
}

TEST(Checkpoint, AnUnparsableManifestIsAnInputErrorNamingIt) {
  const std::string dir = fresh_dir("manifest");
  CheckpointDirectory directory(dir, 3);
  std::ofstream(directory.manifest_path()) << "{ not json";
  try {
    directory.list();
    FAIL() << "a broken manifest was accepted";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("manifest.json"), std::string::npos);
  }
  // The trainer reads it as `transient report` does (records/manifest_reader.h), strictly: one
  // entry it cannot read (a step no int64 holds) and the manifest vouches for nothing.
  std::ofstream(directory.manifest_path())
      << R"({"checkpoints":[{"file":"step-00000001.pt","step":1,"bytes":1,"crc32":1},)"
      << R"({"file":"step-00000002.pt","step":1e300,"bytes":1,"crc32":1}]})";
  try {
    directory.list();
    FAIL() << "a manifest with an unreadable entry was accepted";
  } catch (const InputError& error) {
    EXPECT_EQ(
        std::string(error.what())
            .rfind(directory.manifest_path() + ": checkpoint 2: [json.exception.type_error.302] "
                                               "\"step\" must be a whole number from 0 to ",
                   0),
        0u)
        << error.what();
  }
}

}  // namespace
}  // namespace transient::train
