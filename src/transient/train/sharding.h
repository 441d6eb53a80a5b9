// Which samples each worker trains on at each step: a pure function of the step, the data set's
// size, the global batch, the seed and the number of workers, so that it can be tested without
// processes and so that every member of a generation computes the same answer on its own.
//
// Every epoch visits a seeded permutation of the training set. Step s of the job covers the
// global batch starting at the epoch's cursor; the last step of an epoch takes what is left, or
// with `drop_last` (--drop-last) an epoch is its full batches and what is left is not trained on
// (other samples each epoch, as the permutation differs). The
// batch is split among the workers in rank order, the first `batch % workers` ranks taking one
// sample more (100 over 3 = 34, 33, 33). Hence every sample is consumed exactly once per epoch
// whatever the number of workers, and changing the number of workers between steps (issue 3)
// changes neither which samples a step sees nor the averaged gradient.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "transient/train/option_names.h"

namespace transient::train {

// Where step `step` (0-based, counted from the start of the job) sits in the data.
struct StepPosition {
  std::int64_t epoch = 0;          // 0-based epoch
  std::int64_t step_in_epoch = 0;  // 0-based step inside the epoch
  std::int64_t cursor = 0;         // index into the epoch's permutation of the step's first sample
  std::int64_t batch = 0;          // samples in this step (the global batch, less at epoch end)
};

// A worker's part of a step: positions [begin, begin + count) of the epoch's permutation.
struct Shard {
  std::int64_t begin = 0;
  std::int64_t count = 0;
};

// Steps in one epoch: ceil(samples / global_batch), or with `drop_last` floor(samples /
// global_batch). REQUIRES: samples > 0, global_batch > 0; with drop_last, global_batch <= samples.
std::int64_t steps_per_epoch(std::int64_t samples, std::int64_t global_batch, bool drop_last);

// The position of step `step`. REQUIRES: step >= 0, and as steps_per_epoch.
StepPosition position_of_step(std::int64_t step, std::int64_t samples, std::int64_t global_batch,
                              bool drop_last);

// Samples in the steps before step `step` (0-based), that is in the first `step` steps of the
// job: full epochs of `samples` (with `drop_last`, of their full batches) and the steps of the
// epoch under way, counted without walking the steps. REQUIRES: step >= 0, and as
// steps_per_epoch.
std::int64_t samples_before_step(std::int64_t step, std::int64_t samples, std::int64_t global_batch,
                                 bool drop_last);

// Whether the step at `position` is its epoch's last.
bool ends_epoch(const StepPosition& position, std::int64_t samples, std::int64_t global_batch,
                bool drop_last);

// Rank `rank`'s shard of the step at `position`. REQUIRES: 0 <= rank < workers.
Shard shard_of(const StepPosition& position, int workers, int rank);

// The permutation of [0, samples) used in epoch `epoch` of a job seeded with `seed`: the same on
// every platform (core's Rng and our own Fisher-Yates).
std::vector<std::int64_t> epoch_permutation(std::int64_t samples, std::uint64_t seed,
                                            std::int64_t epoch);

// The learning rate at step `step` (0-based) of `total_steps`: linear warm-up from lr/10 to `lr`
// over `warmup_steps`, then `schedule` (a half cosine down to zero at `total_steps` by default).
double learning_rate_at(std::int64_t step, std::int64_t total_steps, std::int64_t warmup_steps,
                        double lr, LrSchedule schedule = LrSchedule::kCosine);

}  // namespace transient::train
