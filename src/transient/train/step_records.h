// steps.csv, the per-step timing records: one row per step and worker with the columns
// step,worker,batch,data_s,compute_s,allreduce_s,optimizer_s,loss (step counts completed steps, so
// the first step is 1; worker is the rank; batch the samples it trained on; the *_s columns the
// seconds of each phase; loss the step's training loss over the whole global batch). Workers append
// to part files of their own in <job>/records/; the coordinator merges them into steps.csv, written
// atomically.
#pragma once

#include <cstdint>
#include <string>

namespace transient::train {

// Merges `job_dir`/steps.csv and the part files in `job_dir`/records/ into a new steps.csv,
// keeping only rows with step <= `last_step` (later rows belong to steps that will be redone
// after a resume) and, for a step and worker recorded twice, the latest row. Sorted by step,
// then worker. Deletes the part files once steps.csv is in place. Returns the number of rows.
std::int64_t merge_step_records(const std::string& job_dir, std::int64_t last_step);

}  // namespace transient::train
