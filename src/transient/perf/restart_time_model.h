// How long restarting a training process takes before it trains again: CM-DARE measured
// TensorFlow restarts of ResNet-15/32 and Shake-Shake small/big, cold (a new server) and warm
// (the same server, caches filled); both grow with the model's graph, i.e. its tensor count:
//   restart_s = fixed_s + per_tensor_s x tensors.
// The simulator's restart-from-checkpoint recovery calls restart_s(workload). Plain value type.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "transient/perf/measurement_set.h"
#include "transient/perf/workload.h"

namespace transient::perf {

class RestartTimeModel {
 public:
  RestartTimeModel(double fixed_s, double per_tensor_s);

  // Fitted on cmdare/figures/tf_restart_cold_warm_seconds.csv by `transient fit`; a test refits.
  static RestartTimeModel builtin(bool warm);
  // Least squares over the measurements of one start type whose workload is a built-in one.
  // Throws InputError with fewer than 2 workloads.
  static RestartTimeModel fit(const std::vector<RestartMeasurement>& measurements, bool warm);

  double restart_s(const Workload& workload) const {
    return fixed_s_ + per_tensor_s_ * workload.tensors;
  }
  double fixed_s() const { return fixed_s_; }
  double per_tensor_s() const { return per_tensor_s_; }
  nlohmann::json to_json() const;

 private:
  double fixed_s_;
  double per_tensor_s_;
};

}  // namespace transient::perf
