#include "transient/sim/availability_prior.h"

#include <algorithm>

#include "transient/core/error.h"

namespace transient::sim {
namespace {

// Chances are kept off 0 and 1 so that the plan never takes a revocation for impossible.
constexpr double kLeast = 1e-3;

}  // namespace

AvailabilityPrior::AvailabilityPrior(const std::vector<std::uint8_t>& ticks, double tick_s)
    : tick_s_(tick_s) {
  TRANSIENT_CHECK(!ticks.empty());
  TRANSIENT_CHECK_GT(tick_s, 0.0);
  std::vector<int> lengths[2];
  int run = 1;
  for (std::size_t i = 1; i <= ticks.size(); ++i) {
    if (i < ticks.size() && (ticks[i] != 0) == (ticks[i - 1] != 0)) {
      ++run;
      continue;
    }
    lengths[ticks[i - 1] != 0 ? 1 : 0].push_back(run);
    run = 1;
  }
  available_fraction_ =
      static_cast<double>(std::count_if(ticks.begin(), ticks.end(), [](auto t) { return t; })) /
      static_cast<double>(ticks.size());
  for (int a = 0; a < 2; ++a) {
    auto& holds = holds_[a];
    holds.assign(kMaxAge + 2, 0.5);
    if (lengths[a].empty()) continue;
    // Of the ticks in periods of this kind, the share followed by another of the same kind.
    double ticks_in = 0.0;
    double followed = 0.0;
    for (const int l : lengths[a]) {
      ticks_in += l;
      followed += l - 1;
    }
    const double pooled = followed / ticks_in;
    holds[0] = pooled;
    for (int age = 0; age <= kMaxAge; ++age) {
      // Periods that reached this tick (age + 1 ticks) and went on to the next one; the last
      // age pools every longer one.
      double reached = 0.0;
      double went_on = 0.0;
      for (const int l : lengths[a]) {
        if (l < age + 1) continue;
        if (age < kMaxAge) {
          reached += 1.0;
          went_on += l >= age + 2;
        } else {
          reached += l - age;
          went_on += l - age - 1;
        }
      }
      // One pseudo-observation at the pooled rate keeps rare ages from extreme estimates.
      holds[age + 1] = (went_on + pooled) / (reached + 1.0);
    }
    for (double& h : holds) h = std::clamp(h, kLeast, 1.0 - kLeast);
  }
  if (lengths[0].empty()) holds_[1].assign(kMaxAge + 2, 1.0 - kLeast);
}

AvailabilityPrior AvailabilityPrior::sample(const market::RevocationModel& model,
                                            double start_hour_of_day, double tick_s,
                                            double span_s) {
  return AvailabilityPrior(sample_ticks(model, start_hour_of_day, tick_s, span_s), tick_s);
}

std::vector<std::uint8_t> AvailabilityPrior::sample_ticks(const market::RevocationModel& model,
                                                          double start_hour_of_day, double tick_s,
                                                          double span_s) {
  Rng rng(0x5eed);
  auto timeline = model.start_run(start_hour_of_day, rng);
  const int n = std::max(1, static_cast<int>(span_s / tick_s));
  std::vector<std::uint8_t> ticks(n);
  for (int i = 0; i < n; ++i) {
    const double t = i * tick_s;
    ticks[i] =
        timeline->available_at(t) && timeline->revocation_time_s(t, rng) >= t + tick_s - 1e-9;
  }
  return ticks;
}

double AvailabilityPrior::holds(bool available, int age) const {
  const int index = age < 0 ? 0 : std::min(age, kMaxAge) + 1;
  return holds_[available ? 1 : 0][index];
}

}  // namespace transient::sim
