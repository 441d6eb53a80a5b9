#include "transient/market/model_summary.h"

#include <algorithm>
#include <cmath>

#include "transient/core/error.h"

namespace transient::market {

std::vector<double> sample_lifetimes_s(const RevocationModel& model, int n, std::uint64_t seed) {
  TRANSIENT_CHECK_GT(n, 0);
  Rng rng(seed);
  std::vector<double> lifetimes(static_cast<std::size_t>(n));
  for (double& lifetime : lifetimes) lifetime = model.sample_lifetime_s(rng);
  return lifetimes;
}

ModelSummary summarize(const RevocationModel& model, int draws, std::uint64_t seed) {
  ModelSummary summary = summarize_lifetimes(sample_lifetimes_s(model, draws, seed), model.cap_s());
  summary.seed = seed;
  return summary;
}

ModelSummary summarize_lifetimes(std::vector<double> lifetimes, double cap_s) {
  TRANSIENT_CHECK(!lifetimes.empty());
  const int draws = static_cast<int>(lifetimes.size());
  ModelSummary summary;
  summary.draws = draws;
  int within_1h = 0;
  int within_2h = 0;
  int at_cap = 0;
  int never = 0;
  double total_s = 0.0;
  for (double lifetime : lifetimes) {
    if (lifetime == kNever) {
      ++never;
      continue;
    }
    total_s += lifetime;
    if (std::isfinite(cap_s) && lifetime >= cap_s) {
      ++at_cap;
      continue;
    }
    within_1h += lifetime <= 3600.0;
    within_2h += lifetime <= 7200.0;
  }
  const double n = static_cast<double>(draws);
  summary.share_revoked_1h = within_1h / n;
  summary.share_revoked_2h = within_2h / n;
  summary.share_at_cap = at_cap / n;
  summary.share_never = never / n;
  summary.mean_lifetime_s = never > 0 ? kNever : total_s / n;
  const double revoked = (draws - at_cap - never) / n;
  summary.mtbf_s = revoked > 0.0 && never == 0 ? summary.mean_lifetime_s / revoked : kNever;
  const auto middle = lifetimes.begin() + draws / 2;
  std::nth_element(lifetimes.begin(), middle, lifetimes.end());
  summary.median_lifetime_s = *middle;
  return summary;
}

}  // namespace transient::market
