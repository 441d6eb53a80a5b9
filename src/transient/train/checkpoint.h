// Checkpoints: the whole training state at a step boundary, in one file that Python's torch.load
// opens (torch::pickle_save of a dict). The directory that keeps them, their manifest (size and
// CRC-32 of each) and its crash-safe writes are checkpoint_directory.h's, without libtorch.
// Loading verifies size and checksum and falls back to the previous checkpoint
// (checkpoint_choice.h).
//
// Layout of the dict (keys): format ("transient-checkpoint-v2"); model, the module's state dict
// {name: tensor} (parameters, then buffers such as batch-norm statistics, under the module's own
// names, so that Python's `net.load_state_dict(torch.load(path)["model"])` takes it); model_name
// (a built-in name or the TorchScript file); optimizer ("sgd" or "adamw") and optimizer_state
// {slot: {parameter name: tensor}} (optimizer.h's slots); global_batch, seed, step (steps
// completed), epoch and cursor (of the next step); rng_state (libtorch's CPU generator state,
// uint8 tensor); with fp16 training grad_scaler, as PyTorch's GradScaler.state_dict() has it
// (scale, growth_factor, backoff_factor, growth_interval, _growth_tracker). Version 1 files
// (parameters, buffers and momentum apart, the name under model) are still read.
#pragma once

#include <torch/torch.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "transient/train/checkpoint_directory.h"

namespace transient::train {

using NamedTensors = std::vector<std::pair<std::string, torch::Tensor>>;

// fp16 training's loss scale (training_state.h), as PyTorch's GradScaler keeps it: it starts at
// 2^16, halves at every step whose summed gradients overflow (that step changes no parameter), and
// doubles after 2000 steps in a row without.
inline constexpr double kLossScaleInitial = 65536;
inline constexpr double kLossScaleGrowth = 2;
inline constexpr double kLossScaleBackoff = 0.5;
inline constexpr std::int64_t kLossScaleInterval = 2000;

struct CheckpointState {
  std::string model;  // the model's name, or its TorchScript file
  std::int64_t global_batch = 0;
  std::uint64_t seed = 0;
  std::int64_t step = 0;     // steps completed
  std::int64_t epoch = 0;    // epoch of the next step
  std::int64_t cursor = 0;   // index into that epoch's permutation of the next step's first sample
  NamedTensors model_state;  // parameters, then buffers, under the module's names
  std::string optimizer = "sgd";
  std::vector<std::pair<std::string, NamedTensors>> optimizer_state;  // slot: {parameter: tensor}
  torch::Tensor rng_state;
  // fp16 training's loss scale (--precision fp16, training_state.h) and the steps since it last
  // grew or fell; 0 in other jobs' checkpoints, which hold no "grad_scaler" entry.
  double loss_scale = 0;
  std::int64_t loss_scale_steps = 0;
};

// The bytes of a checkpoint file.
std::vector<char> serialize_checkpoint(const CheckpointState& state);
// Parses bytes written by serialize_checkpoint; throws InputError naming `path` if they are not.
CheckpointState deserialize_checkpoint(const std::vector<char>& bytes, const std::string& path);

// Serialises `state` and writes it to `directory` as CheckpointDirectory::write does; the
// record's write_s counts both.
CheckpointRecord write_checkpoint(CheckpointDirectory& directory, const CheckpointState& state);

// The job and step a checkpoint's bytes belong to (choose_checkpoint's question); throws
// InputError naming `path` if they are not a checkpoint.
CheckpointIdentity checkpoint_identity(const std::vector<char>& bytes, const std::string& path);

// Writes checkpoints on a background thread so that training goes on while a checkpoint is
// serialised and stored. Owns the thread and joins it in its destructor (after writing what was
// submitted). submit() and wait() are called by the training thread only; `write` (a directory's
// write(), or a transfer to the coordinator's) and `on_written` run on the writer thread.
class CheckpointWriter {
 public:
  using Write = std::function<CheckpointRecord(const CheckpointState&)>;
  CheckpointWriter(Write write, std::function<void(const CheckpointRecord&)> on_written);
  ~CheckpointWriter();
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  // Hands `state` (already cloned: the writer owns it) to the writer thread, never waiting: a
  // state submitted before and still waiting while the one before it is being written is
  // superseded by this newer one, and its step returned; at most two states exist. One the
  // writer thread has not yet woken up to take is no such state (it was superseded, on a loaded
  // machine, by the next step's while nothing was being written). It waited
  // for the write in progress, and the training thread of a rank 0 whose checkpoints went
  // slowly (a coordinator cut off, a large model on a slow link) stood still meanwhile, its
  // peers' collectives timing out. Rethrows an error of a previous write.
  std::optional<std::int64_t> submit(CheckpointState state);
  // Returns when everything submitted is written; rethrows a write error.
  void wait();
  // Drops a state submitted but not yet being written; a write in progress completes.
  void abandon();

 private:
  void run();
  void rethrow_locked();

  Write write_;
  std::function<void(const CheckpointRecord&)> on_written_;
  std::mutex mutex_;
  std::condition_variable changed_;
  // Submitted, oldest first: at most two, or one while a write is in progress.
  std::deque<CheckpointState> waiting_;  // GUARDED_BY(mutex_)
  bool busy_ = false;                    // GUARDED_BY(mutex_): a write is in progress
  bool stopping_ = false;                // GUARDED_BY(mutex_)
  std::exception_ptr error_;             // GUARDED_BY(mutex_)
  std::thread thread_;                   // last: starts after the fields above exist
};

}  // namespace transient::train
