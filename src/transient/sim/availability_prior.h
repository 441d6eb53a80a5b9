// What is known of a spot market before a run: how long its spot periods and outages last, as
// the chance that the availability of one tick carries on into the next, given how many ticks it
// has already lasted (a semi-Markov model on the decision grid). `market-aware` plans with it
// (expected_cost_plan.h): a spot period that has just begun is likely to be one of the short ones
// that do not repay a changeover; an outage that has lasted long is likely to go on.
//
// Made from a sequence of ticks (a trace, or the market model's availability sampled on the
// decision grid); the first and last periods of the sequence count as whole ones. Immutable once
// made; safe to share between threads.
#pragma once

#include <cstdint>
#include <vector>

#include "transient/market/revocation_model.h"

namespace transient::sim {

class AvailabilityPrior {
 public:
  // Ages are counted up to kMaxAge ticks; longer periods share the hazard of the tail.
  static constexpr int kMaxAge = 16;
  // The age of a period whose beginning has not been seen (a run's first one).
  static constexpr int kUnknownAge = -1;

  // From ticks of `tick_s` seconds, 1 = spot servers can be had and kept through the tick.
  // REQUIRES: ticks not empty, tick_s > 0.
  AvailabilityPrior(const std::vector<std::uint8_t>& ticks, double tick_s);

  // The model's market sampled on a grid of `tick_s` for `span_s` from one realisation (seed
  // fixed, so every run of a scenario plans with the same knowledge): a tick is spot when a
  // server can be had at its start and is not revoked before its end, as OfflineMarket counts it.
  static AvailabilityPrior sample(const market::RevocationModel& model, double start_hour_of_day,
                                  double tick_s, double span_s);
  // The ticks sample() counts (the same realisation, so the models of zones whose traces were
  // recorded together are sampled at the same moments).
  static std::vector<std::uint8_t> sample_ticks(const market::RevocationModel& model,
                                                double start_hour_of_day, double tick_s,
                                                double span_s);

  double tick_s() const { return tick_s_; }
  // The chance that availability `available`, which has lasted `age` ticks before the current
  // one (0: it changed at this tick; kUnknownAge: not seen changing), holds through the next
  // tick. Never 0 or 1: what was never seen is not ruled out.
  double holds(bool available, int age) const;
  // The share of ticks with spot.
  double available_fraction() const { return available_fraction_; }

 private:
  double tick_s_;
  double available_fraction_ = 0.0;
  // holds_[a][age + 1]: age in [kUnknownAge, kMaxAge].
  std::vector<double> holds_[2];
};

}  // namespace transient::sim
