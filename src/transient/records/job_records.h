// Everything a job directory records, read at once for a report, `transient status` or /metrics.
// A damaged line or file is skipped and listed in `problems`; only a path that is not a job
// directory at all is an error.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "transient/records/coordinator_lock.h"
#include "transient/records/event_reader.h"
#include "transient/records/manifest_reader.h"
#include "transient/records/read_problem.h"
#include "transient/records/step_reader.h"
#include "transient/records/summary_reader.h"

namespace transient::records {

struct JobRecords {
  std::string dir;                            // the job directory
  std::vector<Event> events;                  // events.jsonl, in order
  std::vector<StepRow> steps;                 // steps.csv and its unmerged parts, by step, rank
  std::optional<JobSummary> summary;          // summary.json; absent while the job runs
  std::optional<nlohmann::json> job;          // job.json: the job's identity and settings
  std::optional<nlohmann::json> coordinator;  // coordinator.json: the coordinator's journal
  std::vector<CheckpointEntry> checkpoints;   // checkpoints/manifest.json, in step order
  // Whether a coordinator holds the job (.coordinator.lock), probed before the files are read: a
  // coordinator that ends writes summary.json and its journal before it lets go of the lock, so
  // a lock found free belongs to records that say so, or to a coordinator killed or crashed.
  CoordinatorLock coordinator_lock = CoordinatorLock::kUnknown;
  std::vector<ReadProblem> problems;  // what could not be read, file:line
};

// Reads the job directory `dir`. Files a job may not have yet (summary.json while it runs, the
// manifest before its first checkpoint) are no problem when missing; events.jsonl is. For each
// step only the rows of the latest generation that recorded it are kept, as the trainer's merge
// does. Throws InputError naming `dir` if it is not a directory holding a job's records.
JobRecords read_job_records(const std::string& dir);

}  // namespace transient::records
