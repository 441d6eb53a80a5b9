// Fitting the analytic and fitted throughput models to measurements, and measuring how well they
// predict what they were not fitted on (leave-one-model-out cross-validation), as
// `transient fit` and docs/models.md report it.
//
// The analytic model is fitted in two stages: (1) one worker's step time as
//   efficiency-scaled compute per family + step overhead + tensors x worker_per_tensor_s
//   + 2 x bytes / (link x network_efficiency)
// by non-negative weighted least squares on relative error (Eigen), on single-worker speeds;
// (2) the parameter-server constants (ps_per_tensor_s, ps_network_gbps, contention_sharpness) by a
// grid search minimising the mean absolute percentage error of cluster speeds, ps_network_gbps at
// most the measured servers' link (ThroughputFitOptions::server_network_gbps). The fitted model
// replaces stage 1 by the regression chosen by cross-validation among a fixed list of forms
// (fitted_candidates()) and shares stage 2.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "transient/perf/analytic_throughput_model.h"
#include "transient/perf/fitted_throughput_model.h"
#include "transient/perf/measurement_set.h"

namespace transient::perf {

struct ThroughputFitOptions {
  // Network link of the measured workers (CM-DARE: GCE n1-standard-4 servers with one GPU,
  // as the gce-2019 catalog gives them).
  double worker_network_gbps = 8.0;
  // Nominal network link of the measured parameter servers (CM-DARE: an n1-standard-4, 8 Gbit/s
  // in gce-2019): stage 2's server link (ps_network_gbps) is fitted at most this.
  double server_network_gbps = 8.0;
};

// One candidate form of the fitted model.
struct FittedCandidate {
  std::string form;                   // "linear" or "log-linear"
  std::vector<std::string> features;  // fitted_features() names
  double ridge_lambda = 0.0;          // on standardised features; 0 = least squares
  std::string label() const;          // e.g. "log-linear(flops,tflops) ridge 0.3"
};
const std::vector<FittedCandidate>& fitted_candidates();
// The candidate with the lowest leave-one-model-out error on `points`.
FittedCandidate choose_candidate(const std::vector<SpeedMeasurement>& points,
                                 const ThroughputFitOptions& options);

// Stage 1 and 2 of the analytic model. REQUIRES: single-worker measurements of at least 5
// workloads (InputError otherwise); without cluster measurements the communication constants
// keep their defaults.
AnalyticParams fit_analytic(const MeasurementSet& data, const ThroughputFitOptions& options);
// The fitted model with `candidate`'s form, plus stage 2.
FittedParams fit_fitted(const MeasurementSet& data, const FittedCandidate& candidate,
                        const ThroughputFitOptions& options);

// Errors of one workload's predictions, in percent (absolute).
struct WorkloadError {
  std::string workload;
  std::string gpu;                  // "" = all GPUs
  std::vector<double> ape_percent;  // one per prediction
  // The same predictions' steps/s, predicted and measured, in the same order.
  std::vector<double> predicted_steps_per_s;
  std::vector<double> measured_steps_per_s;
  double mape() const;
  void add(double predicted_steps_per_s, double measured_steps_per_s);
};

// What a cross-validation leaves out of each fit: a workload (all its GPUs and worker counts) or a
// GPU model (all its workloads and worker counts).
enum class HeldOut { model, gpu };

struct CrossValidation {
  HeldOut held_out = HeldOut::model;
  std::vector<WorkloadError> analytic_single;  // per workload and GPU
  std::vector<WorkloadError> fitted_single;
  std::vector<WorkloadError> analytic_cluster;
  std::vector<WorkloadError> fitted_cluster;
  std::vector<std::pair<std::string, double>> candidate_mape;  // fitted candidates' single MAPE
  FittedCandidate chosen;                                      // the best candidate on all the data
  // fitted_single and fitted_cluster choose the candidate inside each fold (nested).
  // The single-worker folds' fits, by what each held out (workload or GPU name): the constants
  // that predicted analytic_single and fitted_single for it.
  std::map<std::string, AnalyticParams> analytic_folds;
  std::map<std::string, FittedParams> fitted_folds;
};

// Leave-one-model-out cross-validation of both models on `data`. A fitted candidate with more
// features than a fold (or a fold of the nested choice) has rows to fit is not a candidate; where
// none is left, the first the data fits is chosen. REQUIRES: single-worker speeds of at least 6
// workloads, the analytic model's 5 in each fold (InputError otherwise).
CrossValidation cross_validate(const MeasurementSet& data, const ThroughputFitOptions& options);

// Leave-one-GPU-out cross-validation: for every GPU model in the single-worker data, both models
// are fitted (both stages) on the other GPUs' measurements only and predict that GPU's
// single-worker and cluster speeds; the analytic model carries its constants across with
// gpu_time_factor(), the fitted model through its features (the GPU's TFLOPS or memory bandwidth).
// A fitted candidate with a feature that is constant in a fold (the GPU's TFLOPS, with one GPU
// left) cannot be fitted there and is not chosen. REQUIRES: single-worker speeds of at least 2 GPU
// models, each with 5 workloads (InputError otherwise). candidate_mape stays empty.
CrossValidation cross_validate_gpus(const MeasurementSet& data,
                                    const ThroughputFitOptions& options);

// Mean absolute percentage error of every prediction in `errors` (0 when there are none).
double mape_percent(const std::vector<WorkloadError>& errors);
// The same over the predictions for `gpu`.
double mape_percent(const std::vector<WorkloadError>& errors, const std::string& gpu);

// The model file `transient fit` writes: both models' constants, the cross-validation summary,
// and the files used.
struct PerfModelFile {
  AnalyticParams analytic;
  FittedParams fitted;
  nlohmann::json overheads;  // checkpoint and restart time models fitted, if the data had them
  nlohmann::json report;     // free-form summary (files used, MAPE)

  nlohmann::json to_json() const;
  static PerfModelFile load(const std::string& path);  // InputError naming the file
};

// Fits everything `data` supports and cross-validates.
PerfModelFile fit_perf_model(const MeasurementSet& data, const ThroughputFitOptions& options,
                             const CrossValidation& cv);

// docs/models.md's tables (Markdown) from a leave-one-model-out cross-validation and CM-DARE's
// published predictions.
std::string accuracy_tables(const MeasurementSet& data, const CrossValidation& cv);
// The tables of a leave-one-GPU-out cross-validation (Markdown).
std::string gpu_accuracy_tables(const CrossValidation& cv);
// Either cross-validation as data: every prediction with its measurement and error, and the
// MAPE per model, GPU and kind (`transient fit --cross-validate ... --json`).
nlohmann::json cross_validation_json(const CrossValidation& cv);

}  // namespace transient::perf
