// How a fixed global batch is shared among heterogeneous workers: in proportion to the speed each
// one measured, so the fast ones do not wait on the slow ones at the all-reduce, while the global
// batch (and with it the optimisation) stays the same whatever the membership.
//
// The one home of "how many samples does each rank take": the equal split, the split by speed, and
// the choice between them that the members of a generation make. Pure functions, safe to call
// from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace transient::launch {

// The sizes of each worker's part of a batch of `batch` samples, in rank order: the first
// `batch % workers` ranks take one sample more (100 over 3 = 34, 33, 33).
// REQUIRES: workers >= 1, batch >= 0.
std::vector<std::int64_t> split_batch(std::int64_t batch, int workers);

// Splits `batch` samples among workers in proportion to `speeds` (samples/s, each > 0; a
// non-positive or non-finite speed counts as the mean of the valid others, or 1 if none is valid)
// by largest remainders. Every worker gets at least 1 sample when batch >= workers; the sizes sum
// to batch; equal speeds give exactly the split "the first batch % n ranks take one more"
// (100 over 3 = 34, 33, 33). Deterministic: ties are broken by lower index. No speeds (no
// workers) gives an empty split.
// REQUIRES: batch >= 0.
std::vector<std::int64_t> split_batch_by_speed(std::int64_t batch,
                                               const std::vector<double>& speeds);

// The shard sizes of a step of `batch` samples among members of measured `speeds` (samples/s):
// in proportion to them when the fastest is more than 25% faster than the slowest, else (and
// when a speed is unknown) the equal split: within 25% the speeds are measurement noise, and the
// equal split keeps the result independent of it. No speeds: one worker takes all.
std::vector<std::int64_t> member_shares(std::int64_t batch, const std::vector<double>& speeds);

// Positions [begin, begin + count) of a step's samples in the epoch's permutation.
struct SampleRange {
  std::int64_t begin = 0;
  std::int64_t count = 0;
  std::int64_t end() const { return begin + count; }
};

// The samples a member takes on beside the range it kept: `before` positions just before it and
// `after` just after it, so that what it has computed stays one range.
struct LostShare {
  std::int64_t before = 0;
  std::int64_t after = 0;
};

// A step interrupted by the loss of members, resumed by members that each kept the gradient of
// its own range of the step's samples `step` (their shares in the generation that failed): the
// samples nobody kept (the lost members' shares) are given to the members beside them, the first
// half of a gap (rounded down) to the member before it and the rest to the member after it, a gap
// at the step's start to the member after it, one at its end to the member before it; a member
// with an empty range takes nothing. Returns one LostShare per member of `kept` (same order), or
// nullopt when the ranges cannot be resumed from: one reaches outside the step, two overlap, or
// none holds a sample.
std::optional<std::vector<LostShare>> lost_shares(const SampleRange& step,
                                                  const std::vector<SampleRange>& kept);

}  // namespace transient::launch
