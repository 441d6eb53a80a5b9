// `transient train`: the coordinator of a job on this machine and the launcher of its workers.
// The coordinator hosts the c10d TCPStore, owns the job directory (job.json, token, records,
// checkpoint index) and the membership; it holds no tensors. Its thread is the only one here.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <thread>

#include "transient/core/atomic_file.h"
#include "transient/core/duration.h"
#include "transient/core/error.h"
#include "transient/core/structured_input.h"
#include "transient/train/checkpoint.h"
#include "transient/train/event_log.h"
#include "transient/train/fashion_mnist.h"
#include "transient/train/models.h"
#include "transient/train/progress_line.h"
#include "transient/train/protocol.h"
#include "transient/train/sharding.h"
#include "transient/train/step_records.h"
#include "transient/train/store_text.h"
#include "transient/train/trainer.h"
#include "transient/train/worker_process.h"

namespace transient::train {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::atomic<bool> g_stop_requested{false};

void on_interrupt(int) { g_stop_requested = true; }

// SIGINT and SIGTERM ask for an orderly pause while the object lives.
class InterruptHandler {
 public:
  InterruptHandler() {
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

void validate(const TrainOptions& o) {
  require_model(o.model);
  if (o.dataset != "fashion-mnist") {
    throw InputError("--dataset: unknown data set \"" + o.dataset + "\"; accepted: fashion-mnist");
  }
  if (o.workers < 1 || o.workers > 64) {
    throw InputError("--workers: " + std::to_string(o.workers) +
                     " is out of range; accepted: 1..64");
  }
  if (o.epochs < 1) throw InputError("--epochs: must be at least 1");
  if (o.steps < 0) throw InputError("--steps: must be at least 1");
  if (o.global_batch < 1) throw InputError("--global-batch: must be at least 1");
  if (!(o.lr > 0)) throw InputError("--lr: must be a positive number");
  if (!(o.momentum >= 0 && o.momentum < 1)) throw InputError("--momentum: accepted: 0 <= M < 1");
  if (o.keep < 1) throw InputError("--keep: must be at least 1");
  if (o.threads < 0) throw InputError("--threads: must be at least 1 (or 0 for cores / workers)");
  if (o.stop_at_step < 0) throw InputError("--stop-at: must be a step number >= 1");
}

std::string utc_stamp() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof(text), "%Y%m%d-%H%M%S", &tm);
  return text;
}

std::string new_token() {
  std::random_device entropy;
  std::string token;
  char hex[9];
  for (int i = 0; i < 8; ++i) {
    std::snprintf(hex, sizeof(hex), "%08x", entropy());
    token += hex;
  }
  return token;
}

void write_private_file(const std::string& path, const std::string& contents) {
  const std::string temporary = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) throw InputError(path, 0, "cannot create the job token file");
  const bool ok =
      ::write(fd, contents.data(), contents.size()) == static_cast<ssize_t>(contents.size()) &&
      ::fsync(fd) == 0;
  ::close(fd);
  if (!ok || ::rename(temporary.c_str(), path.c_str()) != 0) {
    ::unlink(temporary.c_str());
    throw InputError(path, 0, "cannot write the job token file");
  }
}

nlohmann::json job_identity(const TrainOptions& o) {
  return {{"model", o.model},
          {"dataset", o.dataset},
          {"global_batch", o.global_batch},
          {"seed", o.seed},
          {"train_subset", o.train_subset}};
}

bool holds_records(const std::string& dir) {
  for (const char* name : {"job.json", "events.jsonl", "steps.csv", "summary.json"}) {
    if (fs::exists(fs::path(dir) / name)) return true;
  }
  return fs::exists(fs::path(dir) / "checkpoints" / "manifest.json");
}

