#include "transient/launch/batch_split.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <vector>

namespace transient::launch {
namespace {

using Sizes = std::vector<std::int64_t>;

// The split of a batch among equal workers before speeds were measured.
Sizes even_split(std::int64_t batch, std::int64_t n) {
  Sizes sizes;
  for (std::int64_t rank = 0; rank < n; ++rank) sizes.push_back(batch / n + (rank < batch % n));
  return sizes;
}

std::int64_t sum(const Sizes& sizes) { return std::accumulate(sizes.begin(), sizes.end(), 0LL); }

TEST(SplitBatchBySpeed, EqualSpeedsGiveTheEvenSplit) {
  EXPECT_EQ(split_batch_by_speed(100, {1.0, 1.0, 1.0}), (Sizes{34, 33, 33}));
  EXPECT_EQ(split_batch_by_speed(101, {5.0, 5.0, 5.0}), (Sizes{34, 34, 33}));
  for (std::int64_t n = 1; n <= 64; ++n) {
    for (std::int64_t batch : {0, 1, 2, 7, 63, 64, 65, 100, 127, 256, 1000, 4099, 1 << 20}) {
      for (double speed : {1.0, 0.37, 123.456, 1e-9, 3e12}) {
        EXPECT_EQ(split_batch_by_speed(batch, std::vector<double>(n, speed)), even_split(batch, n))
            << "batch " << batch << " over " << n << " at speed " << speed;
      }
    }
  }
}

TEST(SplitBatchBySpeed, ProportionalToSpeed) {
  EXPECT_EQ(split_batch_by_speed(100, {3.0, 1.0}), (Sizes{75, 25}));
  EXPECT_EQ(split_batch_by_speed(60, {10.0, 20.0, 30.0}), (Sizes{10, 20, 30}));
  EXPECT_EQ(split_batch_by_speed(256, {2.0, 1.0, 1.0}), (Sizes{128, 64, 64}));
  // Largest remainders: quotas 42.86, 28.57, 28.57 -> 42, 28, 28 + the 2 left to the largest
  // fractions (index 0 then index 1 by lower index).
  EXPECT_EQ(split_batch_by_speed(100, {1.5, 1.0, 1.0}), (Sizes{43, 29, 28}));
  // Quotas 66.67, 33.33: the largest fraction is worker 0's.
  EXPECT_EQ(split_batch_by_speed(100, {2.0, 1.0}), (Sizes{67, 33}));
  EXPECT_EQ(split_batch_by_speed(100, {1.0, 2.0}), (Sizes{33, 67}));
}

TEST(SplitBatchBySpeed, EachSizeIsWithinOneOfItsQuota) {
  const std::vector<double> speeds = {812.5, 97.0, 1403.25, 450.0, 450.0, 33.3, 2000.0};
  const double total = std::accumulate(speeds.begin(), speeds.end(), 0.0);
  for (std::int64_t batch = 7; batch <= 3000; batch += 37) {
    const Sizes sizes = split_batch_by_speed(batch, speeds);
    ASSERT_EQ(sizes.size(), speeds.size());
    EXPECT_EQ(sum(sizes), batch);
    for (std::size_t i = 0; i < speeds.size(); ++i) {
      const double quota = batch * speeds[i] / total;
      if (sizes[i] == 1) continue;  // may be raised to the minimum of 1
      EXPECT_LT(std::abs(sizes[i] - quota), 1.0) << "batch " << batch << " worker " << i;
    }
  }
}

TEST(SplitBatchBySpeed, EveryWorkerGetsOneWhenThereIsEnough) {
  EXPECT_EQ(split_batch_by_speed(10, {1.0, 1.0, 1e6}), (Sizes{1, 1, 8}));
  EXPECT_EQ(split_batch_by_speed(3, {1e-6, 1e6, 1e-6}), (Sizes{1, 1, 1}));
  // Quotas 0.12 and 1.22 x 4: largest remainders give 0, 2, 1, 1, 1; worker 0's one sample comes
  // from worker 1, the only one with more than 1.
  const Sizes sizes = split_batch_by_speed(5, {0.1, 1.0, 1.0, 1.0, 1.0});
  EXPECT_EQ(sum(sizes), 5);
  for (std::int64_t size : sizes) EXPECT_EQ(size, 1);
  const Sizes skewed = split_batch_by_speed(20, {1e-3, 1e-3, 1e-3, 1e-3, 1.0});
  EXPECT_EQ(skewed, (Sizes{1, 1, 1, 1, 16}));
}

TEST(SplitBatchBySpeed, FewerSamplesThanWorkers) {
  EXPECT_EQ(split_batch_by_speed(2, {1.0, 1.0, 1.0}), (Sizes{1, 1, 0}));
  EXPECT_EQ(split_batch_by_speed(1, {1.0, 5.0, 1.0}), (Sizes{0, 1, 0}));
  EXPECT_EQ(split_batch_by_speed(0, {1.0, 5.0}), (Sizes{0, 0}));
  EXPECT_EQ(split_batch_by_speed(0, {}), Sizes{});
}

TEST(SplitBatchBySpeed, BadSpeedsCountAsTheMeanOfTheOthers) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  // Valid speeds 2 and 6 have mean 4: the split is as for {2, 4, 6, 4, 4}.
  const Sizes expected = split_batch_by_speed(200, {2.0, 4.0, 6.0, 4.0, 4.0});
  EXPECT_EQ(expected, (Sizes{20, 40, 60, 40, 40}));
  EXPECT_EQ(split_batch_by_speed(200, {2.0, 0.0, 6.0, -1.0, nan}), expected);
  EXPECT_EQ(split_batch_by_speed(200, {2.0, inf, 6.0, -inf, 0.0}), expected);
  // None valid: all count as 1, i.e. the even split.
  EXPECT_EQ(split_batch_by_speed(100, {0.0, nan, -3.0}), (Sizes{34, 33, 33}));
}

TEST(SplitBatchBySpeed, HugeAndTinySpeedsDoNotOverflow) {
  const double big = std::numeric_limits<double>::max();
  EXPECT_EQ(split_batch_by_speed(100, {big, big, big, big}), (Sizes{25, 25, 25, 25}));
  EXPECT_EQ(split_batch_by_speed(90, {big, big / 2}), (Sizes{60, 30}));
  const double tiny = std::numeric_limits<double>::denorm_min();
  EXPECT_EQ(split_batch_by_speed(100, {tiny, tiny}), (Sizes{50, 50}));
}

TEST(SplitBatchBySpeed, Deterministic) {
  const std::vector<double> speeds = {1.1, 2.2, 3.3, 0.7};
  EXPECT_EQ(split_batch_by_speed(1000, speeds), split_batch_by_speed(1000, speeds));
}

TEST(SplitBatch, SplitsUnevenBatchesFirstRanksFirst) {
  EXPECT_EQ(split_batch(100, 3), (Sizes{34, 33, 33}));
  EXPECT_EQ(split_batch(128, 2), (Sizes{64, 64}));
  EXPECT_EQ(split_batch(2, 4), (Sizes{1, 1, 0, 0}));
  EXPECT_EQ(split_batch(7, 1), (Sizes{7}));
}

// A generation's split: equal while the members' speeds are unknown or within 25% of each other
// (noise), in proportion to them beyond.
TEST(MemberShares, EqualUnlessTheSpeedsReallyDiffer) {
  EXPECT_EQ(member_shares(100, {0, 0, 0}), split_batch(100, 3));
  EXPECT_EQ(member_shares(100, {500, 0, 510}), split_batch(100, 3));  // one unknown
  EXPECT_EQ(member_shares(100, {500, 520, 600}), split_batch(100, 3));
  EXPECT_EQ(member_shares(128, {}), split_batch(128, 1));
  EXPECT_EQ(member_shares(120, {300, 100, 200}), (Sizes{60, 20, 40}));
}

// Who computes the samples of members lost in the middle of a step (the survivors kept their own
// gradients): the members beside each gap, so that every member's samples stay one range, and
// together the step's samples exactly once.
TEST(LostShares, GapsGoToTheMembersBesideThem) {
  const auto shares = [](SampleRange step, std::vector<SampleRange> kept) {
    std::vector<std::pair<std::int64_t, std::int64_t>> taken;
    const auto result = lost_shares(step, kept);
    if (!result) return taken;
    std::int64_t covered = 0;
    for (std::size_t i = 0; i < kept.size(); ++i) {
      const auto& share = (*result)[i];
      taken.emplace_back(share.before, share.after);
      covered += kept[i].count + share.before + share.after;
    }
    EXPECT_EQ(covered, step.count);
    return taken;
  };
  using Taken = std::vector<std::pair<std::int64_t, std::int64_t>>;
  // Two members, the second lost: the survivor computes it all (it comes after its range).
  EXPECT_EQ(shares({0, 128}, {{0, 64}}), (Taken{{0, 64}}));
  // ... the first lost: before its range.
  EXPECT_EQ(shares({256, 128}, {{320, 64}}), (Taken{{64, 0}}));
  // Three, the middle one lost: its 43 split between the two beside it.
  EXPECT_EQ(shares({0, 128}, {{0, 43}, {86, 42}}), (Taken{{0, 21}, {22, 0}}));
  // Given in any order (the new generation's ranks), answered in that order.
  EXPECT_EQ(shares({0, 128}, {{86, 42}, {0, 43}}), (Taken{{22, 0}, {0, 21}}));
  // Four, the second and the last lost: the third takes from both sides.
  EXPECT_EQ(shares({0, 128}, {{0, 32}, {64, 32}}), (Taken{{0, 16}, {16, 32}}));
  // A member with no samples takes none; nothing lost, nothing taken.
  EXPECT_EQ(shares({0, 2}, {{0, 1}, {1, 0}}), (Taken{{0, 1}, {0, 0}}));
  EXPECT_EQ(shares({0, 128}, {{64, 64}, {0, 64}}), (Taken{{0, 0}, {0, 0}}));
}

TEST(LostShares, RangesThatDoNotFitTheStepCannotBeResumedFrom) {
  EXPECT_FALSE(lost_shares({0, 128}, {{0, 64}, {32, 64}}));  // an overlap
  EXPECT_FALSE(lost_shares({0, 128}, {{100, 64}}));          // beyond the step
  EXPECT_FALSE(lost_shares({64, 64}, {{0, 64}}));            // before it
  EXPECT_FALSE(lost_shares({0, 128}, {{0, 0}, {5, 0}}));     // nobody holds a sample
  EXPECT_FALSE(lost_shares({0, 128}, {}));
  EXPECT_FALSE(lost_shares({0, 128}, {{0, -1}}));
}

}  // namespace
}  // namespace transient::launch
