// The coordinator <-> worker protocol, over the c10d TCPStore that the coordinator hosts.
//
// Keys (values are JSON text unless said otherwise):
//   job/config                 JobConfig: what to train and how; written once by the coordinator
//   join/<worker id>           the job token, written by a worker that asks to join
//   gen/<g>/config             GenerationConfig: members in rank order, the step to start from
//                              and the checkpoint to load
//   gen/<g>/pg/...             the generation's ProcessGroupGloo rendezvous (a PrefixStore)
//   gen/<g>/progress           ProgressReport of rank 0 after each step
//   gen/<g>/done/<rank>        WorkerResult of a worker that finished its work
//   control/stop               present once the coordinator asks the job to pause (SIGINT)
//   events/count, events/<n>   events reported by workers (n = 1, 2, ...), which the coordinator
//                              appends to events.jsonl
// Issue 3 adds heartbeats, leaves and joins under new keys and bumps <g>; a worker holds no
// state that assumes generation 0.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "transient/train/trainer.h"

namespace transient::train {

struct JobConfig {
  TrainOptions options;            // as given, job_dir resolved, threads resolved (>= 1)
  std::int64_t train_samples = 0;  // training set size
  std::int64_t total_steps = 0;    // steps of the whole job (from --steps or --epochs)
  std::int64_t warmup_steps = 0;   // of the learning-rate schedule
};

struct GenerationConfig {
  std::int64_t generation = 0;
  std::vector<std::string> members;  // worker ids; the index is the rank
  std::int64_t start_step = 0;       // steps already completed
  std::string checkpoint;            // file to load in the checkpoint directory ("" = fresh)
  std::int64_t checkpoint_bytes = 0;
  std::uint32_t checkpoint_crc32 = 0;
};

struct ProgressReport {
  std::int64_t step = 0;   // steps completed
  std::int64_t epoch = 0;  // epoch of the last step (0-based)
  double loss = 0;         // training loss of the last step (mean over its global batch)
  double lr = 0;           // learning rate of the last step
};

struct WorkerResult {
  std::int64_t step = 0;      // steps completed
  double test_accuracy = -1;  // of the final evaluation (-1 if there was none)
  double test_loss = -1;
  bool stopped = false;  // paused by request or --stop-at, not finished
};

nlohmann::json to_json(const JobConfig& config);
JobConfig job_config_from_json(const nlohmann::json& json);
nlohmann::json to_json(const GenerationConfig& config);
GenerationConfig generation_config_from_json(const nlohmann::json& json);
nlohmann::json to_json(const ProgressReport& report);
ProgressReport progress_report_from_json(const nlohmann::json& json);
nlohmann::json to_json(const WorkerResult& result);
WorkerResult worker_result_from_json(const nlohmann::json& json);

std::string generation_prefix(std::int64_t generation);  // "gen/<g>/"

}  // namespace transient::train
