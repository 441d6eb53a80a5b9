// The `lifetime` revocation model: every spot server lives an independent lifetime drawn from an
// empirical distribution of measured lifetimes, capped (GCE: 24 h). Spot servers are always
// available. Fitted either from the 2019 GCE measurements (gce-2019/lifetimes_2019.csv, per GPU
// type and/or zone) or from a published CDF (spot-traces/gcp-preemptible-lifetimes/*.txt).
//
// Immutable after construction; safe to share between threads.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "transient/market/internal/empirical_cdf.h"
#include "transient/market/revocation_model.h"

namespace transient::market {

class LifetimeModel : public RevocationModel {
 public:
  // Fits on the rows of the gce-2019 lifetimes CSV at `path` whose gpu is `gpu` and zone is
  // `zone` (empty = any; matched case-insensitively). Throws InputError naming the file for a
  // bad row, or listing the GPUs / zones present when nothing matches.
  static std::unique_ptr<LifetimeModel> fit_gce_2019(const std::string& path,
                                                     const std::string& gpu,
                                                     const std::string& zone, double cap_s);
  // Reads a CDF file of two whitespace-separated columns `lifetime_hours cumulative_fraction`
  // (the scispot files). Throws InputError at the line of a bad or decreasing point.
  static std::unique_ptr<LifetimeModel> from_cdf_file(const std::string& path, double cap_s);

  LifetimeModel(std::string description, internal::EmpiricalCdf cdf);

  std::string name() const override { return "lifetime"; }
  std::string describe() const override { return description_; }
  std::unique_ptr<MarketTimeline> start_run(double start_hour_of_day, Rng& rng) const override;
  double sample_lifetime_s(Rng& rng) const override { return cdf_->sample_s(rng); }
  double cap_s() const override { return cdf_->cap_s(); }
  bool spot_by_launch() const override { return true; }

  // The fitted distribution, for summaries and tests.
  const internal::EmpiricalCdf& distribution() const { return *cdf_; }
  // Number of measured lifetimes fitted (0 when built from a published CDF).
  int sample_count() const { return static_cast<int>(measured_s_.size()); }
  // The measured lifetimes fitted, capped, in file order (empty when built from a CDF).
  const std::vector<double>& measured_lifetimes_s() const { return measured_s_; }

 private:
  std::string description_;
  std::shared_ptr<const internal::EmpiricalCdf> cdf_;  // shared with the timelines
  std::vector<double> measured_s_;
};

}  // namespace transient::market
