// How a job's samples per step are shared among its workers: the one meaning of a step for
// `plan`, `predict`, `simulate` and `train`.
//
// A step is one update of the parameters. With all-reduce (the trainer) it is one synchronous
// step of the whole cluster:
// - `global` (the default, `--global-batch G`): every step trains on G samples, split among the
//   N workers (G / N each when they are alike; in proportion to speed otherwise). The job's
//   optimisation does not depend on N, and a worker's share shrinks as N grows, and with it the
//   GPU's efficiency (batch_scaling.h);
// - `per_worker` (`--per-worker-batch B`): every worker takes B samples, so a step trains on
//   B x N samples: each GPU keeps its efficiency, the step grows with the cluster, and adding
//   workers does not shorten a job of S steps (it trains on more samples per step).
// With asynchronous parameter servers each worker's update is a step of its own: both modes
// give each update the stated number of samples.
//
// `samples` = 0 stands for the workload's batch_per_worker (128 for CM-DARE's CNNs), so the
// default job is CM-DARE's "steps of batch 128". Plain value type.
#pragma once

#include <string>

namespace transient::perf {

struct JobBatch {
  enum class Mode {
    global,      // samples per step, split among the workers
    per_worker,  // samples per worker and step
  };
  Mode mode = Mode::global;
  int samples = 0;  // >= 1, or 0: the workload's batch_per_worker

  // The samples one step trains on with `workers` all-reduce workers; `reference` stands for
  // samples = 0. REQUIRES: workers >= 1, reference >= 1.
  double step_samples(int workers, int reference) const;
  // The samples of one worker when the `workers` are alike (the global batch divided by them).
  double worker_samples(int workers, int reference) const;
  // The most all-reduce workers that each get a sample of a step (a global batch's samples; 0:
  // no bound, a per-worker batch). REQUIRES: reference >= 1.
  int max_workers(int reference) const;
  // Throws InputError, in `transient train`'s words, when a global batch leaves one of the
  // `workers` all-reduce workers without a sample (3 samples for 4 workers: 0.75 each, which no
  // trainer runs); `what` names where the batch was given ("--global-batch"). The one check of
  // predict, plan and simulate. REQUIRES: reference >= 1.
  void require_a_sample_per_worker(int workers, int reference, const std::string& what) const;
  // "global batch 128" or "per-worker batch 32" (samples = 0: "global batch of the workload").
  std::string text(int reference) const;
};

}  // namespace transient::perf
