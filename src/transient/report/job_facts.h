// The few facts that say where a job stands, from its records: what `transient status` prints,
// the summary at the top of a report, and what /metrics serves (prometheus_text()).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "transient/records/job_records.h"

namespace transient::report {

struct JobFacts {
  std::string dir;  // the job directory
  // "finished", "paused", "failed", "running", "ended" (its journal says so, with no summary),
  // "interrupted" (no coordinator holds the job, and its records do not say it ended: killed or
  // crashed; records::CoordinatorLock).
  std::string state;
  std::string failure;  // why it failed, when state is "failed"
  // When state is "interrupted": the commands that go on with the job.
  std::string continue_with;
  std::int64_t step = 0;             // steps completed
  std::int64_t total_steps = 0;      // steps to train (0 if unknown)
  std::int64_t generation = -1;      // the latest generation (-1: none formed)
  std::vector<std::string> workers;  // the members of the latest generation
  // Before the first generation: the workers it waits for (coordinator.json; 0 if unknown) and
  // those joined so far.
  std::int64_t first_generation_size = 0;
  std::int64_t joined = 0;
  double samples_per_s = 0.0;         // over the job if it ended, else over its last steps
  std::optional<double> time_left_s;  // running: the steps left at the pace of its last steps
  // Running with every step done: the model is evaluated and the last checkpoint written (a few
  // seconds through a large test set); time_left_s is 0.
  bool steps_done = false;
  std::int64_t recoveries = 0;                  // recoveries from lost workers
  std::int64_t redone_steps = 0;                // steps trained again because of them
  std::int64_t revocations = 0;                 // records::left_by_revocation's
  std::optional<std::int64_t> checkpoint_step;  // the newest checkpoint's step
  std::optional<double> checkpoint_age_s;       // seconds since it was written
  // What the servers cost, if prices were known: the job's whole bill, every run's at its market
  // (summary.json's, or the last "cost" event's).
  std::optional<double> cost_usd;
  std::optional<double> test_accuracy;         // the latest evaluation
  std::optional<std::int64_t> evaluated_step;  // ... after this step, where known
  std::vector<records::ReadProblem> problems;  // what could not be read
};

// The facts of `records` at the wall-clock time `now_unix_s` (seconds since 1970, UTC), which
// only the checkpoint's age depends on.
JobFacts job_facts(const records::JobRecords& records, double now_unix_s);

// The facts as lines for a terminal (`transient status`), ending in a newline.
std::string status_text(const JobFacts& facts);

// The facts in Prometheus' text exposition format (version 0.0.4): transient_step,
// transient_workers, transient_samples_per_second, transient_recoveries_total and, when known,
// transient_checkpoint_age_seconds, transient_cost_usd and transient_seconds_left.
std::string prometheus_text(const JobFacts& facts);

// Why a job is "interrupted", as status and the report page say it.
inline constexpr const char* kInterruptedCause =
    "its coordinator is not running: it was killed or crashed";

// The workers as status and the report page say them: "2 in generation 3 (w0, w3)", or before the
// first generation how many it waits for and how many have joined.
std::string workers_text(const JobFacts& facts);

// The latest test accuracy as status and the report page say it: "83.37%", and "(evaluated after
// step 469)" when that is not the job's last step. REQUIRES: facts.test_accuracy.
std::string test_accuracy_text(const JobFacts& facts);

// A running job's time left as status and the report page say it: "about 12 s (the steps left
// at the pace of the last ones)", or that its steps are done. REQUIRES: facts.time_left_s.
std::string time_left_text(const JobFacts& facts);

// Dollars as a person reads a bill: cents ("$1.17"), or two significant digits below a cent
// ("$0.00041": a short job on a cheap server is not free).
std::string usd_text(double usd);

// "2026-11-24T01:02:03.456Z" as seconds since 1970; nullopt if it is not such a time.
std::optional<double> parse_utc_iso8601(const std::string& text);

}  // namespace transient::report
