// Reading a job's records in the trainer's tests: its arguments, steps.csv and events.jsonl,
// without libtorch's headers (what its checkpoints hold is job_checkpoints.h's).
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "train/cli_process.h"
#include "transient/train/checkpoint_directory.h"
#include "transient/train/trainer.h"

namespace transient::train::testing {

namespace fs = std::filesystem;

// A small job that crosses three epoch boundaries (20 steps of 100 samples per epoch).
inline std::vector<std::string> small_job(const std::string& job_dir, int workers, int steps = 80) {
  return {"train",
          "--model",
          "mlp",
          "--workers",
          std::to_string(workers),
          "--steps",
          std::to_string(steps),
          "--global-batch",
          "100",
          "--lr",
          "0.1",
          "--seed",
          "5",
          "--threads",
          "1",
          "--train-subset",
          "2000",
          "--test-subset",
          "500",
          "--job-dir",
          job_dir};
}

inline std::vector<std::string> with(std::vector<std::string> args,
                                     const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

// `args` with the value after `flag` replaced by `value`.
inline std::vector<std::string> set_flag(std::vector<std::string> args, const std::string& flag,
                                         const std::string& value) {
  const auto it = std::find(args.begin(), args.end(), flag);
  EXPECT_TRUE(it != args.end() && it + 1 != args.end()) << flag;
  if (it != args.end() && it + 1 != args.end()) *(it + 1) = value;
  return args;
}

inline CliResult run_ok(const std::vector<std::string>& args, const std::string& job_dir) {
  auto result = run_cli(args, job_dir + ".log");
  EXPECT_EQ(result.exit_code, kExitFinished) << result.err;
  return result;
}

// A job that pauses (--stop-at, Ctrl-C) has not finished: it exits with its own code.
inline CliResult run_paused(const std::vector<std::string>& args, const std::string& job_dir) {
  auto result = run_cli(args, job_dir + ".log");
  EXPECT_EQ(result.exit_code, kExitPaused) << result.err;
  return result;
}

// Every file under `dir` and its contents: equal snapshots mean nothing was touched.
inline std::map<std::string, std::string> snapshot_files(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file()) files[entry.path().string()] = slurp(entry.path().string());
  }
  return files;
}

struct StepRow {
  std::int64_t step = 0;
  std::int64_t worker = 0;  // rank in the generation
  std::int64_t batch = 0;
  double loss = 0;
  std::int64_t generation = 0;
  std::int64_t sample_begin = 0;
  double busy_s = 0;  // data + compute + all-reduce + optimizer
};

inline std::vector<StepRow> read_steps(const std::string& job_dir) {
  std::istringstream in(slurp((fs::path(job_dir) / "steps.csv").string()));
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line,
            "step,worker,batch,data_s,compute_s,allreduce_s,optimizer_s,loss,gen,sample_begin");
  std::vector<StepRow> rows;
  while (std::getline(in, line)) {
    std::vector<std::string> fields;
    std::istringstream cells(line);
    std::string cell;
    while (std::getline(cells, cell, ',')) fields.push_back(cell);
    EXPECT_EQ(fields.size(), 10u) << line;
    if (fields.size() != 10) continue;
    rows.push_back({std::stoll(fields[0]), std::stoll(fields[1]), std::stoll(fields[2]),
                    std::stod(fields[7]), std::stoll(fields[8]), std::stoll(fields[9]),
                    std::stod(fields[3]) + std::stod(fields[4]) + std::stod(fields[5]) +
                        std::stod(fields[6])});
  }
  return rows;
}

