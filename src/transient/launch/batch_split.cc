#include "transient/launch/batch_split.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numeric>

#include "transient/core/error.h"

namespace transient::launch {
namespace {

bool valid_speed(double speed) { return std::isfinite(speed) && speed > 0.0; }

// The speeds divided by the largest valid one (so their sum cannot overflow), invalid ones
// replaced by the mean of the valid ones, or all 1 if none is valid.
std::vector<long double> cleaned_speeds(const std::vector<double>& speeds) {
  double max_speed = 0.0;
  for (double speed : speeds) {
    if (valid_speed(speed)) max_speed = std::max(max_speed, speed);
  }
  if (max_speed == 0.0) return std::vector<long double>(speeds.size(), 1.0L);
  std::vector<long double> scaled(speeds.size(), 0.0L);
  long double valid_sum = 0.0L;
  int valid_count = 0;
  for (std::size_t i = 0; i < speeds.size(); ++i) {
    if (!valid_speed(speeds[i])) continue;
    scaled[i] = static_cast<long double>(speeds[i]) / max_speed;
    valid_sum += scaled[i];
    ++valid_count;
  }
  const long double mean = valid_sum / valid_count;
  for (std::size_t i = 0; i < speeds.size(); ++i) {
    if (!valid_speed(speeds[i])) scaled[i] = mean;
  }
  return scaled;
}

}  // namespace

std::vector<std::int64_t> split_batch_by_speed(std::int64_t batch,
                                               const std::vector<double>& speeds) {
  TRANSIENT_CHECK_GE(batch, 0);
  const std::size_t n = speeds.size();
  std::vector<std::int64_t> sizes(n, 0);
  if (n == 0) return sizes;

  const std::vector<long double> scaled = cleaned_speeds(speeds);
  const long double total = std::accumulate(scaled.begin(), scaled.end(), 0.0L);
  std::vector<long double> quotas(n);
  std::vector<long double> fractions(n);
  std::int64_t assigned = 0;
  for (std::size_t i = 0; i < n; ++i) {
    // Multiplying before dividing keeps equal speeds exact: the quota is then batch / n itself.
    quotas[i] = static_cast<long double>(batch) * scaled[i] / total;
    const long double whole = std::floor(quotas[i]);
    sizes[i] = static_cast<std::int64_t>(whole);
    fractions[i] = quotas[i] - whole;
    assigned += sizes[i];
  }

  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return fractions[a] > fractions[b]; });
  // The floors leave fewer than n samples over; the loops also absorb rounding of the quotas
  // in either direction, so the sum is exact whatever the speeds.
  std::int64_t left = batch - assigned;
  for (std::size_t k = 0; left > 0; k = (k + 1) % n, --left) ++sizes[order[k]];
  for (std::size_t k = n - 1; left < 0; k = (k + n - 1) % n) {
    if (sizes[order[k]] > 0) {
      --sizes[order[k]];
      ++left;
    }
  }

  if (batch >= static_cast<std::int64_t>(n)) {
    for (std::size_t i = 0; i < n; ++i) {
      if (sizes[i] > 0) continue;
      // Take the sample from the worker served most above its quota; one with 2 or more exists
      // since the sizes sum to batch >= n while worker i has none.
      std::size_t donor = n;
      for (std::size_t j = 0; j < n; ++j) {
        if (sizes[j] < 2) continue;
        if (donor == n || sizes[j] - quotas[j] > sizes[donor] - quotas[donor]) donor = j;
      }
      TRANSIENT_CHECK_LT(donor, n);
      --sizes[donor];
      sizes[i] = 1;
    }
  }
  return sizes;
}

std::vector<std::int64_t> split_batch(std::int64_t batch, int workers) {
  TRANSIENT_CHECK_GE(workers, 1);
  TRANSIENT_CHECK_GE(batch, 0);
  std::vector<std::int64_t> sizes(static_cast<std::size_t>(workers), batch / workers);
  for (std::int64_t r = 0; r < batch % workers; ++r) sizes[static_cast<std::size_t>(r)] += 1;
  return sizes;
}

std::vector<std::int64_t> member_shares(std::int64_t batch, const std::vector<double>& speeds) {
  const int members = static_cast<int>(std::max<std::size_t>(1, speeds.size()));
  const bool known =
      !speeds.empty() && std::all_of(speeds.begin(), speeds.end(), [](double s) { return s > 0; });
  if (!known) return split_batch(batch, members);
  const auto [slowest, fastest] = std::minmax_element(speeds.begin(), speeds.end());
  if (*fastest <= 1.25 * *slowest) return split_batch(batch, members);
  return split_batch_by_speed(batch, speeds);
}

std::optional<std::vector<LostShare>> lost_shares(const SampleRange& step,
                                                  const std::vector<SampleRange>& kept) {
  // The members holding samples, in the order of their ranges.
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < kept.size(); ++i) {
    if (kept[i].count < 0) return std::nullopt;
    if (kept[i].count == 0) continue;
    if (kept[i].begin < step.begin || kept[i].end() > step.end()) return std::nullopt;
    order.push_back(i);
  }
  if (order.empty()) return std::nullopt;
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return kept[a].begin < kept[b].begin; });
  std::vector<LostShare> shares(kept.size());
  shares[order.front()].before = kept[order.front()].begin - step.begin;
  for (std::size_t k = 0; k + 1 < order.size(); ++k) {
    const std::int64_t gap = kept[order[k + 1]].begin - kept[order[k]].end();
    if (gap < 0) return std::nullopt;  // an overlap
    shares[order[k]].after = gap / 2;
    shares[order[k + 1]].before = gap - gap / 2;
  }
  shares[order.back()].after = step.end() - kept[order.back()].end();
  return shares;
}

}  // namespace transient::launch
