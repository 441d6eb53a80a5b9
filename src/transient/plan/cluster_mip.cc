#include "transient/plan/cluster_mip.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "CbcModel.hpp"
#include "CoinPackedMatrix.hpp"
#include "CoinPackedVector.hpp"
#include "OsiClpSolverInterface.hpp"
#include "transient/core/error.h"

namespace transient::plan {

ClusterMip::ClusterMip(std::vector<MipOption> options, double fixed_usd_per_h,
                       double cap_steps_per_s, int max_servers, bool homogeneous, int max_regions)
    : options_(std::move(options)),
      fixed_usd_per_h_(fixed_usd_per_h),
      cap_steps_per_s_(cap_steps_per_s),
      max_servers_(max_servers),
      homogeneous_(homogeneous),
      max_regions_(max_regions),
      max_count_(options_.empty() ? 0 : static_cast<int>(options_[0].steps_per_s.size())) {
  TRANSIENT_CHECK(max_servers_ >= 1);
  for (const auto& o : options_) {
    TRANSIENT_CHECK(static_cast<int>(o.steps_per_s.size()) == max_count_);
  }
}

MipChoice ClusterMip::choice_from(const std::vector<int>& counts) const {
  MipChoice c;
  c.counts = counts;
  c.usd_per_h = fixed_usd_per_h_;
  for (std::size_t o = 0; o < options_.size(); ++o) {
    if (counts[o] == 0) continue;
    c.usd_per_h += options_[o].usd_per_h * counts[o];
    c.steps_per_s += options_[o].steps_per_s[counts[o] - 1];
  }
  c.steps_per_s = std::min(c.steps_per_s, cap_steps_per_s_);
  return c;
}

std::optional<MipChoice> ClusterMip::solve(const MipConstraints& constraints, bool fastest,
                                           double lambda) {
  if (options_.empty() || max_count_ == 0) return std::nullopt;
  ++solves_;
  const int options = static_cast<int>(options_.size());
  const int y_columns = options * max_count_;
  const int t = y_columns;  // the speed column
  const double inf = OsiClpInfinity;
  auto y = [&](int o, int n) { return o * max_count_ + (n - 1); };
  // z[r] after t, only when the regions are limited below their number.
  std::map<int, int> region_column;
  for (const auto& o : options_) region_column.emplace(o.region, 0);
  const bool limit_regions =
      max_regions_ > 0 && max_regions_ < static_cast<int>(region_column.size());
  int columns = y_columns + 1;
  if (limit_regions) {
    for (auto& [region, column] : region_column) column = columns++;
  }

  std::vector<double> column_lower(columns, 0.0), column_upper(columns, 1.0);
  std::vector<double> objective(columns, 0.0);
  column_lower[t] = constraints.min_steps_per_s;
  column_upper[t] = std::isfinite(cap_steps_per_s_) ? cap_steps_per_s_ : inf;
  for (int o = 0; o < options; ++o) {
    for (int n = 1; n <= max_count_; ++n) {
      objective[y(o, n)] = fastest ? 0.0 : options_[o].usd_per_h * n;
    }
  }
  objective[t] = fastest ? -1.0 : -lambda;

  CoinPackedMatrix rows(false, 0, 0);
  std::vector<double> row_lower, row_upper;
  auto add_row = [&](const CoinPackedVector& row, double lower, double upper) {
    rows.appendRow(row);
    row_lower.push_back(lower);
    row_upper.push_back(upper);
  };
  CoinPackedVector servers, selected, speed, budget;
  for (int o = 0; o < options; ++o) {
    CoinPackedVector one_count;
    for (int n = 1; n <= max_count_; ++n) {
      one_count.insert(y(o, n), 1.0);
      servers.insert(y(o, n), n);
      selected.insert(y(o, n), 1.0);
      speed.insert(y(o, n), -options_[o].steps_per_s[n - 1]);
      budget.insert(y(o, n), options_[o].usd_per_h * n);
    }
    add_row(one_count, -inf, 1.0);
  }
  add_row(servers, -inf, max_servers_);
  std::map<int, CoinPackedVector> kinds;
  for (int o = 0; o < options; ++o) {
    if (options_[o].kind < 0) continue;
    for (int n = 1; n <= max_count_; ++n) kinds[options_[o].kind].insert(y(o, n), 1.0);
  }
  for (const auto& [kind, row] : kinds) add_row(row, -inf, 1.0);
  if (limit_regions) {
    for (int o = 0; o < options; ++o) {
      CoinPackedVector in_region;  // sum over n of y[o][n] <= z[r(o)]
      for (int n = 1; n <= max_count_; ++n) in_region.insert(y(o, n), 1.0);
      in_region.insert(region_column.at(options_[o].region), -1.0);
      add_row(in_region, -inf, 0.0);
    }
    CoinPackedVector regions;
    for (const auto& [region, column] : region_column) regions.insert(column, 1.0);
    add_row(regions, -inf, max_regions_);
  }
  add_row(selected, 1.0, homogeneous_ ? 1.0 : inf);
  speed.insert(t, 1.0);
  add_row(speed, -inf, 0.0);  // t <= sum of the selected speeds
  if (std::isfinite(constraints.max_usd_per_step)) {
    budget.insert(t, -3600.0 * constraints.max_usd_per_step);
    add_row(budget, -inf, -fixed_usd_per_h_);  // P <= 3600 (B / steps) t
  }
  for (const auto& counts : constraints.excluded) {
    // No-good cut: sum over the chosen y minus sum over the others <= |chosen| - 1.
    CoinPackedVector cut;
    int chosen = 0;
    for (int o = 0; o < options; ++o) {
      for (int n = 1; n <= max_count_; ++n) {
        const bool in = counts[o] == n;
        chosen += in ? 1 : 0;
        cut.insert(y(o, n), in ? 1.0 : -1.0);
      }
    }
    add_row(cut, -inf, chosen - 1.0);
  }

  OsiClpSolverInterface solver;
  solver.messageHandler()->setLogLevel(0);
  solver.loadProblem(rows, column_lower.data(), column_upper.data(), objective.data(),
                     row_lower.data(), row_upper.data());
  for (int c = 0; c < columns; ++c) {
    if (c != t) solver.setInteger(c);
  }
  CbcModel model(solver);
  model.setLogLevel(0);
  model.messageHandler()->setLogLevel(0);
  model.setAllowableGap(1e-9);
  model.setAllowableFractionGap(1e-9);
  model.branchAndBound();
  if (model.isProvenInfeasible() || model.bestSolution() == nullptr) return std::nullopt;
  const double* x = model.bestSolution();
  std::vector<int> counts(options, 0);
  for (int o = 0; o < options; ++o) {
    for (int n = 1; n <= max_count_; ++n) {
      if (x[y(o, n)] > 0.5) counts[o] = n;
    }
  }
  return choice_from(counts);
}

std::optional<MipChoice> ClusterMip::fastest(const MipConstraints& constraints) {
  const std::optional<MipChoice> fastest = solve(constraints, true, 0.0);
  if (!fastest) return fastest;
  // Among the choices as fast, the cheapest: a second programme with the speed as a floor.
  MipConstraints as_fast = constraints;
  as_fast.min_steps_per_s =
      std::max(constraints.min_steps_per_s, fastest->steps_per_s * (1 - 1e-9));
  const std::optional<MipChoice> cheaper = cheapest(as_fast);
  return cheaper ? cheaper : fastest;
}

std::optional<MipChoice> ClusterMip::lowest_price(const MipConstraints& constraints) {
  return solve(constraints, false, 0.0);
}

std::optional<MipChoice> ClusterMip::cheapest(const MipConstraints& constraints) {
  std::optional<MipChoice> best = solve(constraints, false, 0.0);
  for (int iteration = 0; best && iteration < 20; ++iteration) {
    const double lambda = best->usd_per_h / best->steps_per_s;
    std::optional<MipChoice> next = solve(constraints, false, lambda);
    if (!next) break;
    const double next_ratio = next->usd_per_h / next->steps_per_s;
    if (next_ratio >= lambda * (1.0 - 1e-9)) break;  // F(lambda) = 0: best is optimal
    best = next;
  }
  return best;
}

}  // namespace transient::plan
