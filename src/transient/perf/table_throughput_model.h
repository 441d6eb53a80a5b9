// The `table` throughput model: measured cluster speeds by GPU model and worker count,
// interpolated between the measured counts.
//
// Rules (docs/scenarios.md repeats them):
// - Between two measured worker counts the speed is interpolated linearly; below the smallest
//   and above the largest it is scaled in proportion to the worker count from the nearest
//   measurement (so beyond CM-DARE's 8 workers it ignores parameter-server saturation).
// - Heterogeneous clusters of N workers in total: each worker runs at its own type's per-worker
//   rate at cluster size N, table(type, N) / N. For async-ps the rates add up (every update is a
//   step); for allreduce every worker waits for the slowest, so the speed is N times the slowest
//   per-worker rate, and the bottleneck is named as that GPU.
// Immutable after construction; safe to share between threads.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "transient/perf/throughput_model.h"

namespace transient::perf {

// One measurement: `workers` workers of `gpu` ran at `steps_per_s` global steps per second.
struct TablePoint {
  std::string gpu;           // GPU model as in InstanceType::gpu, e.g. "K80" (case-insensitive)
  int workers = 0;           // worker count, >= 1
  double steps_per_s = 0.0;  // measured cluster speed, > 0
};

class TableThroughputModel : public ThroughputModel {
 public:
  // `source` says where the points came from, for describe() and error messages.
  // REQUIRES: every point valid (InputError otherwise); at least one point.
  TableThroughputModel(std::vector<TablePoint> points, std::string source);

  // The built-in CM-DARE measurements (ICDCS 2020, one parameter server, batch 128, CIFAR-10)
  // for `workload`: "resnet-15", "resnet-32", "shake-shake-small", "shake-shake-big" (case and
  // dashes ignored). Throws InputError listing the workloads for another name.
  static TableThroughputModel cmdare(const std::string& workload);
  static std::vector<std::string> cmdare_workloads();

  // A CSV file with the columns gpu,workers,steps_per_s (one row per measurement). Throws
  // InputError naming file, line and column for a bad row.
  static TableThroughputModel from_csv(const std::string& path);

  std::string name() const override { return "table"; }
  std::string describe() const override;
  Prediction predict(const ClusterShape& cluster) const override;

  // Interpolated speed of `workers` workers of `gpu` alone. Throws InputError for an unknown GPU.
  double steps_per_s(const std::string& gpu, double workers) const;
  // The GPU models in the table, as written in the data.
  std::vector<std::string> gpus() const;

 private:
  struct Curve {
    std::string gpu;                             // as first written
    std::vector<std::pair<int, double>> points;  // (workers, steps/s), sorted by workers
  };
  const Curve& curve(const std::string& gpu) const;

  std::map<std::string, Curve> curves_;  // key: lower-case GPU name
  std::string source_;
};

}  // namespace transient::perf
