// What a member of a generation holds, what all its members hold alike, and what a checkpoint
// keeps: the model (its parameters and buffers, by name), the optimiser's state, fp16 training's
// loss scale and the CPU generator's state; and the ways it changes hands: the job's seeded start,
// a checkpoint read in, a snapshot out, the whole state sent from one member to the others.
//
// Owned by the worker's training thread; not thread-safe. Errors: InputError for a checkpoint
// that is another job's or does not fit the model (naming its file), before anything is changed;
// a Broadcast's CollectiveFailure passes through, and a state half-received is not taken.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "transient/train/checkpoint.h"
#include "transient/train/models.h"
#include "transient/train/optimizer.h"
#include "transient/train/trainer.h"
#include "transient/train/training_device.h"

namespace transient::train {

class TrainingState {
 public:
  // One tensor broadcast in place from the member the caller chose: when it returns, every
  // member's tensor holds the source's. Throws CollectiveFailure when the group fails.
  using Broadcast = std::function<void(torch::Tensor&)>;

  // The job's model for images of `shape`, built on the CPU from the default generator (which
  // the caller seeds with the job's seed: the same model on every member), moved to `device` and
  // made channels-last where the job's --memory-format says so; zero optimiser state.
  TrainingState(const TrainOptions& options, const ImageShape& shape, torch::Device device);

  Model& model() { return *model_; }
  const std::vector<torch::Tensor>& parameters() const { return parameters_; }
  Optimizer& optimizer() { return *optimizer_; }
  double loss_scale() const { return loss_scale_; }  // fp16 training's (checkpoint.h)

  // The job's seeded initial state again, as the constructor made it: the model built anew from
  // the seed, zero optimiser state, the loss scale afresh, and the generator where building the
  // model left it.
  void reset();

  // Takes `state`, read from the file `path`. Throws InputError naming `path`, and changes
  // nothing, when it is another job's (model, global batch, optimiser) or does not fit the model.
  void load(const CheckpointState& state, const std::string& path);

  // A copy of the state after `step` of a job of `train_samples` samples, in host memory (from a
  // GPU: into pinned memory, waited for), which training can go on changing.
  CheckpointState snapshot(std::int64_t step, std::int64_t train_samples);

  // fp16: divides the summed gradient by the loss scale and moves the scale (checkpoint.h's
  // rule). False when the gradient overflowed (an infinity or NaN in it): the step is skipped.
  bool unscale_gradients();

  // The sum of each tensor of the parameters and the optimiser's state, in double precision, on
  // the CPU: equal on members that hold the same state, as they must (each applies the same
  // all-reduced gradient to the same state).
  torch::Tensor fingerprint() const;

  // The whole state (parameters, optimiser state, buffers, generator, fp16's loss scale) sent by
  // `broadcast`'s source; taken by this member if `receive`, and only once every broadcast has
  // succeeded. Over Gloo from host memory, also from a GPU.
  void broadcast(const Broadcast& broadcast, bool receive);

  // The model's buffers (batch-norm statistics, which each member gathers on its own shards)
  // become those of `broadcast`'s source. Received into copies: a broadcast given up on the
  // coordinator's word may still write into its tensor later.
  void broadcast_buffers(const Broadcast& broadcast);

  // Copies of the model's buffers, and the buffers set back to such copies: a member computing a
  // lost member's share of a resumed step must not count that step in its batch-norm statistics
  // a second time (num_batches_tracked went one past the steps at each such recovery).
  std::vector<torch::Tensor> copy_buffers() const;
  void restore_buffers(const std::vector<torch::Tensor>& copies);

 private:
  TrainOptions options_;
  ImageShape shape_;
  torch::Device device_;
  std::shared_ptr<Model> model_;
  std::vector<std::string> parameter_names_;
  // Further names of a parameter (a layer used twice): name, index in parameters_.
  std::vector<std::pair<std::string, std::size_t>> aliases_;
  std::vector<torch::Tensor> parameters_;
  std::unique_ptr<Optimizer> optimizer_;
  // fp16 training's loss scale and the steps since it last moved (checkpoint.h).
  double loss_scale_ = kLossScaleInitial;
  std::int64_t loss_scale_steps_ = 0;
  SnapshotArena snapshot_arena_;  // on a GPU: the checkpoints' host copies
};

}  // namespace transient::train
