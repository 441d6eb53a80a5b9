// `transient train`: the coordinator of a job on this machine with its local fleet of workers
// (launch/local_fleet.h: processes, replacements, injected revocations); and `transient
// coordinator`, the coordinator alone. The job directory (job.json, token, records, checkpoints,
// the coordinator's journal) is set up here, with job_directory.h's checks of whose job it is;
// membership and generations are the coordinator's (coordinator.h, elastic/membership.h). One
// thread.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <thread>
#include <tuple>

#include "transient/core/atomic_file.h"
#include "transient/core/duration.h"
#include "transient/core/error.h"
#include "transient/core/json_number.h"
#include "transient/core/random.h"
#include "transient/core/text.h"
#include "transient/launch/local_fleet.h"
#include "transient/launch/revocation_schedule.h"
#include "transient/records/event_reader.h"
#include "transient/records/job_files.h"
#include "transient/report/live_dashboard.h"
#include "transient/train/channel.h"
#include "transient/train/checkpoint.h"
#include "transient/train/checkpoint_choice.h"
#include "transient/train/coordinator.h"
#include "transient/train/coordinator_journal.h"
#include "transient/train/cuda_support.h"
#include "transient/train/datasets.h"
#include "transient/train/event_log.h"
#include "transient/train/job_directory.h"
#include "transient/train/models.h"
#include "transient/train/optimizer.h"
#include "transient/train/option_fields.h"
#include "transient/train/progress_line.h"
#include "transient/train/protocol.h"
#include "transient/train/sharding.h"
#include "transient/train/step_records.h"
#include "transient/train/step_trace.h"
#include "transient/train/token_proof.h"
#include "transient/train/trainer.h"

namespace transient::train {
namespace {

DataOptions data_options(const TrainOptions& o) {
  return {o.image_size, o.val_data, o.image_mean, o.image_std};
}

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::atomic<bool> g_stop_requested{false};

void on_interrupt(int) { g_stop_requested = true; }

// SIGINT and SIGTERM ask for an orderly pause while the object lives.
class InterruptHandler {
 public:
  InterruptHandler() {
    // A write to a worker that is gone is an error of that write, never the coordinator's end.
    ::signal(SIGPIPE, SIG_IGN);
    struct sigaction action {};
    action.sa_handler = on_interrupt;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGINT, &action, &previous_int_);
    ::sigaction(SIGTERM, &action, &previous_term_);
  }
  ~InterruptHandler() {
    ::sigaction(SIGINT, &previous_int_, nullptr);
    ::sigaction(SIGTERM, &previous_term_, nullptr);
  }