// Creates or re-opens the job directory; refuses a directory of another job and one holding
// records without --resume, before anything in it is touched.
void prepare_job_dir(const TrainOptions& o) {
  const std::string job_json = (fs::path(o.job_dir) / "job.json").string();
  if (fs::exists(o.job_dir) && !fs::is_directory(o.job_dir)) {
    throw InputError(o.job_dir, 0, "--job-dir: exists and is not a directory");
  }
  const bool existing = fs::is_directory(o.job_dir) && holds_records(o.job_dir);
  if (existing && !o.resume) {
    throw InputError(o.job_dir, 0,
                     "the job directory already holds a job's records; pass --resume to continue "
                     "that job, or choose another --job-dir");
  }
  if (!existing && o.resume) {
    throw InputError(o.job_dir, 0,
                     "--resume: the job directory holds no job to continue (no job.json); drop "
                     "--resume to start a new job there");
  }
  if (existing) {
    if (!fs::exists(job_json)) {
      throw InputError(job_json, 0, "missing: the directory holds records of an unknown job");
    }
    const auto recorded = load_json_file(job_json);
    const auto identity = job_identity(o);
    for (auto& [key, value] : identity.items()) {
      if (!recorded.contains(key) || recorded.at(key) != value) {
        throw InputError(job_json, 0,
                         "the job directory belongs to another job: " + key + " is " +
                             (recorded.contains(key) ? recorded.at(key).dump() : "absent") +
                             " there, " + value.dump() +
                             " here; choose another --job-dir or "
                             "pass the same --model, --dataset, --global-batch and --seed");
      }
    }
    return;
  }
  fs::create_directories(o.job_dir);
  auto identity = job_identity(o);
  identity["created_utc"] = utc_stamp();
  write_file_atomically(job_json, identity.dump(2) + "\n");
}

struct ChosenCheckpoint {
  CheckpointRecord record;
  std::int64_t step = 0;
};

// The newest checkpoint that passes its checksum and parses; the rejected ones are logged.
// Throws InputError naming the newest one if checkpoints exist and none is valid.
std::optional<ChosenCheckpoint> choose_checkpoint(const CheckpointDirectory& directory,
                                                  const TrainOptions& o, EventLog& events) {
  auto records = directory.list();
  std::optional<std::string> first_failure;
  std::vector<std::string> warnings;
  for (auto it = records.rbegin(); it != records.rend(); ++it) {
    const std::string path = directory.path_of(*it);
    try {
      const auto state = deserialize_checkpoint(directory.read_verified(*it), path);
      if (state.model != o.model || state.global_batch != o.global_batch || state.seed != o.seed ||
          state.step != it->step) {
        throw InputError(path, 0, "checkpoint of another job or step");
      }
      // Said only now that there is a checkpoint to fall back to: a refusal is one error line.
      for (const auto& warning : warnings) {
        std::fprintf(stderr, "transient: %s; resuming from an earlier checkpoint\n",
                     warning.c_str());
      }
      return ChosenCheckpoint{*it, state.step};
    } catch (const InputError& error) {
      events.append(
          {{"event", "checkpoint_rejected"}, {"file", it->file}, {"reason", error.what()}});
      warnings.push_back(error.what());
      if (!first_failure) first_failure = error.what();
    }
  }
  if (first_failure) {
    throw InputError(*first_failure +
                     "; no valid checkpoint is left to resume from (the "
                     "manifest is " +
                     directory.manifest_path() + ")");
  }
  return std::nullopt;
}

int default_threads(int workers) {
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  return std::max(1, static_cast<int>(cores) / workers);
}

nlohmann::json number_or_null(double value) {
  return value >= 0 ? nlohmann::json(value) : nlohmann::json(nullptr);
}

}  // namespace

