#include "transient/sim/monte_carlo.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "transient/core/error.h"
#include "transient/sim/internal/run_in_threads.h"
#include "transient/sim/simulator.h"

namespace transient::sim {
namespace {

constexpr double kUnfinished = std::numeric_limits<double>::infinity();

// The nearest-rank `p` quantile of `sorted` (increasing, not empty): the ceil(p n)-th value. p n
// is taken as the whole number it is within rounding (0.55 * 100 is 55.000000000000007 in
// doubles, whose ceiling took the 56th run).
double nearest_rank(const std::vector<double>& sorted, double p) {
  const auto n = static_cast<double>(sorted.size());
  const double rank = p * n;
  const double whole = std::nearbyint(rank);
  const double k = std::abs(rank - whole) <= 1e-9 * std::max(1.0, rank) ? whole : std::ceil(rank);
  const auto index = static_cast<std::size_t>(std::max(1.0, k)) - 1;
  return sorted[std::min(index, sorted.size() - 1)];
}

Distribution percentiles(const std::vector<double>& sorted) {
  Distribution d;
  if (sorted.empty()) return d;
  d.p50 = nearest_rank(sorted, 0.50);
  d.p95 = nearest_rank(sorted, 0.95);
  d.p99 = nearest_rank(sorted, 0.99);
  return d;
}

// The mean of the first `n` values, n >= 1.
double mean_of_first(const std::vector<double>& values, std::size_t n) {
  double sum = 0.0;
  for (std::size_t i = 0; i < n; ++i) sum += values[i];
  return sum / static_cast<double>(n);
}

Distribution distribution(std::vector<double> values) {
  if (values.empty()) return {};
  std::sort(values.begin(), values.end());
  Distribution d = percentiles(values);
  d.mean = mean_of_first(values, values.size());
  return d;
}

}  // namespace

double MonteCarloSummary::unfinished_share() const {
  return runs > 0 ? static_cast<double>(runs - finished) / runs : 0.0;
}

double MonteCarloSummary::time_quantile_s(double p) const {
  TRANSIENT_CHECK(p > 0.0 && p <= 1.0);
  return sorted_time_s.empty() ? 0.0 : nearest_rank(sorted_time_s, p);
}

std::vector<RunResult> run_many(const Scenario& scenario, const MonteCarloOptions& options) {
  return internal::run_seeded<Simulator>(scenario, options);
}

MonteCarloSummary summarize(const std::vector<RunResult>& results) {
  MonteCarloSummary s;
  s.runs = static_cast<int>(results.size());
  std::vector<double> costs;
  std::vector<double> revocations;
  std::vector<double> redone;
  int missed = 0;
  for (const auto& r : results) {
    if (r.finished) ++s.finished;
    s.sorted_time_s.push_back(r.finished ? r.time_s : kUnfinished);
    if (r.failed) ++s.failed;
    if (r.stopped_at_budget) ++s.budget_stops;
    if (r.request_cap) ++s.request_caps;
    if (r.missed_deadline) ++missed;
    costs.push_back(r.cost_usd);
    revocations.push_back(r.revocations);
    redone.push_back(r.redone_steps);
    s.events += r.events;
  }
  std::sort(s.sorted_time_s.begin(), s.sorted_time_s.end());
  s.time_s = percentiles(s.sorted_time_s);
  // The finished runs' times are the finite ones, first in the sorted list.
  if (s.runs > 0)
    s.time_s.mean = s.finished > 0 ? mean_of_first(s.sorted_time_s, s.finished) : kUnfinished;
  s.cost_usd = distribution(std::move(costs));
  s.revocations = distribution(std::move(revocations));
  s.redone_steps = distribution(std::move(redone));
  s.mean_revocations = s.revocations.mean;
  s.mean_redone_steps = s.redone_steps.mean;
  if (s.runs > 0) s.deadline_miss_probability = static_cast<double>(missed) / s.runs;
  return s;
}

Histogram histogram(const std::vector<double>& values, int bins) {
  TRANSIENT_CHECK_GE(bins, 1);
  Histogram h;
  if (values.empty()) return h;
  const auto [low, high] = std::minmax_element(values.begin(), values.end());
  if (*low == *high) {
    h.edges = {*low, *high};
    h.counts = {static_cast<int>(values.size())};
    return h;
  }
  const double width = (*high - *low) / bins;
  for (int i = 0; i <= bins; ++i) h.edges.push_back(i == bins ? *high : *low + width * i);
  h.counts.assign(static_cast<std::size_t>(bins), 0);
  for (double v : values) {
    const int bin = std::min(bins - 1, static_cast<int>((v - *low) / width));
    ++h.counts[static_cast<std::size_t>(bin)];
  }
  return h;
}

MonteCarloSummary run_monte_carlo(const Scenario& scenario, const MonteCarloOptions& options) {
  return summarize(run_many(scenario, options));
}

}  // namespace transient::sim
