#include "transient/perf/restart_time_model.h"

#include <Eigen/Dense>

#include "transient/core/error.h"

namespace transient::perf {
namespace {

// `transient fit --data ../shared/data/cmdare` on figures/tf_restart_cold_warm_seconds.csv,
// rounded to 10 digits.
constexpr double kColdFixedS = 70.48153335;
constexpr double kColdPerTensorS = 0.08896198762;
constexpr double kWarmFixedS = 9.852370625;
constexpr double kWarmPerTensorS = 0.09270187319;

}  // namespace

RestartTimeModel::RestartTimeModel(double fixed_s, double per_tensor_s)
    : fixed_s_(fixed_s), per_tensor_s_(per_tensor_s) {}

RestartTimeModel RestartTimeModel::builtin(bool warm) {
  return warm ? RestartTimeModel(kWarmFixedS, kWarmPerTensorS)
              : RestartTimeModel(kColdFixedS, kColdPerTensorS);
}

RestartTimeModel RestartTimeModel::fit(const std::vector<RestartMeasurement>& measurements,
                                       bool warm) {
  std::vector<std::pair<double, double>> points;  // (tensors, seconds)
  std::vector<int> distinct;
  for (const auto& m : measurements) {
    const Workload* workload = find_workload_or_null(m.workload);
    if (m.warm != warm || workload == nullptr) continue;
    points.emplace_back(workload->tensors, m.seconds);
    bool seen = false;
    for (int t : distinct) seen |= t == workload->tensors;
    if (!seen) distinct.push_back(workload->tensors);
  }
  if (distinct.size() < 2) {
    throw InputError(std::string("the restart model needs ") + (warm ? "warm" : "cold") +
                     " restart times of at least 2 built-in workloads with different tensor "
                     "counts");
  }
  Eigen::MatrixXd a(points.size(), 2);
  Eigen::VectorXd b(points.size());
  for (std::size_t i = 0; i < points.size(); ++i) {
    a(i, 0) = 1.0;
    a(i, 1) = points[i].first;
    b[i] = points[i].second;
  }
  const Eigen::VectorXd x = a.colPivHouseholderQr().solve(b);
  return RestartTimeModel(x[0], x[1]);
}

nlohmann::json RestartTimeModel::to_json() const {
  return {{"fixed_s", fixed_s_}, {"per_tensor_s", per_tensor_s_}};
}

}  // namespace transient::perf
