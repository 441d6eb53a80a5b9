// How a fixed global batch is shared among heterogeneous workers: in proportion to the speed each
// one measured, so the fast ones do not wait on the slow ones at the all-reduce, while the global
// batch (and with it the optimisation) stays the same whatever the membership.
//
// A pure function, safe to call from any thread.
#pragma once

#include <cstdint>
#include <vector>

namespace transient::launch {

// Splits `batch` samples among workers in proportion to `speeds` (samples/s, each > 0; a
// non-positive or non-finite speed counts as the mean of the valid others, or 1 if none is valid)
// by largest remainders. Every worker gets at least 1 sample when batch >= workers; the sizes sum
// to batch; equal speeds give exactly the split "the first batch % n ranks take one more"
// (100 over 3 = 34, 33, 33). Deterministic: ties are broken by lower index. No speeds (no
// workers) gives an empty split.
// REQUIRES: batch >= 0.
std::vector<std::int64_t> split_batch_by_speed(std::int64_t batch,
                                               const std::vector<double>& speeds);

}  // namespace transient::launch
