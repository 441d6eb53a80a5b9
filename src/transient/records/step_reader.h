// Reading steps.csv (README, "The job directory"): one row per completed step and member, columns
// step,worker,batch,data_s,compute_s,allreduce_s,optimizer_s,loss,gen,sample_begin (worker is the
// rank in generation gen). While a job runs, its rows are still in part files without a header
// under records/; read_job_records() merges both as the trainer does. A row that cannot be read
// (cut short, a field that is not a number, a count that is no whole number from 0 to 1e15, a
// time that is not from 0 to 1e6 s) is skipped and reported.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "transient/records/read_problem.h"

namespace transient::records {

struct StepRow {
  std::int64_t step = 0;          // completed steps, the first step is 1
  std::int64_t rank = 0;          // the `worker` column: the rank in generation `gen`
  std::int64_t batch = 0;         // samples this member trained on
  double data_s = 0.0;            // loading its batch
  double compute_s = 0.0;         // forward and backward
  double allreduce_s = 0.0;       // waiting for the gradient all-reduce
  double optimizer_s = 0.0;       // the optimizer step
  double loss = 0.0;              // the step's training loss over the whole global batch
  std::int64_t gen = 0;           // the generation that trained it
  std::int64_t sample_begin = 0;  // first position of its samples in the epoch's permutation
  int line = 0;                   // 1-based line in its file

  double total_s() const { return data_s + compute_s + allreduce_s + optimizer_s; }
};

struct StepsRead {
  std::vector<StepRow> rows;          // in file order
  std::vector<ReadProblem> problems;  // the rows that could not be read
};

// Reads `path`, a steps.csv with its header (`has_header`) or a part file without one. A missing
// file or a header without the columns above is one problem and no rows; never throws.
StepsRead read_steps(const std::string& path, bool has_header = true);
// The same from text; `name` stands for the path in problems.
StepsRead parse_steps(const std::string& text, const std::string& name, bool has_header = true);

}  // namespace transient::records
