// Checkpoints: the whole training state at a step boundary, in one file that Python's torch.load
// opens (torch::pickle_save of a dict), plus a manifest that lists the kept checkpoints with
// their size and CRC-32.
//
// A checkpoint is written under a temporary name, fsync'ed, renamed into place and the directory
// fsync'ed (core's write_file_atomically); only then is the manifest rewritten the same way, so
// a crash at any instant leaves the previous manifest and every checkpoint it lists intact. The
// checksum lives in the manifest, not in the .pt file, so that the file stays a plain torch.load
// archive. Loading verifies size and checksum and falls back to the previous checkpoint.
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
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "transient/train/checkpoint_record.h"

namespace transient::train {

using NamedTensors = std::vector<std::pair<std::string, torch::Tensor>>;

// fp16 training's loss scale (worker.cc), as PyTorch's GradScaler keeps it: it starts at 2^16,
// halves at every step whose summed gradients overflow (that step changes no parameter), and
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
  // fp16 training's loss scale (--precision fp16, worker.cc) and the steps since it last grew or
  // fell; 0 in other jobs' checkpoints, which hold no "grad_scaler" entry.
  double loss_scale = 0;
  std::int64_t loss_scale_steps = 0;
};

// The bytes of a checkpoint file.
std::vector<char> serialize_checkpoint(const CheckpointState& state);
// Parses bytes written by serialize_checkpoint; throws InputError naming `path` if they are not.
CheckpointState deserialize_checkpoint(const std::vector<char>& bytes, const std::string& path);

// The file name of the checkpoint of `step`: step-NNNNNNNN.pt.
std::string checkpoint_name(std::int64_t step);

// A directory of checkpoints and its manifest. Not thread-safe: one writer (the checkpoint
// writer thread) and readers that do not run at the same time as it (the coordinator before
// the workers start).
class CheckpointDirectory {
 public:
  CheckpointDirectory(std::string dir, int keep);

  const std::string& dir() const { return dir_; }
  std::string manifest_path() const;
  std::string path_of(const CheckpointRecord& record) const;

  // Writes `state` as a new checkpoint, then the manifest listing it and the `keep` - 1 previous
  // ones, then deletes the files no longer listed. Throws InputError if a write fails (the
  // previous manifest stays valid).
  CheckpointRecord write(const CheckpointState& state);

  // A temporary name in this directory for the checkpoint of `step` that `sender` is sending
  // (remove_leftovers() removes it if it is never adopted).
  std::string incoming_path(std::int64_t step, const std::string& sender) const;
  // Takes the fsync'ed file `temporary` (from incoming_path) as the checkpoint of `record`:
  // renames it into place and lists it in the manifest as write() does. Throws InputError if a
  // step fails (the previous manifest stays valid).
  void adopt(const std::string& temporary, const CheckpointRecord& record);

  // The manifest's entries, oldest first; empty if there is no manifest. Throws InputError naming
  // the manifest if it exists but cannot be parsed.
  std::vector<CheckpointRecord> list() const;

  // Reads the file of `record` and checks its size and checksum; throws InputError naming the
  // file and what is wrong.
  std::vector<char> read_verified(const CheckpointRecord& record) const;

  // Takes the checkpoints of steps >= `step` out of the manifest and renames their files to
  // `prefix` + name (kept for a look, never resumed from); returns them. Throws InputError if the
  // manifest cannot be read or written (then nothing changed).
  std::vector<CheckpointRecord> set_aside_from(std::int64_t step, const std::string& prefix);

  // Removes temporary files left by a writer that was killed mid-write.
  void remove_leftovers() const;

 private:
  void write_manifest(const std::vector<CheckpointRecord>& records) const;
  void add_to_manifest(const CheckpointRecord& record) const;

  std::string dir_;
  int keep_;
};

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

  // Hands `state` (already cloned: the writer owns it) to the writer thread. If the previous
  // checkpoint is still being written, waits for it first, so that at most two states exist.
  // Rethrows an error of a previous write.
  void submit(CheckpointState state);
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
  std::optional<CheckpointState> pending_;  // GUARDED_BY(mutex_)
  bool busy_ = false;                       // GUARDED_BY(mutex_): a write is in progress
  bool stopping_ = false;                   // GUARDED_BY(mutex_)
  std::exception_ptr error_;                // GUARDED_BY(mutex_)
  std::thread thread_;                      // last: starts after the fields above exist
};

}  // namespace transient::train
