// How long writing a checkpoint takes, against its size: CM-DARE measured TensorFlow checkpoints
// of 20 CNNs to a remote bucket (GCS) and to the local disk; both grow linearly with the size:
//   duration_s = fixed_s + size_mb x seconds_per_mb.
// The size of a workload's checkpoint is estimated from its gradient bytes the same way
// (TensorFlow's checkpoints hold the weights, the optimizer's slots and the graph):
//   size_mb = size_fixed_mb + size_per_weight_mb x gradient_bytes / 1e6.
// The simulator calls duration_s(workload). Plain value type; safe to share.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "transient/perf/measurement_set.h"
#include "transient/perf/workload.h"

namespace transient::perf {

class CheckpointTimeModel {
 public:
  enum class Storage { remote_bucket, local_disk };

  CheckpointTimeModel(double fixed_s, double seconds_per_mb, double size_fixed_mb,
                      double size_per_weight_mb);

  // Fitted on CM-DARE's checkpoint measurements (cmdare/checkpoint/, figures/
  // checkpoint_size_vs_duration.csv) by `transient fit`; a test refits and compares.
  static CheckpointTimeModel builtin(Storage storage);
  // Least squares on `measurements` (rows without a duration for `storage` are left out).
  // Throws InputError with fewer than 3 usable rows.
  static CheckpointTimeModel fit(const std::vector<CheckpointMeasurement>& measurements,
                                 Storage storage);

  double duration_s(double size_mb) const { return fixed_s_ + seconds_per_mb_ * size_mb; }
  double size_mb(const Workload& workload) const;
  double duration_s(const Workload& workload) const { return duration_s(size_mb(workload)); }

  double fixed_s() const { return fixed_s_; }
  double seconds_per_mb() const { return seconds_per_mb_; }
  nlohmann::json to_json() const;

 private:
  double fixed_s_;
  double seconds_per_mb_;
  double size_fixed_mb_;
  double size_per_weight_mb_;
};

}  // namespace transient::perf
