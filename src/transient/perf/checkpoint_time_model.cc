#include "transient/perf/checkpoint_time_model.h"

#include <Eigen/Dense>

#include "transient/core/error.h"

namespace transient::perf {
namespace {

// `transient fit --data ../shared/data/cmdare` on CM-DARE's checkpoint tables (cmdare/checkpoint/
// and figures/checkpoint_size_vs_duration.csv), rounded to 10 digits.
constexpr double kRemoteFixedS = 3.493057435;
constexpr double kRemoteSecondsPerMb = 0.01873424114;
constexpr double kLocalFixedS = 0.5359702009;
constexpr double kLocalSecondsPerMb = 0.003343699013;
constexpr double kSizeFixedMb = 2.538601369;
constexpr double kSizePerWeightMb = 1.932686675;

// Least squares y = a + b x; returns (a, b).
std::pair<double, double> line_fit(const std::vector<double>& x, const std::vector<double>& y) {
  Eigen::MatrixXd a(x.size(), 2);
  Eigen::VectorXd b(y.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    a(i, 0) = 1.0;
    a(i, 1) = x[i];
    b[i] = y[i];
  }
  const Eigen::VectorXd solution = a.colPivHouseholderQr().solve(b);
  return {solution[0], solution[1]};
}

}  // namespace

CheckpointTimeModel::CheckpointTimeModel(double fixed_s, double seconds_per_mb,
                                         double size_fixed_mb, double size_per_weight_mb)
    : fixed_s_(fixed_s),
      seconds_per_mb_(seconds_per_mb),
      size_fixed_mb_(size_fixed_mb),
      size_per_weight_mb_(size_per_weight_mb) {}

CheckpointTimeModel CheckpointTimeModel::builtin(Storage storage) {
  if (storage == Storage::remote_bucket) {
    return CheckpointTimeModel(kRemoteFixedS, kRemoteSecondsPerMb, kSizeFixedMb, kSizePerWeightMb);
  }
  return CheckpointTimeModel(kLocalFixedS, kLocalSecondsPerMb, kSizeFixedMb, kSizePerWeightMb);
}

CheckpointTimeModel CheckpointTimeModel::fit(const std::vector<CheckpointMeasurement>& rows,
                                             Storage storage) {
  std::vector<double> size, duration, weights_mb, size_with_weights;
  for (const auto& row : rows) {
    const double d = storage == Storage::remote_bucket ? row.duration_s : row.local_duration_s;
    if (d > 0) {
      size.push_back(row.size_mb);
      duration.push_back(d);
    }
    if (row.parameters > 0) {
      weights_mb.push_back(4.0 * row.parameters / 1e6);
      size_with_weights.push_back(row.size_mb);
    }
  }
  if (size.size() < 3 || weights_mb.size() < 3) {
    throw InputError(
        "the checkpoint model needs at least 3 checkpoint durations and 3 sizes "
        "with parameter counts; the data has " +
        std::to_string(size.size()) + " and " + std::to_string(weights_mb.size()));
  }
  const auto [fixed_s, seconds_per_mb] = line_fit(size, duration);
  const auto [size_fixed, size_per_weight] = line_fit(weights_mb, size_with_weights);
  return CheckpointTimeModel(fixed_s, seconds_per_mb, size_fixed, size_per_weight);
}

double CheckpointTimeModel::size_mb(const Workload& workload) const {
  return size_fixed_mb_ + size_per_weight_mb_ * workload.gradient_bytes / 1e6;
}

nlohmann::json CheckpointTimeModel::to_json() const {
  return {{"fixed_s", fixed_s_},
          {"seconds_per_mb", seconds_per_mb_},
          {"size_fixed_mb", size_fixed_mb_},
          {"size_per_weight_mb", size_per_weight_mb_}};
}

}  // namespace transient::perf
