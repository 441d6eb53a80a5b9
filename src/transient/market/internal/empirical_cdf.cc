#include "transient/market/internal/empirical_cdf.h"

#include <algorithm>
#include <cmath>

#include "transient/core/error.h"

namespace transient::market::internal {

EmpiricalCdf::EmpiricalCdf(std::vector<double> x_s, std::vector<double> f, double cap_s)
    : x_s_(std::move(x_s)), f_(std::move(f)), cap_s_(cap_s) {
  TRANSIENT_CHECK(!x_s_.empty());
  TRANSIENT_CHECK_EQ(x_s_.size(), f_.size());
  TRANSIENT_CHECK_EQ(f_.front(), 0.0);
}

EmpiricalCdf EmpiricalCdf::from_samples(std::vector<double> lifetimes_s, double cap_s) {
  TRANSIENT_CHECK(!lifetimes_s.empty());
  std::sort(lifetimes_s.begin(), lifetimes_s.end());
  const double n = static_cast<double>(lifetimes_s.size());
  std::vector<double> x{0.0};
  std::vector<double> f{0.0};
  for (std::size_t i = 0; i < lifetimes_s.size() && lifetimes_s[i] < cap_s; ++i) {
    x.push_back(lifetimes_s[i]);
    f.push_back(static_cast<double>(i + 1) / n);
  }
  return EmpiricalCdf(std::move(x), std::move(f), cap_s);
}

EmpiricalCdf EmpiricalCdf::from_points(std::vector<std::pair<double, double>> points,
                                       double cap_s) {
  TRANSIENT_CHECK(!points.empty());
  std::vector<double> x;
  std::vector<double> f;
  // A first point above zero probability is an atom at its lifetime.
  if (points.front().second > 0.0) {
    x.push_back(std::min(points.front().first, cap_s));
    f.push_back(0.0);
  }
  for (std::size_t i = 0; i < points.size(); ++i) {
    const auto [t_s, fraction] = points[i];
    if (t_s < cap_s) {
      x.push_back(t_s);
      f.push_back(fraction);
      continue;
    }
    // The curve crosses the cap between the previous point and this one: keep the fraction
    // reached at the cap; the rest is the atom at the cap.
    if (!x.empty() && x.back() < cap_s && t_s > x.back()) {
      const double w = (cap_s - x.back()) / (t_s - x.back());
      const double at_cap = f.back() + w * (fraction - f.back());
      if (at_cap > f.back()) {
        x.push_back(cap_s);
        f.push_back(at_cap);
      }
    }
    break;
  }
  if (x.empty()) {
    x.push_back(0.0);
    f.push_back(0.0);
  }
  return EmpiricalCdf(std::move(x), std::move(f), cap_s);
}

double EmpiricalCdf::cdf(double t_s) const {
  if (t_s >= cap_s_) return 1.0;
  const auto it = std::upper_bound(x_s_.begin(), x_s_.end(), t_s);
  if (it == x_s_.begin()) return 0.0;
  const std::size_t j = static_cast<std::size_t>(it - x_s_.begin());
  if (j == x_s_.size()) return f_.back();
  const double w = (t_s - x_s_[j - 1]) / (x_s_[j] - x_s_[j - 1]);
  return f_[j - 1] + w * (f_[j] - f_[j - 1]);
}

double EmpiricalCdf::quantile(double u) const {
  if (u >= f_.back()) return std::isfinite(cap_s_) ? cap_s_ : x_s_.back();
  // The first point whose fraction exceeds u ends the segment u falls in.
  const auto it = std::upper_bound(f_.begin(), f_.end(), u);
  const std::size_t j = static_cast<std::size_t>(it - f_.begin());
  TRANSIENT_CHECK(j > 0 && j < f_.size());
  const double w = (u - f_[j - 1]) / (f_[j] - f_[j - 1]);
  return x_s_[j - 1] + w * (x_s_[j] - x_s_[j - 1]);
}

double EmpiricalCdf::mean_s() const {
  double mean = 0.0;
  for (std::size_t j = 1; j < x_s_.size(); ++j) {
    mean += (f_[j] - f_[j - 1]) * 0.5 * (x_s_[j - 1] + x_s_[j]);
  }
  const double tail = 1.0 - f_.back();
  if (tail > 0.0) mean += tail * (std::isfinite(cap_s_) ? cap_s_ : x_s_.back());
  return mean;
}

double EmpiricalCdf::share_at_cap() const { return std::isfinite(cap_s_) ? 1.0 - f_.back() : 0.0; }

}  // namespace transient::market::internal
