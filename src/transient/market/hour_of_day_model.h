// The `hour-of-day` revocation model: the hazard of revocation follows the hour of the day
// (CM-DARE's revocation counts by hour, cmdare/figures/revocations_by_hour_of_day.csv), scaled so
// that its daily average is 1 / mean lifetime, with GCE's 24-hour cap. A server's lifetime is
// drawn by walking the hourly hazard from its launch hour. Spot servers are always available.
//
// The counts are used as relative hazards, which assumes the measured servers were alive evenly
// across the day. The default mean lifetime is the exposure estimate from the same GPU's 2019
// lifetimes (hours lived / servers revoked before the cap).
//
// Immutable after construction; safe to share between threads.
#pragma once

#include <array>
#include <memory>
#include <string>

#include "transient/market/revocation_model.h"

namespace transient::market {

class HourOfDayModel : public RevocationModel {
 public:
  // `weights`: relative hazard in each hour 0..23 (non-negative, not all zero; normalised here to
  // a mean of 1). `start_hour`: the hour of day of a fresh run for sample_lifetime_s, or a
  // negative number to draw it uniformly. REQUIRES: mean_lifetime_s > 0, cap_s > 0.
  HourOfDayModel(const std::array<double, 24>& weights, double mean_lifetime_s, double cap_s,
                 double start_hour, std::string description);

  // Relative hazards for `gpu` (a column of the CSV: K80, P100, V100; empty = their sum), read
  // from the CSV at `path`. The bin "24" (if any) is added to hour 0. Throws InputError.
  static std::array<double, 24> read_weights(const std::string& path, const std::string& gpu);

  std::string name() const override { return "hour-of-day"; }
  std::string describe() const override { return description_; }
  std::unique_ptr<MarketTimeline> start_run(double start_hour_of_day, Rng& rng) const override;
  double sample_lifetime_s(Rng& rng) const override;
  double cap_s() const override { return cap_s_; }
  bool spot_by_launch() const override { return true; }

  // Lifetime (s) of a server launched at `hour_of_day` (0..24), drawing from `rng`.
  double lifetime_from_hour_s(double hour_of_day, Rng& rng) const;
  // Hazard (revocations per second) in hour `hour` (0..23).
  double hazard_per_s(int hour) const { return hazard_per_s_[hour]; }

 private:
  std::array<double, 24> hazard_per_s_{};
  double cap_s_;
  double start_hour_;
  std::string description_;
};

}  // namespace transient::market
