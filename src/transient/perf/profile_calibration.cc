#include "transient/perf/profile_calibration.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "transient/core/bounds.h"
#include "transient/core/error.h"
#include "transient/perf/trainer_calibration.h"

namespace transient::perf {

ProfileCalibration calibrate_profile(const Workload& profile, const MeasurementSet& data,
                                     const std::string& device) {
  if (data.trainer_steps.empty()) {
    throw InputError(
        "no trainer steps.csv in --data; a profile is calibrated on the job directories of "
        "`transient train` that ran its model");
  }
  if (device.empty()) {
    throw InputError("the device the records were measured on is unknown: give --device NAME");
  }
  const TrainerCalibrationResult fit = calibrate_trainer(data);
  if (fit.models.size() != 1) {
    std::string names;
    for (const auto& c : fit.models) names += (names.empty() ? "" : ", ") + c.model;
    throw InputError("the records in --data are of " + std::to_string(fit.models.size()) +
                     " models (" + names +
                     "); a profile is calibrated on the jobs of its model only: point --data at "
                     "those");
  }
  const TrainerCalibration& c = fit.models.front();
  // A profile that names its model (`transient profile --model`) describes that network only:
  // another network's records would give it their step. Records without a job.json name none.
  if (!profile.model.empty() && c.model != "unknown" && c.model != profile.model) {
    throw InputError("--data: the trainer records are of model " + c.model +
                     " (job.json) and the profile " + profile.name + " is of model " +
                     profile.model + "; accepted: the job directories of `transient train` that " +
                     "ran " + profile.model);
  }
  std::vector<double> per_worker;
  ProfileCalibration out;
  for (const auto& step : data.trainer_steps) {
    per_worker.push_back(step.batch / std::max(1, step.workers));
    out.max_workers = std::max(out.max_workers, step.workers);
  }
  std::sort(per_worker.begin(), per_worker.end());
  const std::size_t n = per_worker.size();
  // A whole number of samples, as a profile holds it (128 among 3 workers: 43).
  const double batch = std::max(
      1.0,
      std::round(n % 2 ? per_worker[n / 2] : 0.5 * (per_worker[n / 2 - 1] + per_worker[n / 2])));
  const double step_s = c.step_s(1, batch);
  if (!(step_s >= 1e-6) || !bounds::kDurationS.contains(step_s)) {
    throw InputError("the records give a step of " + std::to_string(step_s) + " s for " +
                     std::to_string(batch) +
                     " samples per worker; accepted: 1e-6 s to 30 days, as a profile holds it");
  }
  std::set<int> threads;
  for (const auto& step : data.trainer_steps) {
    const auto found = data.trainer_threads.find(step.source);
    threads.insert(found == data.trainer_threads.end() ? 0 : found->second);
  }
  out.threads = threads.size() == 1 ? *threads.begin() : 0;
  out.workload = profile;
  out.previous = profile.measured;
  out.workload.batch_per_worker = static_cast<int>(batch);
  out.workload.measured = MeasuredStep{device, step_s, out.threads};
  out.workload.source = profile.source + (profile.source.empty() ? "" : "; ") +
                        "step calibrated on " + std::to_string(n) +
                        " steps of the trainer's records (transient fit) on " + device;
  out.trainer_model = c.model;
  out.steps = n;
  out.measured_samples_per_s = batch / step_s;
  out.allreduce_full_s = c.allreduce_full_s;
  return out;
}

}  // namespace transient::perf
