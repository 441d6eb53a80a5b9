// A lifetime distribution given by points of its cumulative distribution function, linear in
// between (a piecewise-uniform density), with the mass beyond the cap placed at the cap.
//
// Built from measured lifetimes (every measured server is one step of 1/n, spread uniformly over
// the gap below it; servers that reached the cap stay an atom at the cap, so the share reaching
// the cap is exactly the measured one) or from a published CDF (points as given). Sampling is by
// inversion, one uniform draw per lifetime. Immutable; safe to share.
#pragma once

#include <utility>
#include <vector>

#include "transient/core/random.h"

namespace transient::market::internal {

class EmpiricalCdf {
 public:
  // From measured lifetimes (seconds, >= 0) and the cap (seconds; kNever for none).
  // REQUIRES: !lifetimes_s.empty().
  static EmpiricalCdf from_samples(std::vector<double> lifetimes_s, double cap_s);
  // From CDF points (seconds, cumulative fraction), non-decreasing in both, last fraction 1.
  // REQUIRES: points validated by the caller (the file reader reports bad ones with their line).
  static EmpiricalCdf from_points(std::vector<std::pair<double, double>> points, double cap_s);

  // P(lifetime <= t_s).
  double cdf(double t_s) const;
  // The lifetime at cumulative fraction u in [0, 1).
  double quantile(double u) const;
  double sample_s(Rng& rng) const { return quantile(rng.uniform()); }
  // Expected lifetime (seconds), exactly.
  double mean_s() const;
  double cap_s() const { return cap_s_; }
  // Share of servers that reach the cap (the atom at the cap).
  double share_at_cap() const;

 private:
  EmpiricalCdf(std::vector<double> x_s, std::vector<double> f, double cap_s);

  std::vector<double> x_s_;  // at most cap_s_, non-decreasing; f_[0] == 0
  std::vector<double> f_;    // cumulative fraction at x_s_[i], non-decreasing
  double cap_s_;
};

}  // namespace transient::market::internal
