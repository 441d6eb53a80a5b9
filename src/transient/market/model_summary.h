// The figures `transient market show` prints for a revocation model, estimated by drawing
// lifetimes with a fixed seed (so they are the same on every machine), and the draws themselves
// for `transient market sample`.
#pragma once

#include <cstdint>
#include <vector>

#include "transient/market/revocation_model.h"

namespace transient::market {

struct ModelSummary {
  int draws = 0;                   // lifetimes drawn
  std::uint64_t seed = 0;          // seed of the draws
  double median_lifetime_s = 0.0;  // kNever if at least half are never revoked
  double mean_lifetime_s = 0.0;    // kNever if any lifetime is kNever
  double share_revoked_1h = 0.0;   // revoked (before the cap) within the first hour
  double share_revoked_2h = 0.0;   // revoked (before the cap) within the first two hours
  double share_at_cap = 0.0;       // lived to the cap (0 when the model has none)
  double share_never = 0.0;        // never revoked (kNever)
  // Mean time between revocations of one server slot that is refilled at once: mean lifetime /
  // share revoked before the cap (servers that reach the cap are replaced but are not failures).
  // kNever when nothing is revoked.
  double mtbf_s = 0.0;
};

// `n` lifetimes of a server launched at the start of a fresh run (on a trace, at the first moment
// a server can be had), from Rng(seed).
// REQUIRES: n > 0.
std::vector<double> sample_lifetimes_s(const RevocationModel& model, int n, std::uint64_t seed);

// REQUIRES: draws > 0.
ModelSummary summarize(const RevocationModel& model, int draws = 100000, std::uint64_t seed = 1);

// The same figures for given lifetimes (e.g. the measured ones a model was fitted on); draws is
// their number and seed 0. REQUIRES: !lifetimes_s.empty().
ModelSummary summarize_lifetimes(std::vector<double> lifetimes_s, double cap_s);

}  // namespace transient::market
