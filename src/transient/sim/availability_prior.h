// What is known of a spot market before a run: how long its spot periods and outages last, as
// the chance that the availability of one tick carries on into the next, given how many ticks it
// has already lasted (a semi-Markov model on the decision grid). `market-aware` plans with it
// (expected_cost_plan.h): a spot period that has just begun is likely to be one of the short ones
// that do not repay a changeover; an outage that has lasted long is likely to go on.
//
// Made from a sequence of ticks (a trace, or the market model's availability sampled on the
// decision grid); the first and last periods of the sequence count as whole ones. For a job free
// to move between zones, from every zone's ticks as the job finds spot following it from zone to
// zone: a spot period is a stay in one zone, which may end by moving on to another zone's spot
// (moves_on()) rather than in an outage of all. Immutable once made; safe to share between
// threads.
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
  // How much of a market model a policy is shown before the runs (Scenario::market_prior): 30
  // days of it sampled.
  static constexpr double kModelSpanS = 30 * 86400.0;

  // From ticks of `tick_s` seconds, 1 = spot servers can be had and kept through the tick.
  // REQUIRES: ticks not empty, tick_s > 0.
  AvailabilityPrior(const std::vector<std::uint8_t>& ticks, double tick_s);

  // The model's market sampled on a grid of `tick_s` for `span_s` from one realisation (seed
  // fixed, so every run of a scenario plans with the same knowledge; where a realisation's data
  // ends, as a node trace's does, from the next ones): a tick is spot when a server can be had
  // at its start and is not revoked before its end, as OfflineMarket counts it.
  static AvailabilityPrior sample(const market::RevocationModel& model, double start_hour_of_day,
                                  double tick_s, double span_s);
  // The prior of a job free to move between zones (multi_region.h) that follows spot as
  // ZoneFollower does: its spot periods are its stays in one zone (a stay ends where that
  // zone's spot ends; the job then moves on to another zone's spot, or waits out an outage of
  // every zone), its outages those of all zones at once. `zones[z][i]`: tick i of zone z, as for
  // the constructor. REQUIRES: zones not empty, each not empty.
  static AvailabilityPrior following(const std::vector<std::vector<std::uint8_t>>& zones,
                                     double tick_s);
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
  // Where a spot period ends, the chance that spot can be had at once in another zone (the job
  // moves on); 0 for one zone.
  double moves_on() const { return moves_on_; }

 private:
  // From the lengths of the spot periods and outages, in ticks.
  AvailabilityPrior(const std::vector<int>& outages, const std::vector<int>& spot_periods,
                    double available_fraction, double moves_on, double tick_s);

  double tick_s_;
  double available_fraction_ = 0.0;
  double moves_on_ = 0.0;
  // holds_[a][age + 1]: age in [kUnknownAge, kMaxAge].
  std::vector<double> holds_[2];
};

// The zone a job free to move between zones runs in when it runs on spot: the one it is in while
// that zone has spot, otherwise the one whose spot has been up longest (its last change the
// oldest: the longest-lived period is expected to last longest); moving on to another zone begins
// a new spot period. Fed the zones' availability tick by tick.
class ZoneFollower {
 public:
  explicit ZoneFollower(int zones) : changed_(zones, 0), up_(zones, 0) {}
  // Tick `tick`'s availability, zone by zone (ticks fed in order from 0). Returns the zone
  // followed, -1 when no zone has spot.
  int next(int tick, const std::vector<std::uint8_t>& up);
  // The tick at which the current spot period or outage began; -1 when it began before the
  // first tick.
  int since() const { return since_; }
  // Whether the last tick began a stay in another zone straight after one ended.
  bool moved_on() const { return moved_on_; }

 private:
  std::vector<int> changed_;      // the tick at which each zone's spot last changed
  std::vector<std::uint8_t> up_;  // each zone's spot at the last tick
  int zone_ = -1;
  int last_zone_ = 0;  // where the job was last (kept through outages)
  int since_ = -1;
  bool moved_on_ = false;
};

}  // namespace transient::sim
