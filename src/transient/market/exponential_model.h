// The `exponential` revocation model: a constant hazard, i.e. memoryless lifetimes with a given
// mean (or rate), optionally capped. For clouds that publish interruption frequencies rather than
// lifetimes (AWS's Spot Instance Advisor buckets: "<5%", "5-10%", ... of instances interrupted per
// month). Spot servers are always available.
//
// Immutable after construction; safe to share between threads.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "transient/market/revocation_model.h"

namespace transient::market {

class ExponentialModel : public RevocationModel {
 public:
  // REQUIRES: mean_lifetime_s > 0; cap_s > 0 (kNever for no cap).
  ExponentialModel(double mean_lifetime_s, double cap_s, std::string description);

  // The mean lifetime for an AWS interruption-frequency bucket ("<5%", "5-10%", "10-15%",
  // "15-20%", ">20%"), taking the middle of the bucket (25% for ">20%") as the share of servers
  // interrupted within 30 days: mean = 30 d / -ln(1 - share). nullopt for an unknown bucket.
  static std::optional<double> mean_for_bucket_s(const std::string& bucket);

  std::string name() const override { return "exponential"; }
  std::string describe() const override { return description_; }
  std::unique_ptr<MarketTimeline> start_run(double start_hour_of_day, Rng& rng) const override;
  double sample_lifetime_s(Rng& rng) const override;
  double cap_s() const override { return cap_s_; }
  bool spot_by_launch() const override { return true; }

  double mean_lifetime_s() const { return mean_lifetime_s_; }

 private:
  double mean_lifetime_s_;
  double cap_s_;
  std::string description_;
};

}  // namespace transient::market
