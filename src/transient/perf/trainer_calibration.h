// The speed of our own trainer on this machine, calibrated from its records (steps.csv of job
// directories, grouped by the model named in job.json), and predicted for other worker counts
// with the same global batch (the trainer's default: the batch is split among the workers):
//
//   step_s(n) = other_s + compute_fixed_s + compute_per_sample_s x global_batch / n
//               + (n - 1) / n x allreduce_full_s
//
// compute is fitted by least squares on every step's slowest worker against its per-worker batch;
// other_s (data loading, optimizer) is the median of what is left; the ring all-reduce moves
// 2(n-1)/n of the gradient, so allreduce_full_s (the all-reduce time per (n-1)/n) is the median
// of allreduce_s x n / (n-1) over steps with several workers.
#pragma once

#include <string>
#include <vector>

#include "transient/perf/measurement_set.h"

namespace transient::perf {

struct TrainerCalibration {
  std::string model;                // as job.json names it, e.g. "cnn"
  double compute_fixed_s = 0;       // per step, whatever the batch
  double compute_per_sample_s = 0;  // per sample of a worker's batch
  double other_s = 0;               // data loading and optimizer per step
  double allreduce_full_s = 0;      // 0 if no run had several workers

  double step_s(int workers, double global_batch) const;
  double samples_per_s(int workers, double global_batch) const {
    return global_batch / step_s(workers, global_batch);
  }
};

// One job's measured speed beside the calibration's prediction.
struct TrainerRunCheck {
  std::string steps_csv;  // the job's steps.csv
  std::string model;
  int workers = 0;                    // the most workers in a step
  double global_batch = 0;            // median samples per step
  double measured_samples_per_s = 0;  // global batch / median step time
  double predicted_samples_per_s = 0;
};

struct TrainerCalibrationResult {
  std::vector<TrainerCalibration> models;  // one per model name
  std::vector<TrainerRunCheck> runs;       // every job
};

// Calibrates on data.trainer_steps (jobs without a job.json count as model "unknown"). Returns no
// models if there are no trainer steps.
TrainerCalibrationResult calibrate_trainer(const MeasurementSet& data);

}  // namespace transient::perf
