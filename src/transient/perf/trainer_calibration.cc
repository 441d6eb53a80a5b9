#include "transient/perf/trainer_calibration.h"

#include <Eigen/Dense>

#include <algorithm>
#include <map>

namespace transient::perf {
namespace {

double median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

}  // namespace

double TrainerCalibration::step_s(int workers, double global_batch) const {
  const double n = std::max(1, workers);
  return other_s + compute_fixed_s + compute_per_sample_s * global_batch / n +
         (n - 1) / n * allreduce_full_s;
}

TrainerCalibrationResult calibrate_trainer(const MeasurementSet& data) {
  TrainerCalibrationResult result;
  std::map<std::string, std::vector<const TrainerStepMeasurement*>> by_job;
  for (const auto& step : data.trainer_steps) by_job[step.source].push_back(&step);
  auto model_of = [&](const std::string& job) {
    const auto found = data.trainer_models.find(job);
    return found == data.trainer_models.end() ? std::string("unknown") : found->second;
  };
  std::map<std::string, std::vector<const TrainerStepMeasurement*>> by_model;
  for (const auto& [job, steps] : by_job) {
    auto& all = by_model[model_of(job)];
    all.insert(all.end(), steps.begin(), steps.end());
  }
  for (const auto& [model, steps] : by_model) {
    TrainerCalibration c;
    c.model = model;
    Eigen::MatrixXd a(steps.size(), 2);
    Eigen::VectorXd b(steps.size());
    std::vector<double> other, allreduce;
    for (std::size_t i = 0; i < steps.size(); ++i) {
      const auto& s = *steps[i];
      a(i, 0) = 1.0;
      a(i, 1) = s.batch / s.workers;
      b[i] = s.compute_s;
      if (s.workers > 1) allreduce.push_back(s.allreduce_s * s.workers / (s.workers - 1.0));
    }
    // One per-worker batch size only: the fixed part cannot be told from the per-sample part.
    if ((a.col(1).array() - a(0, 1)).abs().maxCoeff() < 1e-9) {
      c.compute_per_sample_s = b.mean() / a(0, 1);
    } else {
      const Eigen::VectorXd x = a.colPivHouseholderQr().solve(b);
      c.compute_fixed_s = std::max(0.0, x[0]);
      c.compute_per_sample_s = std::max(0.0, x[1]);
    }
    c.allreduce_full_s = median(allreduce);
    for (const auto* s : steps) {
      other.push_back(s->step_s - s->compute_s - s->allreduce_s);
    }
    c.other_s = std::max(0.0, median(other));
    result.models.push_back(c);
  }
  for (const auto& [job, steps] : by_job) {
    TrainerRunCheck check;
    check.steps_csv = job;
    check.model = model_of(job);
    std::vector<double> batch, step;
    for (const auto* s : steps) {
      check.workers = std::max(check.workers, s->workers);
      batch.push_back(s->batch);
      step.push_back(s->step_s);
    }
    check.global_batch = median(batch);
    check.measured_samples_per_s = check.global_batch / median(step);
    for (const auto& c : result.models) {
      if (c.model == check.model) {
        check.predicted_samples_per_s = c.samples_per_s(check.workers, check.global_batch);
      }
    }
    result.runs.push_back(check);
  }
  return result;
}

}  // namespace transient::perf