int run_training(const TrainOptions& given) {
  TrainOptions o = given;
  validate(o);
  if (o.job_dir.empty()) o.job_dir = "jobs/" + utc_stamp() + "-" + o.model;
  if (o.threads == 0) o.threads = default_threads(o.workers);
  JobConfig job;
  job.train_samples = FashionMnist::count_training_samples(o.data_dir);
  if (o.train_subset > job.train_samples || o.train_subset < 0) {
    throw InputError("--train-subset: " + std::to_string(o.train_subset) +
                     " is out of range; accepted: 1.." + std::to_string(job.train_samples) +
                     " (or 0 for all)");
  }
  if (o.test_subset < 0) throw InputError("--test-subset: must be at least 1 (or 0 for all)");
  if (o.train_subset > 0) job.train_samples = o.train_subset;
  job.total_steps =
      o.steps > 0 ? o.steps : o.epochs * steps_per_epoch(job.train_samples, o.global_batch);
  job.warmup_steps = std::min<std::int64_t>(
      200, static_cast<std::int64_t>(o.warmup_fraction * static_cast<double>(job.total_steps)));
  prepare_job_dir(o);
  o.job_dir = fs::absolute(o.job_dir).lexically_normal().string();
  job.options = o;

  const std::string token_path = (fs::path(o.job_dir) / "token").string();
  if (!fs::exists(token_path)) write_private_file(token_path, new_token() + "\n");
  std::string token = read_file(token_path);
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) token.pop_back();

  EventLog events((fs::path(o.job_dir) / "events.jsonl").string());
  CheckpointDirectory checkpoints((fs::path(o.job_dir) / "checkpoints").string(), o.keep);
  fs::create_directories(checkpoints.dir());
  fs::create_directories(fs::path(o.job_dir) / "records");
  checkpoints.remove_leftovers();

  GenerationConfig generation;
  if (o.resume) {
    if (auto chosen = choose_checkpoint(checkpoints, o, events)) {
      generation.start_step = chosen->step;
      generation.checkpoint = chosen->record.file;
      generation.checkpoint_bytes = chosen->record.bytes;
      generation.checkpoint_crc32 = chosen->record.crc32;
    }
  }
  // Rows of steps after the checkpoint (left by a stopped or crashed run) will be redone.
  merge_step_records(o.job_dir, generation.start_step);

  c10d::TCPStoreOptions store_options;
  store_options.port = 0;  // an ephemeral port, read back below
  store_options.isServer = true;
  store_options.waitWorkers = false;
  store_options.timeout = std::chrono::seconds(300);
  auto store = c10::make_intrusive<c10d::TCPStore>("127.0.0.1", store_options);
  const std::string coordinator = "127.0.0.1:" + std::to_string(store->getPort());
  set_text(*store, "job/config", to_json(job).dump());

  InterruptHandler interrupts;
  g_stop_requested = false;
  const auto start = Clock::now();
  std::vector<WorkerProcess> workers;
  std::vector<std::string> ids;
  for (int i = 0; i < o.workers; ++i) {
    ids.push_back("w" + std::to_string(i));
    workers.emplace_back(std::vector<std::string>{
        "worker", "--coordinator", coordinator, "--token-file", token_path, "--worker-id",
        ids.back(), "--threads", std::to_string(o.threads)});
  }
  auto check_workers_alive = [&](const std::string& prefix) {
    for (std::size_t i = 0; i < workers.size(); ++i) {
      const auto status = workers[i].poll();
      if (!status) continue;
      if (store->check({prefix + "done/" + std::to_string(i)})) continue;
      events.append({{"event", "worker_failed"},
                     {"worker", ids[i]},
                     {"status", describe_wait_status(*status)}});
      throw std::runtime_error("worker " + ids[i] + " stopped before the job ended (" +
                               describe_wait_status(*status) + "); records are in " + o.job_dir);
    }
  };

  // Admission: every worker presents the job's token.
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const std::string key = "join/" + ids[i];
    while (!store->check({key})) {
      check_workers_alive("gen/0/");
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (get_text(*store, key) != token) {
      events.append({{"event", "worker_refused"}, {"worker", ids[i]}, {"reason", "wrong token"}});
      throw std::runtime_error("worker " + ids[i] + " presented a wrong job token");
    }
  }
  generation.members = ids;
  const std::string prefix = generation_prefix(generation.generation);
  set_text(*store, prefix + "config", to_json(generation).dump());
  events.append({{"event", "generation"},
                 {"gen", generation.generation},
                 {"members", generation.members},
                 {"start_step", generation.start_step},
                 {"checkpoint", generation.checkpoint},
                 {"coordinator", coordinator}});
  std::fprintf(stderr,
               "transient: training %s on %s with %d workers x %d threads, %lld steps of %lld "
               "samples%s; records in %s\n",
               o.model.c_str(), o.dataset.c_str(), o.workers, o.threads,
               static_cast<long long>(job.total_steps), static_cast<long long>(o.global_batch),
               generation.checkpoint.empty()
                   ? ""
                   : (", resuming after step " + std::to_string(generation.start_step)).c_str(),
               o.job_dir.c_str());

  ProgressLine progress;
  std::int64_t events_read = 0;
  std::int64_t last_step = generation.start_step;
  std::optional<Clock::time_point> first_step_time;
  Clock::time_point last_step_time = Clock::now();
  std::int64_t first_step = 0;
  bool stop_sent = false;
  auto drain_events = [&] {
    const std::int64_t count = store->add("events/count", 0);
    for (; events_read < count; ++events_read) {
      auto event =
          nlohmann::json::parse(get_text(*store, "events/" + std::to_string(events_read + 1)));
      events.append(event);
    }
  };
  const std::string progress_key = prefix + "progress";
  for (;;) {
    drain_events();
    if (store->check({progress_key})) {
      const auto report =
          progress_report_from_json(nlohmann::json::parse(get_text(*store, progress_key)));
      if (report.step != last_step) {
        last_step = report.step;
        last_step_time = Clock::now();
        // Throughput is measured from the first completed step, so start-up is not counted.
        if (!first_step_time) {
          first_step_time = Clock::now();
          first_step = report.step;
        }
        const double elapsed =
            std::chrono::duration<double>(Clock::now() - *first_step_time).count();
        const double steps_per_s =
            elapsed > 0 ? static_cast<double>(report.step - first_step) / elapsed : 0;
        const double samples_per_s = steps_per_s * static_cast<double>(o.global_batch);
        const double eta =
            steps_per_s > 0 ? static_cast<double>(job.total_steps - report.step) / steps_per_s : -1;
        progress.update(report.step, job.total_steps, report.epoch, report.loss, samples_per_s,
                        eta);
      }
    }
    if (g_stop_requested && !stop_sent) {
      stop_sent = true;
      set_text(*store, "control/stop", "1");
      progress.finish();
      std::fprintf(stderr,
                   "transient: pausing at the next step boundary (a checkpoint is written; "
                   "continue with --resume)\n");
      events.append({{"event", "stop_requested"}, {"step", last_step}});
    }
    bool all_done = true;
    for (std::size_t i = 0; i < workers.size(); ++i) {
      all_done = all_done && store->check({prefix + "done/" + std::to_string(i)});
    }
    if (all_done) break;
    check_workers_alive(prefix);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  for (auto& worker : workers) {
    const int status = worker.wait();
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      throw std::runtime_error("a worker failed after finishing its work (" +
                               describe_wait_status(status) + ")");
    }
  }
  drain_events();
  progress.finish();
  const double wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  const auto result =
      worker_result_from_json(nlohmann::json::parse(get_text(*store, prefix + "done/0")));
  const std::int64_t rows = merge_step_records(o.job_dir, result.step);

  // From the first to the last completed step: start-up, evaluation at the end and the final
  // checkpoint are not training throughput.
  const double measured_s =
      first_step_time ? std::chrono::duration<double>(last_step_time - *first_step_time).count()
                      : 0;
  const double samples_per_s =
      measured_s > 0 ? static_cast<double>((last_step - first_step) * o.global_batch) / measured_s
                     : 0;
  const double epochs = static_cast<double>(result.step) /
                        static_cast<double>(steps_per_epoch(job.train_samples, o.global_batch));
  nlohmann::json summary = {{"steps", result.step},
                            {"epochs", std::round(epochs * 1000.0) / 1000.0},
                            {"test_accuracy", number_or_null(result.test_accuracy)},
                            {"test_loss", number_or_null(result.test_loss)},
                            {"wall_s", wall_s},
                            {"samples_per_s", samples_per_s},
                            {"workers", o.workers},
                            {"threads_per_worker", o.threads},
                            {"model", o.model},
                            {"dataset", o.dataset},
                            {"global_batch", o.global_batch},
                            {"total_steps", job.total_steps},
                            {"resumed_from_step", generation.start_step},
                            {"stopped", result.stopped},
                            {"step_rows", rows}};
  write_file_atomically((fs::path(o.job_dir) / "summary.json").string(), summary.dump(2) + "\n");
  events.append({{"event", result.stopped ? "stopped" : "done"},
                 {"step", result.step},
                 {"test_accuracy", number_or_null(result.test_accuracy)},
                 {"wall_s", wall_s},
                 {"samples_per_s", samples_per_s}});
  if (result.stopped) {
    std::printf(
        "paused after step %lld of %lld in %s; continue with: transient train --resume "
        "--job-dir %s (and the same flags)\n",
        static_cast<long long>(result.step), static_cast<long long>(job.total_steps),
        format_duration(wall_s).c_str(), o.job_dir.c_str());
  } else {
    std::printf(
        "test accuracy %.2f%% after %lld steps (%.2f epochs) in %s, %.0f samples/s with %d "
        "workers\nrecords: %s (summary.json, events.jsonl, steps.csv, checkpoints/)\n",
        100.0 * result.test_accuracy, static_cast<long long>(result.step), epochs,
        format_duration(wall_s).c_str(), samples_per_s, o.workers, o.job_dir.c_str());
  }
  std::fflush(stdout);
  return 0;
}

}  // namespace transient::train