inline std::vector<nlohmann::json> read_events(const std::string& job_dir) {
  std::istringstream in(slurp((fs::path(job_dir) / "events.jsonl").string()));
  std::vector<nlohmann::json> events;
  std::string line;
  while (std::getline(in, line)) {
    auto event = nlohmann::json::parse(line);
    EXPECT_TRUE(event.contains("t")) << line;
    EXPECT_TRUE(event.contains("event")) << line;
    // The wall clock beside `t`: UTC, ISO 8601 with milliseconds.
    EXPECT_TRUE(event.contains("time") &&
                std::regex_match(event.at("time").get<std::string>(),
                                 std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)")))
        << line;
    events.push_back(event);
  }
  return events;
}

inline std::vector<nlohmann::json> events_named(const std::vector<nlohmann::json>& events,
                                                const std::string& name) {
  std::vector<nlohmann::json> found;
  for (const auto& event : events) {
    if (event.at("event") == name) found.push_back(event);
  }
  return found;
}

// Every checkpoint the manifest lists passes its checksum and holds the step it is listed at
// (job_checkpoints.cc, which reads them with libtorch).
void expect_every_checkpoint_loads(const std::string& job_dir);

inline int count_events(const std::vector<nlohmann::json>& events, const std::string& name) {
  return static_cast<int>(std::count_if(events.begin(), events.end(),
                                        [&](const auto& e) { return e.at("event") == name; }));
}

// Every sample of every epoch consumed exactly once: for each step 1..`steps`, the rows kept in
// steps.csv (one generation's) tile the step's positions [cursor, cursor + batch) of the epoch's
// permutation without an overlap, so each epoch's steps tile [0, samples). A member killed after
// its part of a step's all-reduce but before its row reached the coordinator leaves a gap in that
// step: a gap is accepted only in a generation that lost a member by failure (worker_left in
// events.jsonl), one per such generation, or three for a member cut off silently (the rows of
// its last steps still on their way when its link went are lost with it).
inline void expect_every_sample_once(const std::string& job_dir, std::int64_t steps,
                                     std::int64_t samples, std::int64_t global_batch) {
  std::map<std::int64_t, std::vector<StepRow>> by_step;
  for (const auto& row : read_steps(job_dir)) by_step[row.step].push_back(row);
  ASSERT_EQ(static_cast<std::int64_t>(by_step.size()), steps);
  std::set<std::int64_t> failed_generations;
  std::map<std::int64_t, int> members;  // of each generation
  int gaps_allowed = 0;
  std::istringstream events(slurp((fs::path(job_dir) / "events.jsonl").string()));
  for (std::string line; std::getline(events, line);) {
    const auto event = nlohmann::json::parse(line);
    if (event.at("event") == "generation") {
      members[event.at("gen").get<std::int64_t>()] = static_cast<int>(event.at("members").size());
    }
    if (event.at("event") == "worker_left" && event.at("reason") != "preempted") {
      const auto generation = event.at("gen").get<std::int64_t>();
      failed_generations.insert(generation);
      // The step in progress when a member dies may have completed on some survivors and not on
      // others (an all-reduce that one member finished before the loss reached it): the samples
      // of every member went into the update the new generation starts from, but only the
      // members that completed the step have its rows. A silent member's last rows may be lost
      // with it too.
      gaps_allowed += event.at("reason") == "silent" ? 3 : std::max(1, members[generation] - 1);
    }
  }
  const std::int64_t per_epoch = (samples + global_batch - 1) / global_batch;
  int gaps = 0;
  for (auto& [step, rows] : by_step) {
    const std::int64_t cursor = ((step - 1) % per_epoch) * global_batch;
    const std::int64_t batch = std::min(global_batch, samples - cursor);
    std::sort(rows.begin(), rows.end(),
              [](const StepRow& a, const StepRow& b) { return a.sample_begin < b.sample_begin; });
    const std::int64_t generation = rows.front().generation;
    const bool may_miss = failed_generations.count(generation) > 0;
    std::int64_t next = cursor;
    for (const auto& row : rows) {
      EXPECT_EQ(row.generation, generation) << "step " << step;
      if (row.batch == 0) continue;
      EXPECT_GE(row.sample_begin, next) << "step " << step << ": an overlap";
      if (row.sample_begin != next) {
        ++gaps;
        EXPECT_TRUE(may_miss) << "step " << step << ": a gap in generation " << generation;
      }
      next = row.sample_begin + row.batch;
    }
    EXPECT_LE(next, cursor + batch) << "step " << step << ": extra samples";
    if (next != cursor + batch) {
      ++gaps;
      EXPECT_TRUE(may_miss) << "step " << step << ": samples missing in generation " << generation;
    }
  }
  EXPECT_LE(gaps, gaps_allowed);
}

// Every interrupted step resumed (a `step_resumed` event) was one of a generation that lost a
// member, whose recovery counts the samples computed again, and its samples are the step's:
// those the members kept and those computed again.
inline void expect_resumed_steps(const std::vector<nlohmann::json>& events, std::int64_t batch) {
  std::map<std::int64_t, nlohmann::json> after_a_loss;  // recoveries of lost members, by gen
  for (const auto& e : events_named(events, "recovery")) {
    if (e.at("cause") == "failed") after_a_loss[e.at("gen").get<std::int64_t>()] = e;
  }
  for (const auto& e : events_named(events, "step_resumed")) {
    const auto recovery = after_a_loss.find(e.at("gen").get<std::int64_t>());
    ASSERT_NE(recovery, after_a_loss.end()) << e.dump();
    EXPECT_EQ(recovery->second.value("recomputed_samples", -1), e.at("recomputed_samples"))
        << recovery->second.dump();
    EXPECT_GT(e.at("kept_samples").get<std::int64_t>(), 0) << e.dump();
    EXPECT_GT(e.at("recomputed_samples").get<std::int64_t>(), 0) << e.dump();
    EXPECT_EQ(
        e.at("kept_samples").get<std::int64_t>() + e.at("recomputed_samples").get<std::int64_t>(),
        batch)
        << e.dump();
  }
}

// The coordinator's front door (HOST:PORT) from its journal, once it is written.
inline std::string front_door(const std::string& job_dir) {
  const auto path = fs::path(job_dir) / "coordinator.json";
  for (int i = 0; i < 3000 && !fs::exists(path); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return nlohmann::json::parse(slurp(path.string())).at("front_door").get<std::string>();
}

// Waits up to `seconds` for `done()`.
template <typename Predicate>
bool wait_until(Predicate done, double seconds = 120) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

// What a process test that waited in vain shows: the last `count` lines of the job's events
// (steps left out) and the end of each log file in `logs`, so that a failure seen once in CI
// says where the job stood.
inline std::string where_the_job_stands(const std::string& job_dir,
                                        const std::vector<std::string>& logs, int count = 20) {
  std::istringstream in(slurp((fs::path(job_dir) / "events.jsonl").string()));
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (line.find("\"event\":\"step\"") == std::string::npos) lines.push_back(line);
  }
  std::string text = "last events of " + job_dir + ":\n";
  for (std::size_t i = lines.size() > static_cast<std::size_t>(count) ? lines.size() - count : 0;
       i < lines.size(); ++i) {
    text += "  " + lines[i] + "\n";
  }
  for (const auto& log : logs) {
    const std::string content = slurp(log);
    text += log + " (end):\n" + content.substr(content.size() > 3000 ? content.size() - 3000 : 0);
  }
  return text;
}

// Waits until the first worker (w0) has recorded a step: training runs.
inline bool wait_for_training(const std::string& job_dir) {
  const std::string part = job_dir + "/records/steps-w0.part.csv";
  return wait_until([&] { return fs::exists(part) && fs::file_size(part) > 0; });
}

// Events of `job_dir` so far (the file may be growing: a last partial line is skipped).
inline std::vector<nlohmann::json> events_so_far(const std::string& job_dir) {
  std::istringstream in(slurp((fs::path(job_dir) / "events.jsonl").string()));
  std::vector<nlohmann::json> events;
  for (std::string line; std::getline(in, line);) {
    try {
      events.push_back(nlohmann::json::parse(line));
    } catch (const nlohmann::json::exception&) {
    }
  }
  return events;
}

// The CPU time process `pid` has used so far, in seconds (0 once it is gone): a worker's grows
// while it trains, where its records do not say so (while its coordinator is away).
inline double cpu_seconds(long pid) {
  const auto fields = stat_fields(pid);
  if (fields.size() < 13) return 0;
  return (std::stod(fields[11]) + std::stod(fields[12])) /
         static_cast<double>(::sysconf(_SC_CLK_TCK));
}

// The workers of the job in `job_dir` held still: each worker that has joined it (a
// `worker_joined` event) and is still running is stopped (SIGSTOP) until the hold ends (SIGCONT).
// What a test starts meanwhile, a joiner loading libtorch on a loaded machine above all, then
// lands while the job still has the steps it had, so that the job need not be sized for the
// slowest start. The coordinator runs on: a hold must stay well inside the job's heartbeat
// timeout, or it drops the held workers as silent.
class HeldWorkers {
 public:
  explicit HeldWorkers(const std::string& job_dir)
      : job_dir_(job_dir), token_(slurp(job_dir + "/token").substr(0, 64)) {
    for (const auto& e : events_so_far(job_dir)) {
      if (e.at("event") != "worker_joined") continue;
      const long pid = e.value("pid", 0L);
      if (pid <= 0 || !of_the_job(pid)) continue;
      if (::kill(static_cast<pid_t>(pid), SIGSTOP) == 0) pids_.push_back(pid);
    }
    // Stopped, not just signalled: each in state T (or gone).
    for (const long pid : pids_) {
      wait_until(
          [&] {
            const auto fields = stat_fields(pid);
            return fields.empty() || fields[0] == "T" || fields[0] == "Z";
          },
          10);
    }
  }
  HeldWorkers(const HeldWorkers&) = delete;
  HeldWorkers& operator=(const HeldWorkers&) = delete;
  ~HeldWorkers() { release(); }

  // The workers it stopped, by pid.
  const std::vector<long>& pids() const { return pids_; }

  // Continues the held workers still there (a test may have killed some meanwhile).
  void release() {
    for (const long pid : pids_) {
      if (of_the_job(pid)) ::kill(static_cast<pid_t>(pid), SIGCONT);
    }
    pids_.clear();
  }

 private:
  // A pid is a worker of this job while its command line names the job's directory (the
  // launcher's, which forked it, or a worker's --token-file) or its environment holds the job's
  // token (TRANSIENT_TOKEN): not a process that reused the pid since.
  bool of_the_job(long pid) const {
    const std::string proc = "/proc/" + std::to_string(pid);
    return slurp(proc + "/cmdline").find(job_dir_) != std::string::npos ||
           (token_.size() == 64 &&
            slurp(proc + "/environ").find("TRANSIENT_TOKEN=" + token_) != std::string::npos);
  }

  std::string job_dir_;
  std::string token_;
  std::vector<long> pids_;
};

// Whether a worker of pid `pid` has joined the job in `job_dir`.
inline bool has_joined(const std::string& job_dir, long pid) {
  for (const auto& e : events_so_far(job_dir)) {
    if (e.at("event") == "worker_joined" && e.value("pid", 0L) == pid) return true;
  }
  return false;
}

// The last event named `name`, or null.
inline nlohmann::json last_event(const std::vector<nlohmann::json>& events,
                                 const std::string& name) {
  for (auto it = events.rbegin(); it != events.rend(); ++it) {
    if (it->at("event") == name) return *it;
  }
  return nullptr;
}

// `transient coordinator` for the same job, waiting for `min_workers`, with `more` flags.
inline std::vector<std::string> coordinator_job(const std::string& job_dir, int steps,
                                                int min_workers,
                                                const std::vector<std::string>& more = {}) {
  auto args = small_job(job_dir, min_workers, steps);
  args[0] = "coordinator";
  const auto workers = std::find(args.begin(), args.end(), "--workers");
  args.erase(workers, workers + 2);  // the coordinator starts no workers
  args = with(args, {"--heartbeat-timeout", "30s", "--min-workers", std::to_string(min_workers)});
  return with(args, more);
}

// Waits until `job_dir`'s journal is the one of the coordinator of pid `pid` (a coordinator
// that takes the job back or continues it writes its own before it listens); false if it never
// is.
inline bool wait_for_journal_of(const std::string& job_dir, long pid) {
  return wait_until([&] {
    try {
      return nlohmann::json::parse(slurp(job_dir + "/coordinator.json")).at("pid") == pid;
    } catch (const std::exception&) {
      return false;
    }
  });
}

// Waits until the job in `job_dir` lists a checkpoint of step `step` or later; false if none
// came in wait_until's time.
inline bool wait_for_checkpoint(const std::string& job_dir, std::int64_t step) {
  return wait_until([&] {
    CheckpointDirectory directory((fs::path(job_dir) / "checkpoints").string(), 1);
    const auto records = directory.list();
    return !records.empty() && records.back().step >= step;
  });
}

inline nlohmann::json summary_of(const std::string& job_dir) {
  return nlohmann::json::parse(slurp(job_dir + "/summary.json"));
}

}  // namespace transient::train::testing
