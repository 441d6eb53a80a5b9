#include "transient/perf/job_batch.h"

#include "transient/core/error.h"

namespace transient::perf {

double JobBatch::step_samples(int workers, int reference) const {
  TRANSIENT_CHECK(workers >= 1 && reference >= 1);
  const double batch = samples > 0 ? samples : reference;
  return mode == Mode::global ? batch : batch * workers;
}

double JobBatch::worker_samples(int workers, int reference) const {
  return mode == Mode::global ? step_samples(workers, reference) / workers
                              : step_samples(1, reference);
}

int JobBatch::max_workers(int reference) const {
  TRANSIENT_CHECK(reference >= 1);
  if (mode != Mode::global) return 0;
  return samples > 0 ? samples : reference;
}

void JobBatch::require_a_sample_per_worker(int workers, int reference,
                                           const std::string& what) const {
  const int batch = max_workers(reference);
  if (batch == 0 || batch >= workers) return;
  throw InputError(what + ": " + std::to_string(batch) + " samples a step for " +
                   std::to_string(workers) +
                   " workers would leave a worker without any; accepted: a global batch of at "
                   "least the workers, or fewer workers");
}

std::string JobBatch::text(int reference) const {
  const int batch = samples > 0 ? samples : reference;
  return (mode == Mode::global ? "global batch " : "per-worker batch ") + std::to_string(batch);
}

}  // namespace transient::perf
