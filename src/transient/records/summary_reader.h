// Reading summary.json (README, "The job directory"): what a job came to, written when it ends
// (finished, paused or failed). A job still running has none. Its numbers are bounded as the
// writer makes them: counts whole from 0 to 1e15, wall_s, samples_per_s, epochs and cost_usd from
// 0 to 1e15, test_accuracy from 0 to 1 (null: not evaluated), test_loss from 0; a field outside
// its range is a problem naming the file and the field, as one of the wrong type is.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "transient/records/read_problem.h"

namespace transient::records {

struct JobSummary {
  std::int64_t steps = 0;               // steps completed
  std::int64_t total_steps = 0;         // steps the job was to train
  double epochs = 0.0;                  // epochs completed
  std::optional<double> test_accuracy;  // the last evaluation's (finished: after the last step)
  std::optional<double> test_loss;      // ... and its test loss
  // The wall-clock time and training samples per second of the job's last run: a resumed
  // job's since it resumed (at summary.json's `resumed_from_step`).
  double wall_s = 0.0;
  double samples_per_s = 0.0;
  std::string model;                             // the model's name
  std::string dataset;                           // the data set's name
  std::int64_t global_batch = 0;                 // samples per step
  bool finished = false;                         // trained all its steps
  bool stopped = false;                          // paused before the end
  std::optional<std::string> failure;            // why the job failed, if it did
  std::optional<std::int64_t> diverged_at_step;  // the step whose loss was not finite
  std::int64_t generations = 0;                  // membership generations
  std::int64_t revocations = 0;                  // workers lost
  std::int64_t recoveries = 0;                   // recoveries from losses
  std::int64_t redone_steps = 0;                 // steps trained again after losses
  std::optional<double> cost_usd;                // what the servers cost, when the job knew prices
  nlohmann::json json;                           // the whole file, every field included
};

struct SummaryRead {
  std::optional<JobSummary> summary;  // absent if the file is missing or unreadable
  std::vector<ReadProblem> problems;  // why, and fields of the wrong type or out of range (then
                                      // left at default)
};

// Reads `path`; never throws for bad content.
SummaryRead read_summary(const std::string& path);
// The same from text; `name` stands for the path in problems.
SummaryRead parse_summary(const std::string& text, const std::string& name);

}  // namespace transient::records
