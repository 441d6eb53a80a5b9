// Measurements the performance models are fitted on, read from a directory tree of files whose
// format is recognised by their header (and, for TensorBoard run exports, by their folder name):
//
// - CM-DARE feature tables (`GPU TFLOPS,...,Speed (steps/sec),...,GPU (temp),Model (temp)`):
//   single-worker speeds (rows with the added-latency experiments, Latency (ms) != 0.3, are left
//   out); tables without model names (speed_data_supertable.csv) are recognised and not used;
// - CM-DARE TensorBoard exports `Wall time,Step,Value` under `0lat_<gpu>_<model>/` (one worker)
//   and `<model><gpu>worker<N>/` (cluster, one parameter server): mean steps/s after the first
//   sample, used where no aggregated table has the same GPU, model and worker count;
// - `gpu,num_ps,model,num_workers,speed_steps_per_sec_mean,...` (speed_vs_num_workers.csv):
//   cluster speeds;
// - `Step Time (s),Step Time STD,Predicted (s),...` (sigmetrics_figure5_comb.csv): CM-DARE's own
//   predictions, kept for comparison;
// - checkpoint durations (`Model,...,Duration mean (s),...,Checkpoint Size (MB)` or
//   `checkpoint_size_MB,checkpoint_duration_mean_s`), TensorFlow restart times
//   (`model,start_type,run,seconds`);
// - our trainer's job directories (a folder holding `steps.csv`, columns
//   `step,worker,batch,data_s,compute_s,allreduce_s,optimizer_s,...[,gen]`: per step the rows of
//   its latest generation, as the trainer's merge keeps them; a row repeating the step, worker
//   and generation of another, or whose times add up to less than 1e-6 s, is an InputError
//   naming its line): steps.csv, the model named
//   in job.json, checkpoint writes from events.jsonl (every line must be a JSON object), the
//   workers' threads from summary.json; the rest of a job directory (checkpoints, part files, a
//   summary without threads) is listed as not used;
// - files for other parts (revocations, lifetimes, start-up, chief re-joining curves), recognised
//   by header and listed as not used here.
// Any other file is an InputError naming it: nothing is skipped silently.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace transient::perf {

struct SpeedMeasurement {
  std::string workload;       // built-in workload name (resolved), e.g. "resnet-32"
  std::string gpu;            // GPU model as written, upper case, e.g. "K80"
  double gpu_tflops = 0.0;    // of one GPU
  int workers = 1;            // >= 1
  int parameter_servers = 1;  // CM-DARE: always 1
  double steps_per_s = 0.0;   // global steps per second, mean over the runs
  std::string source;         // file (and line) it came from
};

struct PublishedPrediction {
  std::string workload;         // resolved name
  std::string gpu;              // "K80", "P100"
  double measured_step_s = 0;   // CM-DARE's measured step time
  double predicted_step_s = 0;  // CM-DARE's prediction
};

struct CheckpointMeasurement {
  std::string workload;         // as written ("ResNet-15"); may be empty
  double size_mb = 0;           // checkpoint size in MB
  double duration_s = 0;        // mean time to write it to a remote bucket
  double local_duration_s = 0;  // to the local disk; 0 = not measured
  double parameters = 0;        // the model's parameters; 0 = not given
};

struct RestartMeasurement {
  std::string workload;  // as written
  bool warm = false;     // warm (cached) or cold start
  double seconds = 0;    // time to restart training
};

struct TrainerStepMeasurement {
  int workers = 0;         // workers that took part in the step
  double batch = 0;        // samples of the whole step (sum over workers)
  double compute_s = 0;    // slowest worker's forward+backward
  double allreduce_s = 0;  // mean all-reduce time
  double step_s = 0;       // slowest worker's data + compute + all-reduce + optimizer
  std::string source;      // file
};

struct TrainerCheckpointWrite {
  double bytes = 0;    // checkpoint file size
  double write_s = 0;  // time the background writer took
};

struct MeasurementSet {
  std::vector<SpeedMeasurement> single_worker;  // one per GPU and workload
  std::vector<SpeedMeasurement> cluster;        // one per GPU, workload and worker count
  std::vector<PublishedPrediction> published;   // CM-DARE's own predictions
  std::vector<CheckpointMeasurement> checkpoints;
  std::vector<RestartMeasurement> restarts;
  std::vector<TrainerStepMeasurement> trainer_steps;  // aggregated per step
  std::map<std::string, std::string> trainer_models;  // steps.csv path -> model in its job.json
  // steps.csv path -> its workers' intra-op threads (summary.json's threads_per_worker)
  std::map<std::string, int> trainer_threads;
  std::vector<TrainerCheckpointWrite> trainer_checkpoints;  // from events.jsonl
  std::vector<std::string> used;                            // "path: what it gave"
  std::vector<std::string> not_used;  // "path: recognised as ..., not used by perf"
};

// Reads every file under `dir` (recursively; hidden files ignored). Throws InputError for an
// unreadable or malformed file (file:line) or an unrecognised one (naming it and the formats
// accepted).
MeasurementSet read_measurements(const std::string& dir);

}  // namespace transient::perf
