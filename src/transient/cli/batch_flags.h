// `--global-batch G` and `--per-worker-batch B`, the job's batch (perf/job_batch.h), as `plan`
// and `predict` take them and `transient train` reads them: the throughput models get them as
// the `global_batch` / `per_worker_batch` parameters, which scenario files may carry too.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "transient/cli/validators.h"
#include "transient/core/bounds.h"
#include "transient/core/error.h"
#include "transient/perf/job_batch.h"
#include "transient/perf/registry.h"

namespace transient::cli {

struct BatchFlags {
  int global_batch = 0;      // --global-batch; 0 = not given
  int per_worker_batch = 0;  // --per-worker-batch; 0 = not given

  // Adds both options to `command`.
  void add_to(CLI::App& command) {
    command
        .add_option("--global-batch", global_batch,
                    "samples per step, split among the workers, as `transient train` does "
                    "(default: the workload's batch, 128)")
        ->transform(within(bounds::kBatch));
    command
        .add_option("--per-worker-batch", per_worker_batch,
                    "samples per worker and step instead: the step grows with the workers")
        ->transform(within(bounds::kBatch));
  }

  // The batch the flags give. Throws InputError when both are given.
  perf::JobBatch batch() const {
    if (global_batch > 0 && per_worker_batch > 0) {
      throw InputError(
          "--global-batch and --per-worker-batch exclude each other; accepted: one of them (a "
          "fixed global batch split among the workers, or a fixed batch per worker)");
    }
    perf::JobBatch out;
    if (per_worker_batch > 0) {
      out.mode = perf::JobBatch::Mode::per_worker;
      out.samples = per_worker_batch;
    } else {
      out.samples = global_batch;
    }
    return out;
  }

  // Where the global batch comes from, for an error line about it.
  std::string source() const {
    return global_batch > 0 ? "--global-batch" : "--global-batch (not given: the workload's batch)";
  }

  // The batch as the throughput models' parameters (none for the default).
  void set_params(perf::ThroughputParams& params) const {
    const perf::JobBatch b = batch();
    if (b.samples == 0) return;
    params.values[b.mode == perf::JobBatch::Mode::global ? "global_batch" : "per_worker_batch"] =
        std::to_string(b.samples);
  }
};

}  // namespace transient::cli
