// Per-step figures derived from steps.csv rows: how long each step took (its slowest member),
// how many samples it trained, its loss, and which member was the straggler; and the wall-clock
// time at which each step ended, estimated from the events that carry a step and a time.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "transient/records/event_reader.h"
#include "transient/records/step_reader.h"

namespace transient::report::internal {

struct StepPoint {
  std::int64_t step = 0;
  std::int64_t gen = 0;
  double duration_s = 0.0;        // the slowest member's data + compute + all-reduce + optimizer
  std::int64_t samples = 0;       // the members' batches together
  double loss = 0.0;              // the step's training loss
  std::int64_t slowest_rank = 0;  // the member with the most data + compute time (the straggler)
  double slowest_busy_s = 0.0;    // its data + compute seconds
  double median_busy_s = 0.0;     // the members' median data + compute seconds
  double t = 0.0;                 // seconds since the coordinator started when it ended (estimated)
};

// One point per step, in step order. `rows` sorted by step (as read_job_records returns them).
// The time of a step comes from the events that name a step ("generation" with start_step,
// "checkpoint", "epoch", "worker_left", "done", ...): between two of them the time is shared out in
// proportion to the steps' durations; outside them, steps' durations are added up.
std::vector<StepPoint> step_points(const std::vector<records::StepRow>& rows,
                                   const std::vector<records::Event>& events);

// Samples per second of the steps in [begin, end) of `points` by their durations (0 if none).
double samples_per_s(const std::vector<StepPoint>& points, std::size_t begin, std::size_t end);

// The worker ids (w0, w1, ...) of each generation's ranks, from the "generation" events:
// worker_of(gen, rank, step), or "rank R" where the events do not say.
class RankNames {
 public:
  explicit RankNames(const std::vector<records::Event>& events);
  // `step`: the row's, which tells generations of the same number apart (each run of a resumed
  // job of an earlier version numbered its generations from 0 again): the latest of them that
  // started before it.
  std::string worker_of(std::int64_t gen, std::int64_t rank, std::int64_t step) const;
  // The members of the latest generation, and its number (-1 if there was none).
  const std::vector<std::string>& last_members() const { return last_members_; }
  std::int64_t last_gen() const { return last_gen_; }

 private:
  struct Generation {
    std::int64_t number = -1;
    std::int64_t start_step = 0;
    std::vector<std::string> members;
  };
  std::vector<Generation> generations_;
  std::vector<std::string> last_members_;
  std::int64_t last_gen_ = -1;
};

}  // namespace transient::report::internal
