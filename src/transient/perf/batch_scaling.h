// How a GPU's step time depends on the samples it takes per step, so that a worker's share of a
// fixed global batch can be priced (job_batch.h).
//
// A step has a part that the batch does not shrink (per layer: kernel launches, small operations,
// the update of each parameter tensor) and a part per sample. A worker whose step of b0 samples
// takes s seconds takes, with b samples,
//
//     step(b) = fixed + (s - fixed) x b / b0,   fixed = tensors x fixed_per_tensor_s[GPU],
//
// so its throughput is b / (b + b_half) of its peak, with b_half = fixed / (per-sample time):
// small for ImageNet models on a K80 (3 samples), large for CIFAR models (ResNet-32 on a K80:
// about 25). A GPU that was not fitted takes the constant of the fitted GPU nearest in TFLOPS.
// The fixed part is kept below 95% of the step at b0, so that a measured step shorter than the
// fitted fixed part (a profile on a GPU faster than any fitted) still has a part per sample.
//
// The constants are fitted on TensorFlow's published single-GPU benchmarks at batch 32 and 64
// (tensorflow_benchmarks_2017(), source named there); docs/models.md gives the fit and its
// leave-one-model-out error. Immutable value types.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "transient/cloud/instance_type.h"

namespace transient::perf {

// One model measured on one GPU at two batch sizes per GPU.
struct BatchMeasurement {
  std::string gpu;    // "K80", "P100"
  std::string model;  // e.g. "resnet50 (GCE)"
  int tensors = 0;    // trainable tensors: 3 per convolution with batch norm, 2 per dense layer
  int small_batch = 0;
  double small_batch_samples_per_s = 0.0;
  int large_batch = 0;
  double large_batch_samples_per_s = 0.0;
};

// TensorFlow's benchmarks of May 2017 (tensorflow/tensorflow, tensorflow/docs_src/performance/
// benchmarks.md): one GPU, synthetic ImageNet data, images/s at batch 32 ("other results") and
// 64; K80 on GCE n1-standard-32-k80x8 and AWS p2.8xlarge, P100 on a DGX-1.
const std::vector<BatchMeasurement>& tensorflow_benchmarks_2017();

struct BatchScaling {
  std::map<std::string, double> fixed_per_tensor_s;  // by GPU model: seconds per tensor per step
  std::map<std::string, double> fitted_gpu_tflops;   // the fitted GPUs' FP32 TFLOPS

  // Fitted on tensorflow_benchmarks_2017() by fit_fixed_per_tensor_s (a test refits).
  static BatchScaling builtin();

  // The fixed part of a step of a model with `tensors` parameter tensors on one GPU of `type`.
  double fixed_s(int tensors, const cloud::InstanceType& type) const;

  // A step of `batch` samples, given one of `reference_batch` samples that took
  // `reference_step_s` seconds and its fixed part. REQUIRES: batches > 0.
  static double step_s(double reference_step_s, double fixed_s, double reference_batch,
                       double batch);
  // The fixed part actually used for a step of `reference_step_s`: at most 95% of it.
  static double capped_fixed_s(double fixed_s, double reference_step_s);
};

// The fixed seconds per tensor that best explain `measurements` (all of one GPU): each model
// keeps its own per-sample time, the shared constant minimises the squared relative errors of
// the predicted throughputs. REQUIRES: measurements not empty.
double fit_fixed_per_tensor_s(const std::vector<BatchMeasurement>& measurements);

// The throughput at `batch` samples that the form predicts for a model measured at
// `measured_batch` (`measured_samples_per_s`), with `fixed_s` seconds fixed per step.
double predicted_samples_per_s(double fixed_s, int measured_batch, double measured_samples_per_s,
                               int batch);

}  // namespace transient::perf
