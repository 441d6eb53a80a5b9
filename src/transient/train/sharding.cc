#include "transient/train/sharding.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "transient/core/error.h"
#include "transient/core/random.h"
#include "transient/launch/batch_split.h"

namespace transient::train {

std::int64_t steps_per_epoch(std::int64_t samples, std::int64_t global_batch, bool drop_last) {
  TRANSIENT_CHECK_GT(samples, 0);
  TRANSIENT_CHECK_GT(global_batch, 0);
  if (drop_last) {
    TRANSIENT_CHECK_LE(global_batch, samples);
    return samples / global_batch;
  }
  return (samples + global_batch - 1) / global_batch;
}

StepPosition position_of_step(std::int64_t step, std::int64_t samples, std::int64_t global_batch,
                              bool drop_last) {
  TRANSIENT_CHECK_GE(step, 0);
  const std::int64_t per_epoch = steps_per_epoch(samples, global_batch, drop_last);
  StepPosition position;
  position.epoch = step / per_epoch;
  position.step_in_epoch = step % per_epoch;
  position.cursor = position.step_in_epoch * global_batch;
  position.batch = std::min(global_batch, samples - position.cursor);
  return position;
}

std::int64_t samples_before_step(std::int64_t step, std::int64_t samples, std::int64_t global_batch,
                                 bool drop_last) {
  TRANSIENT_CHECK_GE(step, 0);
  const std::int64_t per_epoch = steps_per_epoch(samples, global_batch, drop_last);
  const std::int64_t per_full_epoch = drop_last ? per_epoch * global_batch : samples;
  // Only an epoch's last step may be short of the global batch, and the steps of the epoch under
  // way before `step` (fewer than per_epoch) do not include it: all full batches.
  return step / per_epoch * per_full_epoch + step % per_epoch * global_batch;
}

bool ends_epoch(const StepPosition& position, std::int64_t samples, std::int64_t global_batch,
                bool drop_last) {
  return position.step_in_epoch + 1 == steps_per_epoch(samples, global_batch, drop_last);
}

Shard shard_of(const StepPosition& position, int workers, int rank) {
  TRANSIENT_CHECK_GE(rank, 0);
  TRANSIENT_CHECK_LT(rank, workers);
  const auto sizes = launch::split_batch(position.batch, workers);
  Shard shard;
  shard.begin =
      position.cursor + std::accumulate(sizes.begin(), sizes.begin() + rank, std::int64_t{0});
  shard.count = sizes[static_cast<std::size_t>(rank)];
  return shard;
}

std::vector<std::int64_t> epoch_permutation(std::int64_t samples, std::uint64_t seed,
                                            std::int64_t epoch) {
  std::vector<std::int64_t> order(static_cast<std::size_t>(samples));
  std::iota(order.begin(), order.end(), std::int64_t{0});
  // Distinct, well-mixed streams per (seed, epoch); the constant is the 64-bit golden ratio.
  Rng rng(seed * 0x9E3779B97F4A7C15ULL + static_cast<std::uint64_t>(epoch) + 1);
  for (std::int64_t i = samples - 1; i > 0; --i) {
    const auto j = static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(i + 1)));
    std::swap(order[static_cast<std::size_t>(i)], order[static_cast<std::size_t>(j)]);
  }
  return order;
}

double learning_rate_at(std::int64_t step, std::int64_t total_steps, std::int64_t warmup_steps,
                        double lr, LrSchedule schedule) {
  if (warmup_steps > 0 && step < warmup_steps) {
    const double progress = static_cast<double>(step + 1) / static_cast<double>(warmup_steps);
    return lr * (0.1 + 0.9 * progress);
  }
  const std::int64_t decay_steps = std::max<std::int64_t>(1, total_steps - warmup_steps);
  const double progress =
      std::min(1.0, static_cast<double>(step - warmup_steps) / static_cast<double>(decay_steps));
  if (schedule == LrSchedule::kStep)
    return progress < 0.5 ? lr : progress < 0.75 ? lr * 0.1 : lr * 0.01;
  return lr * 0.5 * (1.0 + std::cos(M_PI * progress));
}

}  // namespace transient::train
