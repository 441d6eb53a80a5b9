#include "transient/perf/batch_scaling.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

#include "transient/core/error.h"
#include "transient/core/text.h"

namespace transient::perf {
namespace {

// The squared relative errors of one model's two throughputs, with `fixed_per_tensor_s` and the
// model's best per-sample time.
double squared_errors(const BatchMeasurement& m, double fixed_per_tensor_s) {
  const double fixed = fixed_per_tensor_s * m.tensors;
  const double step[2] = {m.small_batch / m.small_batch_samples_per_s,
                          m.large_batch / m.large_batch_samples_per_s};
  const double batch[2] = {static_cast<double>(m.small_batch), static_cast<double>(m.large_batch)};
  // Least squares of (a b + fixed) / t - 1 over the per-sample time a, in closed form.
  double num = 0, den = 0;
  for (int i = 0; i < 2; ++i) {
    num += batch[i] / step[i] * (1.0 - fixed / step[i]);
    den += (batch[i] / step[i]) * (batch[i] / step[i]);
  }
  const double a = num / den;
  double sum = 0;
  for (int i = 0; i < 2; ++i) {
    const double error = step[i] / (a * batch[i] + fixed) - 1.0;  // of the throughput
    sum += error * error;
  }
  return sum;
}

}  // namespace

const std::vector<BatchMeasurement>& tensorflow_benchmarks_2017() {
  // Tensors: 3 per convolution (kernel, batch-norm scale and offset, as CM-DARE's TensorFlow
  // counts give ResNet-32 104) and 2 per dense layer: ResNet-50 53 convolutions + 1 dense,
  // ResNet-152 155 + 1, Inception-v3 94 + 1 (auxiliary head left out), VGG16 13 + 3 with biases
  // and no batch norm.
  static const std::vector<BatchMeasurement> kTable = {
      {"K80", "inception3 (GCE)", 284, 32, 29.3, 64, 30.5},
      {"K80", "resnet50 (GCE)", 161, 32, 49.5, 64, 51.9},
      {"K80", "inception3 (AWS)", 284, 32, 29.9, 64, 30.8},
      {"K80", "resnet50 (AWS)", 161, 32, 49.0, 64, 51.5},
      {"P100", "inception3", 284, 32, 128.0, 64, 142.0},
      {"P100", "resnet50", 161, 32, 195.0, 64, 219.0},
      {"P100", "resnet152", 467, 32, 82.7, 64, 91.8},
      {"P100", "vgg16", 32, 32, 144.0, 64, 154.0},
  };
  return kTable;
}

BatchScaling BatchScaling::builtin() {
  // fit_fixed_per_tensor_s(tensorflow_benchmarks_2017()) per GPU, rounded to 4 digits.
  BatchScaling s;
  s.fixed_per_tensor_s = {{"K80", 3.187e-4}, {"P100", 1.868e-4}};
  s.fitted_gpu_tflops = {{"K80", 4.113}, {"P100", 9.526}};
  return s;
}

double BatchScaling::fixed_s(int tensors, const cloud::InstanceType& type) const {
  const std::string gpu = uppercase(type.gpu);
  auto found = fixed_per_tensor_s.find(gpu);
  if (found == fixed_per_tensor_s.end()) {
    // The fitted GPU nearest in TFLOPS (by ratio), as the analytic model's constants are chosen.
    double best = std::numeric_limits<double>::infinity();
    for (const auto& [name, tflops] : fitted_gpu_tflops) {
      const double distance = type.gpu_tflops > 0 ? std::abs(std::log(type.gpu_tflops / tflops))
                                                  : std::numeric_limits<double>::max();
      if (distance < best && fixed_per_tensor_s.count(name)) {
        best = distance;
        found = fixed_per_tensor_s.find(name);
      }
    }
  }
  return found == fixed_per_tensor_s.end() ? 0.0 : std::max(0, tensors) * found->second;
}

double BatchScaling::capped_fixed_s(double fixed_s, double reference_step_s) {
  return std::min(fixed_s, 0.95 * reference_step_s);
}

double BatchScaling::step_s(double reference_step_s, double fixed_s, double reference_batch,
                            double batch) {
  TRANSIENT_CHECK(reference_batch > 0 && batch > 0);
  const double fixed = capped_fixed_s(fixed_s, reference_step_s);
  return fixed + (reference_step_s - fixed) * batch / reference_batch;
}

double fit_fixed_per_tensor_s(const std::vector<BatchMeasurement>& measurements) {
  TRANSIENT_CHECK(!measurements.empty());
  auto cost = [&](double k) {
    double sum = 0;
    for (const auto& m : measurements) sum += squared_errors(m, k);
    return sum;
  };
  // A grid over 0..2 ms per tensor, then golden-section search around the best point.
  double best = 0, best_cost = cost(0);
  for (int i = 1; i <= 2000; ++i) {
    const double k = i * 1e-6;
    if (const double c = cost(k); c < best_cost) {
      best = k;
      best_cost = c;
    }
  }
  double lo = std::max(0.0, best - 1e-6), hi = best + 1e-6;
  const double ratio = (std::sqrt(5.0) - 1) / 2;
  for (int i = 0; i < 60; ++i) {
    const double a = hi - ratio * (hi - lo), b = lo + ratio * (hi - lo);
    if (cost(a) < cost(b)) {
      hi = b;
    } else {
      lo = a;
    }
  }
  return (lo + hi) / 2;
}

double predicted_samples_per_s(double fixed_s, int measured_batch, double measured_samples_per_s,
                               int batch) {
  const double step = measured_batch / measured_samples_per_s;
  return batch / BatchScaling::step_s(step, fixed_s, measured_batch, batch);
}

}  // namespace transient::perf
