#include "transient/train/sharding.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace transient::train {
namespace {

TEST(Sharding, LastStepOfAnEpochTakesWhatIsLeft) {
  EXPECT_EQ(steps_per_epoch(60000, 128, false), 469);
  const auto last = position_of_step(468, 60000, 128, false);
  EXPECT_EQ(last.epoch, 0);
  EXPECT_EQ(last.cursor, 468 * 128);
  EXPECT_EQ(last.batch, 60000 - 468 * 128);
  EXPECT_TRUE(ends_epoch(last, 60000, 128, false));
  const auto next = position_of_step(469, 60000, 128, false);
  EXPECT_EQ(next.epoch, 1);
  EXPECT_EQ(next.cursor, 0);
  EXPECT_EQ(next.batch, 128);
  EXPECT_FALSE(ends_epoch(next, 60000, 128, false));
}

// --drop-last: an epoch is its full batches; the 96 samples left over are not trained on.
TEST(Sharding, WithDropLastAnEpochIsItsFullBatches) {
  EXPECT_EQ(steps_per_epoch(60000, 128, true), 468);
  EXPECT_EQ(steps_per_epoch(60000, 100, true), 600);  // nothing left over: as without
  const auto last = position_of_step(467, 60000, 128, true);
  EXPECT_EQ(last.epoch, 0);
  EXPECT_EQ(last.cursor, 467 * 128);
  EXPECT_EQ(last.batch, 128);
  EXPECT_TRUE(ends_epoch(last, 60000, 128, true));
  const auto next = position_of_step(468, 60000, 128, true);
  EXPECT_EQ(next.epoch, 1);
  EXPECT_EQ(next.cursor, 0);
  EXPECT_EQ(next.batch, 128);
  // A batch of the whole set: one step an epoch.
  EXPECT_EQ(steps_per_epoch(60000, 60000, true), 1);
  EXPECT_TRUE(ends_epoch(position_of_step(5, 60000, 60000, true), 60000, 60000, true));
}

// Every sample exactly once per epoch, for 1-4 workers, with batches that split unevenly among
// the workers and that do not divide the data set; with --drop-last, every sample at most once
// and all but the fewer than a batch left over, each step a full batch.
TEST(Sharding, EverySampleExactlyOncePerEpochWhateverTheWorkers) {
  const std::int64_t samples = 1003;
  for (const bool drop_last : {false, true}) {
    for (const std::int64_t global_batch : {1, 7, 64, 100, 1003, 2000}) {
      if (drop_last && global_batch > samples) continue;  // refused by the launcher
      for (int workers = 1; workers <= 4; ++workers) {
        const std::int64_t per_epoch = steps_per_epoch(samples, global_batch, drop_last);
        for (std::int64_t epoch = 0; epoch < 2; ++epoch) {
          const auto permutation = epoch_permutation(samples, 42, epoch);
          std::vector<int> seen(static_cast<std::size_t>(samples), 0);
          for (std::int64_t s = 0; s < per_epoch; ++s) {
            const auto position =
                position_of_step(epoch * per_epoch + s, samples, global_batch, drop_last);
            ASSERT_EQ(position.epoch, epoch);
            EXPECT_EQ(ends_epoch(position, samples, global_batch, drop_last), s + 1 == per_epoch);
            if (drop_last) {
              EXPECT_EQ(position.batch, global_batch);
            }
            std::int64_t step_total = 0;
            std::int64_t expected_begin = position.cursor;
            for (int rank = 0; rank < workers; ++rank) {
              const Shard shard = shard_of(position, workers, rank);
              EXPECT_EQ(shard.begin, expected_begin);  // contiguous, in rank order
              expected_begin += shard.count;
              step_total += shard.count;
              for (std::int64_t i = shard.begin; i < shard.begin + shard.count; ++i) {
                ++seen[static_cast<std::size_t>(permutation[static_cast<std::size_t>(i)])];
              }
            }
            EXPECT_EQ(step_total, position.batch);
          }
          std::int64_t trained = 0;
          for (std::int64_t i = 0; i < samples; ++i) {
            const int times = seen[static_cast<std::size_t>(i)];
            ASSERT_TRUE(drop_last ? times <= 1 : times == 1)
                << "sample " << i << " trained on " << times << " times, batch " << global_batch
                << ", " << workers << " workers, drop_last " << drop_last;
            trained += times;
          }
          EXPECT_EQ(trained, drop_last ? samples - samples % global_batch : samples);
        }
      }
    }
  }
}

// The samples of the steps before a step, in closed form, are those of the steps one by one: an
// epoch's last step takes what is left (or, with --drop-last, there is none smaller), and a batch
// larger than the data set is all of it each step. The coordinator's samples/s counts them (it
// took every step for a full batch: 28% too fast with 200 samples in batches of 128).
TEST(Sharding, SamplesBeforeAStepAreThoseOfItsSteps) {
  for (const bool drop_last : {false, true}) {
    for (const std::int64_t samples : {1, 2, 7, 100, 200, 1003}) {
      for (const std::int64_t global_batch : {1, 3, 7, 64, 100, 128, 200, 1003, 100000}) {
        if (drop_last && global_batch > samples) continue;  // refused by the launcher
        const std::int64_t per_epoch = steps_per_epoch(samples, global_batch, drop_last);
        std::int64_t total = 0;
        for (std::int64_t step = 0; step <= 3 * per_epoch + 2; ++step) {
          ASSERT_EQ(samples_before_step(step, samples, global_batch, drop_last), total)
              << "step " << step << ", " << samples << " samples, batch " << global_batch
              << ", drop_last " << drop_last;
          total += position_of_step(step, samples, global_batch, drop_last).batch;
        }
      }
    }
  }
  EXPECT_EQ(samples_before_step(4, 200, 128, false), 400);     // 128 + 72, twice
  EXPECT_EQ(samples_before_step(3, 200, 100000, false), 600);  // the whole set each step
  EXPECT_EQ(samples_before_step(3, 200, 128, true), 384);      // the 72 left are dropped
  EXPECT_EQ(samples_before_step(0, 200, 128, false), 0);
}

TEST(Sharding, PermutationIsSeededPerEpochAndReproducible) {
  const auto a = epoch_permutation(1000, 7, 0);
  EXPECT_EQ(a, epoch_permutation(1000, 7, 0));
  EXPECT_NE(a, epoch_permutation(1000, 7, 1));
  EXPECT_NE(a, epoch_permutation(1000, 8, 0));
  // Pinned: a seed must give the same data order on every platform and in every version, or
  // resuming an old job would train on a different order.
  EXPECT_EQ(epoch_permutation(10, 1, 0), (std::vector<std::int64_t>{6, 4, 0, 5, 3, 8, 2, 1, 9, 7}));
}

TEST(Sharding, LearningRateWarmsUpThenDecaysToZero) {
  EXPECT_NEAR(learning_rate_at(0, 1000, 50, 0.1), 0.1 * (0.1 + 0.9 / 50), 1e-12);
  EXPECT_NEAR(learning_rate_at(49, 1000, 50, 0.1), 0.1, 1e-12);
  EXPECT_NEAR(learning_rate_at(50, 1000, 50, 0.1), 0.1, 1e-12);
  EXPECT_NEAR(learning_rate_at(525, 1000, 50, 0.1), 0.05, 1e-12);
  EXPECT_NEAR(learning_rate_at(1000, 1000, 50, 0.1), 0.0, 1e-12);
  for (std::int64_t s = 51; s < 1000; ++s) {
    EXPECT_LE(learning_rate_at(s, 1000, 50, 0.1), learning_rate_at(s - 1, 1000, 50, 0.1));
  }
}

// --schedule step: the same warm-up, then the peak rate until half of the steps after it, a tenth
// until three quarters, a hundredth to the end.
TEST(Sharding, AStepScheduleDropsTenfoldAtHalfAndThreeQuarters) {
  const auto step = LrSchedule::kStep;
  EXPECT_NEAR(learning_rate_at(0, 1050, 50, 0.1, step), 0.1 * (0.1 + 0.9 / 50), 1e-12);
  EXPECT_NEAR(learning_rate_at(50, 1050, 50, 0.1, step), 0.1, 1e-12);
  EXPECT_NEAR(learning_rate_at(549, 1050, 50, 0.1, step), 0.1, 1e-12);
  EXPECT_NEAR(learning_rate_at(550, 1050, 50, 0.1, step), 0.01, 1e-12);
  EXPECT_NEAR(learning_rate_at(799, 1050, 50, 0.1, step), 0.01, 1e-12);
  EXPECT_NEAR(learning_rate_at(800, 1050, 50, 0.1, step), 0.001, 1e-12);
  EXPECT_NEAR(learning_rate_at(1049, 1050, 50, 0.1, step), 0.001, 1e-12);
}

}  // namespace
}  // namespace transient::train
