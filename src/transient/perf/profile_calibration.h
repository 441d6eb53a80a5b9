// Calibrating a workload profile (workload.h) on our trainer's records of the model it describes:
// `transient fit --data JOB_DIR --profile PROFILE.json --calibrated-profile OUT.json`.
//
// `transient profile` times forward+backward and the optimizer step in a loop of its own; the
// trainer's steps.csv is the step as training ran it (data loading, the trainer's threads, the
// batch each worker really had). The calibrated profile is the input profile with
//   batch_per_worker = the records' per-worker batch (the median over steps of batch / workers),
//   measured = {device, one worker's step without its all-reduce at that batch, the jobs'
//               workers' threads where their summary.json say and agree}
// where the step is calibrate_trainer()'s (trainer_calibration.h): other_s + compute_fixed_s +
// compute_per_sample_s x batch. `predict --profile` and `plan --profile` use a measured step in
// place of the modelled compute on workers whose GPU model is `device`, and model the all-reduce
// or parameter-server transfers from the cluster's network, so one such worker is predicted at
// the records' speed; with several workers the communication is the model's, not the records'.
//
// What it cannot calibrate: a run on a CPU says nothing of a GPU (the profile's FLOPs, not the
// measurement, serve every other device), and FLOPs, parameters and tensors stay the profile's.
// Pure: no I/O.
#pragma once

#include <optional>
#include <string>

#include "transient/perf/measurement_set.h"
#include "transient/perf/workload.h"

namespace transient::perf {

struct ProfileCalibration {
  Workload workload;                  // the calibrated profile
  std::string trainer_model;          // the model named by the records' job.json ("unknown": none)
  std::size_t steps = 0;              // trainer steps it was calibrated on
  int max_workers = 0;                // the most workers in a recorded step
  double measured_samples_per_s = 0;  // one worker alone at batch_per_worker, by the calibration
  double allreduce_full_s = 0;  // the records' all-reduce x n/(n-1); 0 without several workers
  // The jobs' workers' intra-op threads (summary.json), when every job says and all agree; 0
  // otherwise. A CPU's step depends on it: a profile timed on all cores is faster than a worker
  // that had one of them.
  int threads = 0;
  std::optional<MeasuredStep> previous;  // the input profile's measured step, if any
};

// REQUIRES: data.trainer_steps not empty, all of one model (job.json), the profile's "model"
// where it names one; device not empty. Throws InputError otherwise, naming the models found.
ProfileCalibration calibrate_profile(const Workload& profile, const MeasurementSet& data,
                                     const std::string& device);

}  // namespace transient::perf
