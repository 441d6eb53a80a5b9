// steps.csv, the per-step timing records: one row per step and worker with the columns
// step,worker,batch,data_s,compute_s,allreduce_s,optimizer_s,loss,gen,sample_begin (step counts
// completed steps, so the first step is 1; worker is the rank in generation gen; batch the samples
// it trained on, positions [sample_begin, sample_begin + batch) of the epoch's permutation; the *_s
// columns the seconds of each phase; loss the step's training loss over the whole global batch).
// Workers append to part files of their own in <job>/records/; the coordinator merges them into
// steps.csv, written atomically.
#pragma once

#include <cstdint>
#include <string>

namespace transient::train {

// Merges `job_dir`/steps.csv and the part files in `job_dir`/records/ into a new steps.csv,
// keeping only rows with step <= `last_step` (later rows belong to steps that will be redone
// after a resume) and, for each step, the rows of the latest generation that recorded it (the
// latest row for a worker recorded twice). Sorted by step, then worker. Deletes the part files once
// steps.csv is in place. Returns the number of rows.
std::int64_t merge_step_records(const std::string& job_dir, std::int64_t last_step);

// The highest step recorded in `job_dir`'s steps.csv and part files (0 if none): how far a job
// whose coordinator died had come, for the one that takes it back.
std::int64_t last_recorded_step(const std::string& job_dir);

}  // namespace transient::train