 private:
  struct sigaction previous_int_ {};
  struct sigaction previous_term_ {};
};

std::string shown(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", value);
  return text;
}

void validate(const TrainOptions& o) {
  if (needs_data_dir(o.dataset) && o.data_dir == TrainOptions{}.data_dir) {
    throw InputError("--dataset " + o.dataset +
                     " needs --data-dir DIR: for cifar10 the folder of CIFAR-10's binary version "
                     "(cifar-10-batches-bin: data_batch_1.bin ... data_batch_5.bin, "
                     "test_batch.bin), for npy one with images.npy and labels.npy");
  }
  if (o.image_size != 0 && (o.image_size < kMinImageSide || o.image_size > kMaxImageSide)) {
    throw InputError("--image-size: " + std::to_string(o.image_size) +
                     " is out of range; accepted: " + std::to_string(kMinImageSide) + ".." +
                     std::to_string(kMaxImageSide) + " (or 0 for the first image's side)");
  }
  if (o.loader_threads < 1 || o.loader_threads > 64) {
    throw InputError("--loader-threads: accepted: 1..64");
  }
  require_model(o.model, dataset_shape(o.dataset, o.data_dir, data_options(o)), o.memory_format);
  if (o.workers < 1 || o.workers > 64) {
    throw InputError("--workers: " + std::to_string(o.workers) +
                     " is out of range; accepted: 1..64");
  }
  // Every number is bounded here, where it enters: a NaN or an infinity travels to the workers
  // as JSON null and libtorch refuses a negative weight decay, and every worker would then fail.
  if (o.epochs < 1 || o.epochs > 100000) throw InputError("--epochs: accepted: 1..100000");
  if (o.steps < 0 || o.steps > 1'000'000'000) {
    throw InputError("--steps: accepted: 1..1000000000");
  }
  if (o.global_batch < 1 || o.global_batch > 1'000'000) {
    throw InputError("--global-batch: accepted: 1..1000000");
  }
  if (!(o.lr > 0 && o.lr <= 1e3)) {
    throw InputError("--lr: " + shown(o.lr) + " is out of range; accepted: 0 < LR <= 1000");
  }
  if (!(o.momentum >= 0 && o.momentum < 1)) throw InputError("--momentum: accepted: 0 <= M < 1");
  if (!(o.weight_decay >= 0 && o.weight_decay <= 1)) {
    throw InputError("--weight-decay: " + shown(o.weight_decay) +
                     " is out of range; accepted: 0 <= WD <= 1");
  }
  if (!is_optimizer_name(o.optimizer)) {
    throw InputError("--optimizer: \"" + o.optimizer + "\"; accepted: " + optimizer_names());
  }
  if (!(o.beta1 >= 0 && o.beta1 < 1 && o.beta2 >= 0 && o.beta2 < 1)) {
    throw InputError("--beta1/--beta2: " + shown(o.beta1) + ", " + shown(o.beta2) +
                     " is out of range; accepted: 0 <= BETA < 1");
  }
  if (!(o.eps > 0 && o.eps <= 1)) {
    throw InputError("--eps: " + shown(o.eps) + " is out of range; accepted: 0 < EPS <= 1");
  }
  // A flag of the other optimiser would be ignored: it is refused instead.
  for (const char* flag : {"--momentum", "--nesterov", "--beta1", "--beta2", "--eps"}) {
    const bool sgds = std::string(flag) == "--momentum" || std::string(flag) == "--nesterov";
    if (o.given(flag) && sgds != (o.optimizer == "sgd")) {
      throw InputError(std::string(flag) + " is " + (sgds ? "SGD" : "AdamW") +
                       "'s: accepted with --optimizer " + (sgds ? "sgd" : "adamw") + " only");
    }
  }
  // Flags of image folders change nothing for another data set: refused, never ignored.
  if (o.dataset != "image-folder") {
    for (const char* flag : {"--image-size", "--augment", "--loader-threads", "--strict"}) {
      if (o.given(flag)) {
        throw InputError(std::string(flag) +
                         " applies to image folders only; the data set here is " + o.dataset);
      }
    }
  }
  if (o.nesterov && o.momentum == 0) {
    throw InputError("--nesterov needs a momentum: accepted: --momentum M with 0 < M < 1");
  }
  if (!(o.warmup_fraction >= 0 && o.warmup_fraction < 1)) {
    throw InputError("--warmup-fraction: " + shown(o.warmup_fraction) +
                     " is out of range; accepted: 0 (none) <= F < 1");
  }
  if (!(o.clip_grad_norm >= 0 && o.clip_grad_norm <= 1e6)) {
    throw InputError("--clip-grad-norm: " + shown(o.clip_grad_norm) +
                     " is out of range; accepted: 0 (never) or 0 < NORM <= 1000000");
  }
  if (o.keep < 1) throw InputError("--keep: must be at least 1");
  if (o.threads < 0) throw InputError("--threads: must be at least 1 (or 0 for cores / workers)");
  if (o.stop_at_step < 0) throw InputError("--stop-at: must be a step number >= 1");
  if (!(o.heartbeat_timeout_s >= 0.2 && o.heartbeat_timeout_s <= 3600)) {
    throw InputError("--heartbeat-timeout: accepted: 200ms .. 1h");
  }
  if (o.port < 0 || o.port > 65535) throw InputError("--port: accepted: 0..65535 (0 = any)");
  // Each bucket is a collective a step and a buffer of its size: 0 or a negative size made a
  // bucket of every parameter, and 1 TiB is no bucket either.
  if (o.bucket_bytes < 1024 || o.bucket_bytes > (std::int64_t{1} << 34)) {
    throw InputError("--bucket-bytes: " + std::to_string(o.bucket_bytes) +
                     " is out of range; accepted: 1024..17179869184 (1 KiB to 16 GiB)");
  }
  if (!(o.time_scale > 0)) throw InputError("--time-scale: must be a positive number");
}

// --stop-at (0 = none) within the job's steps.
void check_stop_at(std::int64_t stop_at, std::int64_t total_steps, bool resumed) {
  if (stop_at > total_steps) {
    throw InputError("--stop-at: step " + std::to_string(stop_at) + " is past the job's last (" +
                     std::to_string(total_steps) + "); accepted: 1.." +
                     std::to_string(total_steps) +
                     (resumed ? " after the step the job goes on from" : ""));
  }
}

// The front door's and the dashboard's addresses, bound once and let go: an address this host
// does not have, or a port in use, is refused before the job directory is touched (it was
// refused when the coordinator bound them, after the records were opened).
void check_addresses(const TrainOptions& o) {
  // Held while the dashboard's is tried: let go first, the same port passed both, and the
  // coordinator's own dashboard failed on it once the job directory was written.
  // A journal's port taken by another program gives way to another when the coordinator
  // listens (port_or_another): only its address is checked here.
  Listener front_door(o.bind, o.port_or_another ? 0 : static_cast<std::uint16_t>(o.port),
                      "--bind/--port");
  if (o.dashboard != "off") {
    const auto at = report::parse_dashboard_address(o.dashboard, "--dashboard");
    if (o.port != 0 && at.port == o.port) {
      throw InputError("--dashboard: port " + std::to_string(at.port) +
                       " is the job's front door (--port); accepted: another port, or 0 for any");
    }
    Listener dashboard(at.host, o.dashboard_or_another ? 0 : at.port, "--dashboard");
  }
}

int default_threads(int workers) {
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  return std::max(1, static_cast<int>(cores) / workers);
}

nlohmann::json number_or_null(double value) {
  return value >= 0 ? nlohmann::json(value) : nlohmann::json(nullptr);
}

// Everything a coordinator needs, with the job directory prepared: nothing in it is touched
// before every check has passed.
struct PreparedJob {
  std::shared_ptr<JobLock> lock;  // held while the coordinator runs
  TrainOptions options;
  JobConfig job;
  std::string token_path;
  std::string token;
  GenerationConfig start;
  EarlierRuns before;  // what a resumed job's earlier runs left
  // job.json as a resumed job updates it (the data's folder, the launch flags), written by
  // open_records once every check has passed: a refused --resume leaves it as it was.
  std::optional<nlohmann::json> job_json_update;
};

// `starts_workers`: the command starts the job's workers itself (`transient train`), whose
// number then sets the threads of each by default.
PreparedJob prepare_job(const TrainOptions& given, bool starts_workers) {
  PreparedJob prepared;
  TrainOptions& o = prepared.options;
  o = given;
  if (!o.data.empty()) {
    o.data_dir = fs::absolute(o.data).lexically_normal().string();
    o.dataset = detect_dataset(o.data_dir);
  }
  // Named absolutely, as job.json keeps it: a resumed job finds it from anywhere.
  if (!o.data_dir.empty()) o.data_dir = fs::absolute(o.data_dir).lexically_normal().string();
  if (!o.val_data.empty()) o.val_data = fs::absolute(o.val_data).lexically_normal().string();
  // A model file is named by its absolute path: workers load it from there (on other hosts, a
  // copy at the same path, checked against the coordinator's by its SHA-256).
  if (is_model_file(o.model)) o.model = fs::absolute(o.model).lexically_normal().string();
  if (o.per_worker_batch != 0) {
    // Each factor bounded first, so that their product cannot overflow.
    if (o.per_worker_batch < 1 || o.per_worker_batch > 1'000'000 || o.workers < 1 ||
        o.per_worker_batch * o.workers > 1'000'000) {
      throw InputError("--per-worker-batch: " + std::to_string(o.per_worker_batch) + " x " +
                       std::to_string(o.workers) +
                       " workers is out of range; accepted: N >= 1 with N x workers <= 1000000");
    }
    o.global_batch = o.per_worker_batch * o.workers;
  }
  if (o.job_dir.empty()) {
    // Which job to continue, a name made up now cannot say.
    if (o.resume)
      throw InputError("--resume: needs --job-dir JOB, the directory of the job to continue");
    o.job_dir = "jobs/" + utc_stamp() + "-" +
                (is_model_file(o.model) ? fs::path(o.model).stem().string() : o.model);
  }
  adopt_job_settings(o, starts_workers);
  // A resumed job's model file is where job.json names it, or where --model says it has moved.
  // Gone, it was refused as any --model is ("no such file"), not saying whose it was.
  if (o.resume && is_model_file(o.model) && !fs::exists(o.model) && !o.given("--model")) {
    throw InputError(o.model, 0,
                     "the job's model file, as job.json names it, is gone; put the file back at "
                     "that path, or give its new place with --model");
  }
  // A validation folder that is not there was refused by the data set's reader as though
  // --data-dir lacked it.
  if (!o.val_data.empty() && !fs::is_directory(o.val_data)) {
    const bool the_jobs = o.resume && !o.given("--val-data");
    throw InputError(o.val_data, 0,
                     the_jobs ? "the job's validation folder, as job.json names it, is gone; put "
                                "it back there, or give its new place with --val-data"
                              : "--val-data: not a folder; accepted: a folder of the data set's "
                                "kind (npy, image folders)");
  }
  try {
    validate(o);  // what was given, or with --resume the job's own settings
  } catch (const InputError& error) {
    // A value a resumed job's records gave, not a flag the user wrote: named as job.json's (it
    // was said as though the flag had been given).
    const std::string& said = error.message();
    const std::string flag = said.substr(0, said.find_first_of(":/ "));
    if (!o.resume || !error.file().empty() || flag.rfind("--", 0) != 0 || o.given(flag)) throw;
    throw InputError(
        records::JobFiles(o.job_dir).job(), 0,
        "a setting of the job is out of range (the file is damaged, or was edited): " + said);
  }
  if (o.global_batch < o.workers) {
    // Each step's samples are shared among the members: some would compute nothing at all.
    const std::string workers = starts_workers ? "--workers" : "--min-workers";
    throw InputError("--global-batch: " + std::to_string(o.global_batch) + " samples a step for " +
                     std::to_string(o.workers) + " workers (" + workers +
                     ") would leave a worker without any; accepted: a global batch of at least "
                     "the workers, or fewer workers");
  }
  o.model_sha256 = is_model_file(o.model) ? file_sha256(o.model) : "";
  JobConfig& job = prepared.job;
  const SampleCounts counts = count_samples(o.dataset, o.data_dir, data_options(o));
  job.train_samples = counts.train;
  if (o.dataset == "image-folder") {
    // The size the first image gave is the job's from now on, whatever host reads it.
    o.image_size = dataset_shape(o.dataset, o.data_dir, data_options(o)).height;
    // Measured once here, for every worker and the summary.
    std::tie(o.image_mean, o.image_std) = image_statistics(o.data_dir, data_options(o));
    if (o.strict) {
      check_every_image(o.data_dir, data_options(o),
                        static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
    }
  }
  if (o.train_subset > job.train_samples || o.train_subset < 0) {
    throw InputError("--train-subset: " + std::to_string(o.train_subset) +
                     " is out of range; accepted: 1.." + std::to_string(job.train_samples) +
                     " (or 0 for all)");
  }
  if (o.test_subset < 0) throw InputError("--test-subset: must be at least 1 (or 0 for all)");
  {
    // What every worker's copy of the data set must match (ShardLoader checks it).
    const ImageShape shape = dataset_shape(o.dataset, o.data_dir, data_options(o));
    job.data = DataFacts{job.train_samples, shape.channels, shape.height,
                         shape.width,       shape.classes,  counts.test};
  }
  if (o.train_subset > 0) job.train_samples = o.train_subset;
  if (o.drop_last && o.global_batch > job.train_samples) {
    const std::string batch = o.per_worker_batch > 0
                                  ? std::to_string(o.global_batch) + " (--per-worker-batch " +
                                        std::to_string(o.per_worker_batch) + " x " +
                                        std::to_string(o.workers) + " workers)"
                                  : std::to_string(o.global_batch);
    throw InputError("--drop-last: a global batch of " + batch + " is more than the " +
                     std::to_string(job.train_samples) +
                     " training samples, so every epoch would be dropped whole; accepted: a "
                     "global batch of at most " +
                     std::to_string(job.train_samples) + ", or no --drop-last");
  }
  job.total_steps =
      o.steps > 0 ? o.steps
                  : o.epochs * steps_per_epoch(job.train_samples, o.global_batch, o.drop_last);
  job.warmup_steps = std::min<std::int64_t>(
      200, static_cast<std::int64_t>(o.warmup_fraction * static_cast<double>(job.total_steps)));
  check_stop_at(o.stop_at_step, job.total_steps, o.resume);
  for (const auto& rule : o.revoke) {
    // A rule due at or after the job's last step would never come, or come as it ends (a worker
    // killed with the job done, which its records could not count; a single worker stopped
    // there left the job waiting for another that never came).
    if (rule.at_step >= job.total_steps) {
      throw InputError("--revoke: \"" + rule.text + "\" comes at step " +
                       std::to_string(rule.at_step) + ", not before the job's last (" +
                       std::to_string(job.total_steps) + "); accepted: step1..step" +
                       std::to_string(job.total_steps - 1) +
                       (o.resume ? " after the step the job goes on from" : ""));
    }
  }
  // The running job's own coordinator is named before its ports are found taken.
  std::error_code unreadable;
  // Only a job's directory: a lock file left in a folder that holds no job (refused below) was
  // the one thing a refused --resume wrote.
  if (fs::is_directory(o.job_dir, unreadable) && records::JobFiles(o.job_dir).holds_records()) {
    prepared.lock = std::make_shared<JobLock>(o.job_dir);
  }
  if (starts_workers) keep_the_journals_addresses(o);
  check_addresses(o);
  // A token file already there is checked before anything is written beside it.
  if (fs::exists(records::JobFiles(o.job_dir).token())) {
    read_job_token_file(records::JobFiles(o.job_dir).token());
  }
  prepared.job_json_update = prepare_job_dir(o, job.data, prepared.lock);
  // Kept in job.json as given (0: the cores of the machine it runs on), resolved for this run.
  if (o.threads == 0) o.threads = default_threads(starts_workers ? o.workers : 1);
  o.job_dir = fs::absolute(o.job_dir).lexically_normal().string();
  job.options = o;

  prepared.token_path = records::JobFiles(o.job_dir).token();
  if (!fs::exists(prepared.token_path))
    write_private_file(prepared.token_path, new_job_token() + "\n");
  prepared.token = read_job_token_file(prepared.token_path);
  return prepared;
}

// A resumed job with no checkpoint to go on from restarts at step 0, which is right only when
// it never wrote one: one whose records name a checkpoint (all since deleted or moved) is
// refused, where it silently started again and dropped its step records.
void refuse_a_restart_from_nothing(const std::string& job_dir,
                                   const CheckpointDirectory& checkpoints) {
  const std::int64_t newest =
      records::count_events(records::read_events(records::JobFiles(job_dir).events()).events)
          .newest_checkpoint_step;
  if (newest > 0) {
    throw InputError(checkpoints.dir(), 0,
                     "no checkpoint is left, while the job wrote them up to step " +
                         std::to_string(newest) +
                         " (events.jsonl); accepted: the checkpoints and their manifest.json "
                         "restored, or a new --job-dir to start the job afresh");
  }
}

// Opens the records and picks the checkpoint to start from (with --resume), into
// `prepared.start`; a resumed job also carries on from its journal (the learning rate's factor,
// the servers' bill so far).
void open_records(PreparedJob& prepared, EventLog& events) {
  const TrainOptions& o = prepared.options;
  GenerationConfig& start = prepared.start;
  CheckpointDirectory checkpoints(records::JobFiles(o.job_dir).checkpoints(), o.keep);
  fs::create_directories(checkpoints.dir());
  fs::create_directories(records::JobFiles(o.job_dir).step_parts());
  checkpoints.remove_leftovers();
  start = GenerationConfig{};
  std::optional<ChosenCheckpoint> chosen;
  if (o.resume) {
    // Without its manifest nothing vouches for the checkpoint files (the reader checks no
    // checksum of its own): resuming from step 0 would silently replace them, so it is refused.
    if (!fs::exists(checkpoints.manifest_path())) {
      std::string newest;
      int count = 0;
      for (const auto& entry : fs::directory_iterator(checkpoints.dir())) {
        const std::string name = entry.path().filename().string();
        if (name.rfind("step-", 0) == 0 && entry.path().extension() == ".pt") {
          ++count;
          newest = std::max(newest, name);
        }
      }
      if (count > 0) {
        throw InputError(checkpoints.manifest_path(), 0,
                         "missing, while the directory holds " + counted(count, "checkpoint") +
                             " (newest " + newest +
                             ") that nothing vouches for; accepted: the manifest restored, or "
                             "the checkpoints moved away to start the job afresh");
      }
    }
    // Found without a word: a resume refused below leaves the records as they were.
    chosen = find_checkpoint(checkpoints, o, checkpoint_identity);
    if (chosen) {
      start.start_step = chosen->step;
      start.checkpoint = chosen->record.file;
      start.checkpoint_bytes = chosen->record.bytes;
      start.checkpoint_crc32 = chosen->record.crc32;
    } else {
      refuse_a_restart_from_nothing(o.job_dir, checkpoints);
    }
  }
  if (o.stop_at_step > 0 && o.stop_at_step <= start.start_step) {
    throw InputError("--stop-at: step " + std::to_string(o.stop_at_step) + " is not after step " +
                     std::to_string(start.start_step) + ", where the job goes on from; accepted: " +
                     std::to_string(start.start_step + 1) + ".." +
                     std::to_string(prepared.job.total_steps));
  }
  // A rule due after a step the job has already done fired at once on the first step (as though
  // it said the step where the job goes on).
  for (const auto& rule : o.revoke) {
    if (rule.at_step >= 0 && rule.at_step <= start.start_step) {
      throw InputError("--revoke: \"" + rule.text + "\": step " + std::to_string(rule.at_step) +
                       " is not after step " + std::to_string(start.start_step) +
                       ", where the job goes on from; accepted: step" +
                       std::to_string(start.start_step + 1) + "..step" +
                       std::to_string(prepared.job.total_steps - 1) + ", or a time");
    }
  }
  // A job rolled back after a divergence goes on with the learning rate it was rolled back to,
  // and a paused job's bill goes on from what its servers cost before (read, and refused if
  // damaged, before any record is rewritten).
  prepared.before = EarlierRuns{};
  const auto journal_path = records::JobFiles(o.job_dir).coordinator();
  if (o.resume && fs::exists(journal_path)) {
    const auto journal = load_coordinator_journal(journal_path);
    if (journal.standalone && !journal.membership.ended) {
      // Its workers were started apart and go on without it: a resume beside them trained the
      // job a second time, and they waited for their coordinator for ever.
      throw InputError(journal_path, 0,
                       "the job's coordinator (transient coordinator, pid " +
                           std::to_string(journal.pid) +
                           ") stopped while the job ran, and its workers may run on; take the job "
                           "back with: transient coordinator --job-dir " +
                           o.job_dir + " (they re-join it)");
    }
    start.lr_scale = journal.lr_scale;
    prepared.before.cost_usd = journal.cost_usd;
    prepared.before.rollbacks = journal.rollbacks;
    prepared.before.next_generation = journal.membership.generation + 1;
    prepared.before.next_worker = journal.membership.next_worker;
    if (o.resume_lr > 0) {
      const double diverged_at = o.lr * journal.lr_scale;
      if (!(o.resume_lr < diverged_at)) {
        throw InputError("--lr: " + shown(o.resume_lr) + " is not below " + shown(diverged_at) +
                         ", the rate the job diverged at; accepted: a lower rate to go on at");
      }
      start.lr_scale = o.resume_lr / o.lr;
      events.append({{"event", "lr_lowered"},
                     {"lr", o.resume_lr},
                     {"lr_scale", start.lr_scale},
                     {"step", start.start_step}});
    }
  }
  if (o.resume && !fs::exists(journal_path)) {
    // The journal keeps what no other record does: without it the job went on with its bill at
    // $0, its learning rate's rollback factor undone and its generations numbered from 0 again.
    const auto counts =
        records::count_events(records::read_events(records::JobFiles(o.job_dir).events()).events);
    if (counts.generations > 0) {
      throw InputError(journal_path, 0,
                       "missing, while events.jsonl records " +
                           counted(counts.generations, "generation") +
                           " of the job; it holds the job's bill so far, its learning rate's "
                           "factor after rollbacks and how its generations and workers are "
                           "numbered; accepted: the file restored, or a new --job-dir");
    }
  }
  if (o.resume && fs::exists(records::JobFiles(o.job_dir).events())) {
    // A line cut short by a crash, or garbled: the job's counts (revocations, recoveries) leave
    // it out, which is said rather than done silently.
    for (const auto& problem :
         records::read_events(records::JobFiles(o.job_dir).events()).problems) {
      std::fprintf(stderr, "transient: %s; the job's counts leave it out\n",
                   problem.text().c_str());
    }
  }
  if (chosen) {
    announce_rejected(*chosen, events);
    set_aside_rejected(checkpoints, *chosen);
    // A --keep lower than the job's checkpoints: they go now, as the next write would take them,
    // and the disk need not hold them beside it (one too full for it is why --keep is lowered).
    const auto trimmed = checkpoints.trim(chosen->step);
    if (!trimmed.empty()) {
      std::string names;
      nlohmann::json files = nlohmann::json::array();
      for (const auto& old : trimmed) {
        names += (names.empty() ? "" : ", ") + old.file;
        files.push_back(old.file);
      }
      std::fprintf(stderr, "transient: --keep %d: removed %s (%s)\n", o.keep,
                   counted(static_cast<long long>(trimmed.size()), "older checkpoint").c_str(),
                   names.c_str());
      events.append({{"event", "checkpoints_removed"}, {"keep", o.keep}, {"files", files}});
    }
  }
  // Rows of steps after the checkpoint (left by a stopped or crashed run) will be redone: counted
  // with the job's redone steps (a crash after step 145 resumed from the checkpoint of step 100
  // redid 45, which no record said).
  const std::int64_t reached = last_recorded_step(o.job_dir);
  if (o.resume && reached > start.start_step) {
    events.append({{"event", "steps_redone"},
                   {"step", start.start_step},
                   {"reached", reached},
                   {"redone_steps", reached - start.start_step}});
  }
  merge_step_records(o.job_dir, start.start_step);
  if (prepared.job_json_update) {
    write_file_atomically(records::JobFiles(o.job_dir).job(),
                          prepared.job_json_update->dump(2) + "\n");
    prepared.job_json_update.reset();
  }
}

// A record the coordinator could not write while the job ran (the job directory's disk full, its
// folder gone) ends the run, where it ended as bad input with no word of the job: each record is
// written whole or not at all, so the job goes on from them once that is mended. `what` names the
// file and the cause; `continue_with` as finish_job's.
int stopped_on_a_record(const std::string& what, const Coordinator& coordinator,
                        const std::string& job_dir, const char* continue_with) {
  std::fflush(stdout);
  std::fprintf(stderr,
               "error: %s; the job stopped after step %lld, its records and checkpoints as last "
               "written: once that is mended, continue it with: %s %s\n",
               printable(what).c_str(), static_cast<long long>(coordinator.last_step()),
               continue_with, shell_word(job_dir).c_str());
  return kExitFailed;
}

// The workers' intra-op threads as they said them (a standalone coordinator's choose their own
// --threads, and its own --threads was recorded: its host's cores), the job's where none said;
// null where they differ (a measurement of the job stands for no one number).
nlohmann::json threads_per_worker(const TrainOptions& o, const Coordinator& coordinator) {
  const auto& said = coordinator.worker_threads();
  if (said.empty()) return o.threads;
  if (said.size() > 1) return nullptr;
  return *said.begin();
}

// summary.json and the last lines: what the job came to. `continue_with`: the command that
// continues the job when it paused, less its job directory ("transient train --resume --job-dir").
int finish_job(const PreparedJob& prepared, Coordinator& coordinator, EventLog& events,
               double wall_s, int workers, const char* continue_with) {
  const TrainOptions& o = prepared.options;
  const JobConfig& job = prepared.job;
  const JobOutcome& outcome = coordinator.outcome();
  const WorkerResult& result = outcome.result;
  const std::int64_t steps = std::max(result.step, coordinator.last_step());
  const bool failed = !outcome.failure.empty();
  const bool finished = !failed && steps >= job.total_steps && !result.stopped;
  const std::int64_t rows = merge_step_records(o.job_dir, steps);
  CheckpointDirectory(records::JobFiles(o.job_dir).checkpoints(), o.keep).remove_leftovers();
  const double epochs =
      static_cast<double>(steps) /
      static_cast<double>(steps_per_epoch(job.train_samples, o.global_batch, o.drop_last));
  const double samples_per_s = coordinator.samples_per_s();
  coordinator.close_accounts();
  // The job's losses, recoveries and generations over all its runs (a paused and resumed job, a
  // coordinator taken back), from its events: a coordinator counts only its own run's, while the
  // bill and `transient status` count the whole job.
  const records::EventCounts counts =
      records::count_events(records::read_events(records::JobFiles(o.job_dir).events()).events);
  nlohmann::json summary = {
      {"steps", steps},
      {"epochs", std::round(epochs * 1000.0) / 1000.0},
      {"test_accuracy", number_or_null(result.test_accuracy)},
      {"test_loss", number_or_null(result.test_loss)},
      {"wall_s", wall_s},
      {"samples_per_s", samples_per_s},
      {"workers", workers},
      {"threads_per_worker", threads_per_worker(o, coordinator)},
      {"model", o.model},
      {"dataset", o.dataset},
      {"global_batch", o.global_batch},
      {"total_steps", job.total_steps},
      {"resumed_from_step", prepared.start.start_step},
      {"stopped", !failed && !finished},
      {"finished", finished},
      {"failure", failed ? nlohmann::json(outcome.failure) : nullptr},
      {"diverged_at_step",
       outcome.diverged_at_step > 0 ? nlohmann::json(outcome.diverged_at_step) : nullptr},
      {"step_rows", rows},
      {"generations", counts.generations},
      {"revocations", counts.revocations},
      {"recoveries", counts.recoveries},
      {"redone_steps", counts.redone_steps},
      {"rollbacks", coordinator.rollbacks()},
      {"lr_scale", coordinator.lr_scale()}};
  if (o.per_worker_batch != 0) summary["per_worker_batch"] = o.per_worker_batch;
  if (o.dataset == "image-folder") {
    // The job's, over all its runs (each run's coordinator knows only its own).
    summary["images_skipped"] = counts.images_skipped;
    summary["image_size"] = o.image_size;
    // What the images were normalised with, for whoever evaluates the model elsewhere.
    summary["image_mean"] = o.image_mean;
    summary["image_std"] = o.image_std;
  }
  if (const auto cost = coordinator.cost_usd()) {
    summary["cost_usd"] = *cost;
    summary["market"] = o.market;
    summary["instance_type"] = o.instance_type;
    summary["price_usd_per_h"] = o.price_usd_per_h;
  }
  write_file_atomically(records::JobFiles(o.job_dir).summary(), summary.dump(2) + "\n");
  events.append({{"event", failed     ? "failed"
                           : finished ? "done"
                                      : "stopped"},
                 {"step", steps},
                 {"test_accuracy", number_or_null(result.test_accuracy)},
                 {"test_loss", number_or_null(result.test_loss)},
                 {"wall_s", wall_s},
                 {"samples_per_s", samples_per_s}});
  if (counts.revocations > 0 || counts.recoveries > 0) {
    std::printf(
        "%s lost, %s, %s redone, %s\n",
        counted(static_cast<long long>(counts.revocations), "worker").c_str(),
        counted(static_cast<long long>(counts.recoveries), "recovery", "recoveries").c_str(),
        counted(static_cast<long long>(counts.redone_steps), "step").c_str(),
        counted(static_cast<long long>(counts.generations), "generation").c_str());
  }
  if (failed) {
    // Nothing is printed as a result: the newest checkpoint (written before the failure) is
    // where the job can be continued from once the cause is mended.
    CheckpointDirectory directory(records::JobFiles(o.job_dir).checkpoints(), o.keep);
    std::string newest = "no checkpoint";
    for (const auto& record : directory.list()) {
      if (outcome.diverged_at_step == 0 || record.step < outcome.diverged_at_step) {
        newest = directory.path_of(record) + " (step " + std::to_string(record.step) + ")";
      }
    }
    std::fflush(stdout);
    if (outcome.diverged_at_step > 0) {
      if (newest == "no checkpoint") {
        std::fprintf(stderr,
                     "error: training diverged: %s; no checkpoint was written before it: lower "
                     "--lr and start again from step 0 with --resume\n",
                     printable(outcome.failure).c_str());
      } else {
        std::fprintf(stderr,
                     "error: training diverged: %s; the newest checkpoint before it is %s: lower "
                     "--lr and continue from it with --resume\n",
                     printable(outcome.failure).c_str(), newest.c_str());
      }
      return kExitDiverged;
    }
    std::fprintf(stderr, "error: the job failed after step %lld: %s; its newest checkpoint is %s\n",
                 static_cast<long long>(steps), printable(outcome.failure).c_str(), newest.c_str());
    return kExitFailed;
  }
  if (!finished) {
    std::printf("paused after step %lld of %lld in %s; continue with: %s %s\n",
                static_cast<long long>(steps), static_cast<long long>(job.total_steps),
                format_duration(wall_s).c_str(), continue_with, shell_word(o.job_dir).c_str());
    std::fflush(stdout);
    return kExitPaused;
  } else {
    // NaN only when no test sample could be read (each one skipped said so).
    char accuracy[64];
    if (std::isnan(result.test_accuracy)) {
      std::snprintf(accuracy, sizeof(accuracy),
                    "test accuracy: none (no test sample could be read)");
    } else {
      std::snprintf(accuracy, sizeof(accuracy), "test accuracy %.2f%%",
                    100.0 * result.test_accuracy);
    }
    // A speed where this run saw steps trained (a coordinator that took back a job whose
    // workers finished while it was away saw none: it said 0 samples/s).
    char speed[64] = "";
    if (samples_per_s > 0) std::snprintf(speed, sizeof(speed), ", %.0f samples/s", samples_per_s);
    std::printf(
        "%s after %lld steps (%.2f epochs) in %s%s\n"
        "records: %s (summary.json, events.jsonl, steps.csv, checkpoints/)\n",
        accuracy, static_cast<long long>(steps), epochs, format_duration(wall_s).c_str(), speed,
        o.job_dir.c_str());
  }
  std::fflush(stdout);
  return 0;
}

// The local fleet's options from the job's: the revocation schedule's rules and market,
// replacements, threads.
launch::FleetOptions fleet_options(const PreparedJob& prepared, launch::ForkServer* fork_server) {
  const TrainOptions& o = prepared.options;
  launch::FleetOptions fleet;
  fleet.token_path = prepared.token_path;
  fleet.threads = o.threads;
  fleet.replace_after_s = o.replace_after_s;
  fleet.max_replacements = o.max_replacements;
  fleet.rules = o.revoke;
  fleet.time_scale = o.time_scale;
  fleet.seed = o.seed;
  fleet.market = o.revocations;
  fleet.fork_server = fork_server;
  return fleet;
}

// How workers join a standalone coordinator, from this host and from others: the address to
// give, the token to copy, and the ports to open.
std::string join_instructions(const std::string& bind, const std::string& address,
                              const std::string& token_path) {
  const Endpoint front_door = parse_endpoint(address, "the coordinator's address");
  const std::string tail = " --token-file " + shell_word(token_path) + "\n";
  const bool loopback = bind == "127.0.0.1" || bind == "::1" || bind == "localhost";
  const bool wildcard = bind == "0.0.0.0" || bind == "::";
  std::string text;
  if (!wildcard) text = "join with: transient worker --coordinator " + address + tail;
  if (loopback) {
    return text +
           "(listening on loopback only: for workers on other hosts start the coordinator with "
           "--bind set to an address they reach)\n";
  }
  for (const auto& host : wildcard ? host_addresses() : std::vector<std::string>{}) {
    // 0.0.0.0 listens on IPv4 only: its IPv6 addresses answer nothing (:: takes both).
    if (bind == "0.0.0.0" && host.find(':') != std::string::npos) continue;
    text += "join with: transient worker --coordinator " + Endpoint{host, front_door.port}.text() +
            tail;
  }
  return text + "workers on other hosts need a copy of " + token_path +
         " (or TRANSIENT_TOKEN), the data set at their own path, TCP port " +
         std::to_string(front_door.port) +
         " of this host, and TCP ports between each other for Gloo's data plane (a private "
         "network: it carries gradients unauthenticated)\n";
}

}  // namespace

// The distinct flags of the fields kept as `kept`, in the table's order.
std::vector<std::string> flags_of(Kept kept) {
  std::vector<std::string> flags;
  const TrainOptions defaults;
  visit_option_fields(defaults, [&](const OptionField& field, const auto&, const auto&) {
    if (field.kept == kept && std::find(flags.begin(), flags.end(), field.flag) == flags.end()) {
      flags.emplace_back(field.flag);
    }
  });
  return flags;
}

std::vector<std::string> launch_setting_flags() { return flags_of(Kept::kLaunch); }
std::vector<std::string> job_setting_flags() { return flags_of(Kept::kSettings); }

int run_training(const TrainOptions& given, launch::ForkServer* fork_server) {
  if (given.replace_after_s >= 0 && !(given.replace_after_s <= 86400)) {
    throw InputError("--replace: accepted: a delay of 0s .. 1d");
  }
  trace_steps_from_environment();  // the workers read it: a malformed one is refused here first
  if (given.device == Device::kCuda) {
    // The workers run here: one that cannot train on a GPU would only say so once started.
    require_usable_gpus();
  }
  const PreparedJob prepared = prepare_job(given, true);
  const TrainOptions& o = prepared.options;
  EventLog events(records::JobFiles(o.job_dir).events());
  PreparedJob job = prepared;
  open_records(job, events);

  CoordinatorOptions coordinator_options;
  coordinator_options.bind = o.bind;
  coordinator_options.port = static_cast<std::uint16_t>(o.port);
  coordinator_options.dashboard = o.dashboard;
  coordinator_options.port_or_another = o.port_or_another;
  coordinator_options.dashboard_or_another = o.dashboard_or_another;
  coordinator_options.initial_workers = o.workers;
  coordinator_options.identify_checkpoint = checkpoint_identity;
  coordinator_options.invite_workers = false;  // the local fleet replaces them or ends the job
  coordinator_options.before = job.before;
  // Caught from before the coordinator writes its journal: a Ctrl-C once the job is on disk
  // pauses it (one that came between the journal and the loop killed the process).
  g_stop_requested = false;
  InterruptHandler interrupts;
  Coordinator coordinator(job.job, job.token, coordinator_options, events, job.start);
  launch::LocalFleet fleet(fleet_options(job, fork_server), coordinator,
                           [&events](const nlohmann::json& event) { events.append(event); });
  coordinator.on_admitted = [&fleet](const std::string& id, long pid) { fleet.admitted(id, pid); };
  coordinator.on_left = [&fleet](const std::string& id, const std::string& reason) {
    fleet.left(id, reason);
  };

  const auto start = Clock::now();
  for (int i = 0; i < o.workers; ++i) fleet.start_worker();
  bool invited = false;
  try {
    while (coordinator.poll(0.005)) {
      fleet.tick();
      if (g_stop_requested) coordinator.request_stop();
      if (const auto cause = fleet.exhausted()) coordinator.fail(*cause);
      // The job waits for a worker, as a coordinator's does: the user is told how to start one
      // (or to pause it), once each time it comes to wait, where it waited without a word.
      const auto all_left = fleet.all_left();
      if (all_left && !invited) {
        coordinator.say(
            *all_left + "; the job waits for one to join: transient worker --coordinator " +
            coordinator.joining_address() + " --token-file " +
            shell_word(records::JobFiles(o.job_dir).token()) + " (or Ctrl-C pauses it)");
      }
      invited = all_left.has_value();
    }
  } catch (const InputError& error) {
    return stopped_on_a_record(error.what(), coordinator, o.job_dir,
                               "transient train --resume --job-dir");
  }
  // The job's time ends here, not after its workers' exits are awaited.
  const double wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  fleet.wait_for_exit();
  return finish_job(job, coordinator, events, wall_s, o.workers,
                    "transient train --resume --job-dir");
}

namespace {

// Members away when the job ended (workers of a restarted coordinator not back yet) would wait
// for ever for a coordinator that is gone: they are told as they re-connect, for as long as the
// heartbeat timeout (after which a member that said nothing counts as lost) or until Ctrl-C.
void tell_the_absent(Coordinator& coordinator, double wait_s) {
  if (coordinator.absent().empty()) return;
  const auto names = [&] {
    std::string text;
    for (const auto& id : coordinator.absent()) text += (text.empty() ? "" : ", ") + id;
    return text;
  };
  std::fprintf(stderr,
               "transient: telling the workers away when the job ended (%s) that it has ended, "
               "for up to %s\n",
               names().c_str(), format_duration(wait_s).c_str());
  const auto until = Clock::now() + std::chrono::duration<double>(wait_s);
  while (coordinator.tell_the_absent(0.05) && Clock::now() < until && !g_stop_requested) {
  }
  if (!coordinator.absent().empty()) {
    std::fprintf(stderr,
                 "transient: %s did not come back to hear that the job has ended; stop them "
                 "with SIGTERM\n",
                 names().c_str());
  }
}

}  // namespace

int run_coordinator(const TrainOptions& flags, int min_workers) {
  const bool min_workers_given = min_workers != -1;
  if (min_workers_given && (min_workers < 1 || min_workers > 64)) {
    throw InputError("--min-workers: accepted: 1..64");
  }
  TrainOptions given = flags;
  const bool port_given = given.port != -1;
  if (!port_given) given.port = 0;
  const std::string journal_path = records::JobFiles(given.job_dir).coordinator();
  bool take_back = !given.job_dir.empty() && fs::exists(journal_path);
  bool continue_paused = false;
  PreparedJob prepared;
  CoordinatorJournal journal;
  if (take_back) {
    journal = load_coordinator_journal(journal_path);
    // A running job's own coordinator is named before its ports are found taken.
    if (!(journal.membership.ended && !journal.paused)) {
      prepared.lock = std::make_shared<JobLock>(given.job_dir);
    }
    // The front door and the dashboard where the job had them, unless given ("" = not given):
    // its workers on other hosts re-join at the front door's address, and a dashboard that was
    // off stays off. The dashboard's port too, a paused job's or a running one's, unless
    // something else has taken it meanwhile: a page left open reloads itself and goes on showing
    // the job (a running job's taken port refused the take-back, its workers waiting, for a flag
    // nobody gave).
    const std::string host = parse_endpoint(journal.front_door, journal_path).host;
    if (given.bind.empty()) given.bind = host;
    if (given.dashboard.empty()) {
      given.dashboard = the_journals_dashboard(journal, journal_path);
      given.dashboard_or_another = true;
    }
    if (journal.membership.ended && !journal.paused) {
      // A job that failed or diverged goes on as `train --resume` continues one (from its newest
      // checkpoint, a lower --lr after a divergence); a finished one is refused there.
      if (!given.resume) {
        throw InputError(journal_path, 0,
                         "the job has ended (see summary.json); there is nothing to take back; "
                         "one that failed or diverged is continued with --resume");
      }
      take_back = false;
    }
  }
  if (take_back) {
    // The job as the coordinator that died left it: its config, ports and generation.
    // A paused job is continued from its newest checkpoint, with the settings it was started
    // with; one whose coordinator died is taken back as it was.
    continue_paused = journal.membership.ended;
    // So a flag of the job's settings or of how it is run would change nothing: refused (each
    // was silently ignored), as is a --stop-at for a job taken back while it runs.
    if (!given.given_flags.empty()) {
      const std::string& flag = given.given_flags.front();
      throw InputError(journal_path, 0,
                       flag + ": a coordinator " +
                           (continue_paused ? "continuing a paused job" : "taking back a job") +
                           " runs it as its journal says; drop " + flag +
                           " (transient train --resume adopts such flags for its own jobs)");
    }
    // Its workers re-join at the journal's front door: another port would be ignored (it was,
    // silently), and a taken one is named as the job's.
    const std::uint16_t journal_port = parse_endpoint(journal.front_door, journal_path).port;
    if (!continue_paused && port_given && given.port != journal_port) {
      throw InputError(journal_path, 0,
                       "--port: a job taken back listens where its workers re-join it, port " +
                           std::to_string(journal_port) + " (its journal's); drop --port");
    }
    if (!continue_paused) {
      listen_once_free(given.bind, journal_port,
                       "the job's front door (coordinator.json's, where its workers re-join)",
                       kTakenBackPortWaitS);
    }
    if (!continue_paused && given.stop_at_step > 0) {
      throw InputError(journal_path, 0,
                       "--stop-at: a job taken back goes on as its workers run it; pause it "
                       "(Ctrl-C) and continue it with --stop-at");
    }
    prepared.job = journal.job;
    // The directory given, which may be a copy or a move of the one the journal names: its
    // records are the ones this coordinator keeps (it wrote to the journal's, whose lock it
    // did not hold).
    prepared.job.options.job_dir = fs::absolute(given.job_dir).lexically_normal().string();
    // A paused job goes on to the --stop-at given now, not to the one it paused at (it paused
    // again after one step).
    if (continue_paused) {
      check_stop_at(given.stop_at_step, prepared.job.total_steps, true);
      prepared.job.options.stop_at_step = given.stop_at_step;
    }
    prepared.options = prepared.job.options;
    prepared.options.resume = continue_paused;
    prepared.options.bind = given.bind;
    prepared.options.dashboard = given.dashboard;
    prepared.options.dashboard_or_another = given.dashboard_or_another;
    prepared.token_path = records::JobFiles(prepared.options.job_dir).token();
    prepared.token = read_job_token_file(prepared.token_path);
  } else {
    TrainOptions o = given;
    if (o.bind.empty()) o.bind = TrainOptions{}.bind;
    if (o.dashboard.empty()) o.dashboard = TrainOptions{}.dashboard;
    if (!min_workers_given) min_workers = 1;
    o.workers = min_workers;
    prepared = prepare_job(o, false);
  }
  // A job taken back or continued waits for the workers it was started with, unless told.
  if (!min_workers_given && take_back) min_workers = std::max(1, prepared.job.options.workers);
  if (continue_paused) take_back = false;
  const TrainOptions& o = prepared.options;
  EventLog events(records::JobFiles(o.job_dir).events());
  if (!take_back) open_records(prepared, events);

  CoordinatorOptions coordinator_options;
  coordinator_options.bind = o.bind;
  coordinator_options.port = static_cast<std::uint16_t>(given.port);
  coordinator_options.dashboard = o.dashboard;
  coordinator_options.dashboard_or_another = o.dashboard_or_another;
  coordinator_options.initial_workers = min_workers;
  coordinator_options.identify_checkpoint = checkpoint_identity;
  coordinator_options.taking_back = take_back;
  coordinator_options.before = prepared.before;  // take_back() has its own
  if (take_back) coordinator_options.port = parse_endpoint(journal.front_door, journal_path).port;
  if (continue_paused && !port_given) {
    // Its workers, started elsewhere, know the job's port: a paused job goes on at it, unless
    // something else has taken it meanwhile.
    coordinator_options.port = the_journals_port(journal, journal_path);
    coordinator_options.port_or_another = true;
  }
  // Caught from before the coordinator writes its journal, as train's.
  g_stop_requested = false;
  InterruptHandler interrupts;
  Coordinator coordinator(prepared.job, prepared.token, coordinator_options, events,
                          prepared.start);
  if (take_back) coordinator.take_back(journal);
  std::printf("coordinator of %s listening on %s\n", o.job_dir.c_str(),
              coordinator.address().c_str());
  std::printf("%s", join_instructions(o.bind, coordinator.address(), prepared.token_path).c_str());
  std::fflush(stdout);

  const auto start = Clock::now();
  try {
    while (coordinator.poll(0.01)) {
      if (g_stop_requested) coordinator.request_stop();
    }
  } catch (const InputError& error) {
    // Its workers, on their hosts, wait for it to come back: taken back, they re-join.
    return stopped_on_a_record(error.what(), coordinator, prepared.options.job_dir,
                               "transient coordinator --job-dir");
  }
  const double wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  // A job taken back: its run, whose wall time and samples/s the summary gives, went on from the
  // step its members had come to when they first reported again, or, finished while no
  // coordinator was there, trained nothing (it said 0, as though the job had started over).
  if (take_back) {
    prepared.start.start_step = coordinator.first_reported_step().value_or(coordinator.last_step());
  }
  // A standalone coordinator's job is continued by another one, which its workers join again.
  const int code = finish_job(prepared, coordinator, events, wall_s, min_workers,
                              "transient coordinator --job-dir");
  tell_the_absent(coordinator, prepared.options.heartbeat_timeout_s);
  return code;
}

}  // namespace transient::train
