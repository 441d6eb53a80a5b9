// The `fitted` throughput model: CM-DARE's approach. A regression on measured features (the
// workload's FLOPs, parameters and tensors, the GPU's TFLOPS) predicts one worker's step time
// with one parameter server; the cluster's speed then follows the same parameter-server or
// all-reduce composition as the analytic model (internal/cluster_composition.h).
//
// Forms: "linear" (step_s = b0 + sum b_k x_k) and "log-linear" (log step_s = b0 + sum b_k
// log x_k; indicator features enter unlogged), fitted by least squares or ridge regression on
// standardised features (Eigen). `transient fit` chooses the form, features and ridge strength
// by leave-one-model-out cross-validation and records the choice. Immutable; safe to share.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "transient/cloud/instance_type.h"
#include "transient/perf/communication_params.h"
#include "transient/perf/throughput_model.h"
#include "transient/perf/workload.h"

namespace transient::perf {

namespace internal {
struct WorkerTime;
}  // namespace internal

struct FittedParams {
  std::string form = "log-linear";    // "linear" or "log-linear"
  std::vector<std::string> features;  // names from fitted_features()
  std::vector<double> coefficients;   // intercept first, then one per feature (raw units)
  double ridge_lambda = 0.0;          // 0 = ordinary least squares
  double cv_mape_percent = 0.0;       // leave-one-model-out error when chosen
  CommunicationParams communication;  // for the cluster composition
  std::string source;                 // what it was fitted on, one line

  // Fitted on CM-DARE's measurements by `transient fit --data ../shared/data/cmdare` (a test
  // refits and compares).
  static FittedParams builtin();

  // One worker's step time (s) with one parameter server, batch_per_worker samples: the
  // regression's, at least a millisecond (a linear fit can go negative far outside its data).
  double single_step_s(const Workload& workload, const cloud::InstanceType& type) const;
  // The regression's step time as it is: 0 or negative where a linear fit is extrapolated far
  // outside its data, inf where a log-linear one overflows. A model file's is checked with it.
  double regression_step_s(const Workload& workload, const cloud::InstanceType& type) const;

  nlohmann::json to_json() const;
  static FittedParams from_json(const nlohmann::json& json, const std::string& where);
};

// The feature names a FittedParams may use, with a line each for people.
const std::vector<std::pair<std::string, std::string>>& fitted_features();
// Feature `name` of a workload on a GPU server. Throws InputError for an unknown name.
double fitted_feature(const std::string& name, const Workload& workload,
                      const cloud::InstanceType& type);
// Whether `name` is a 0/1 indicator (entered unlogged in the log-linear form).
bool is_indicator_feature(const std::string& name);

class FittedThroughputModel : public ThroughputModel {
 public:
  FittedThroughputModel(Workload workload, FittedParams params);

  std::string name() const override { return "fitted"; }
  std::string describe() const override;
  Prediction predict(const ClusterShape& cluster) const override;
  // What predict() composes into the cluster's speed: a step time per worker group
  // (internal/cluster_composition.h), for a caller that composes the same workers under many
  // servers' constants (the fit's grid search, throughput_fitting.cc).
  std::vector<internal::WorkerTime> worker_times(const ClusterShape& cluster) const;

  const FittedParams& params() const { return params_; }

 private:
  Workload workload_;
  FittedParams params_;
  Workload at_fitted_batch_;  // workload_ at CM-DARE's batch, which the regression was fitted on
};

}  // namespace transient::perf
