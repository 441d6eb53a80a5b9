// CM-DARE's cluster-scaling measurements as facts in code, so that `simulate` and `plan` work
// without the shared data directory. Source: cake-lab/CM-DARE (ICDCS 2020), the array behind the
// figure of speed against number of workers
// (../shared/data/cmdare/figures/speed_vs_num_workers.csv, mean column): TensorFlow asynchronous
// training on GCE, one parameter server, batch 128 per worker, CIFAR-10. A test checks these rows
// against the file.
#pragma once

#include <vector>

namespace transient::perf::internal {

struct CmdareSpeed {
  const char* workload;  // as CM-DARE names it, e.g. "ResNet-32", "ShakeShake-Small"
  const char* gpu;       // "K80", "P100"
  int workers;           // 1..8
  double steps_per_s;    // mean global steps per second
};

const std::vector<CmdareSpeed>& cmdare_cluster_speeds();

}  // namespace transient::perf::internal
