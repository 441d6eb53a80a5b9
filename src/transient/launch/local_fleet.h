// The local workers of `transient train` and the revocations injected into them: it starts worker
// processes (worker_process.h) that join the job's coordinator, starts replacements for those that
// leave, carries out the revocation schedule (revocation_schedule.h) by signals (SIGKILL for a
// kill, SIGTERM for a preemption notice, SIGSTOP for a silence), and tells the coordinator when a
// process exits. It reaches the coordinator through FleetCoordinator, so that it needs neither
// libtorch nor the coordinator's sockets. Used by the launcher's main thread only
// (PR_SET_PDEATHSIG follows the thread that forked).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "transient/core/random.h"
#include "transient/launch/fork_server.h"
#include "transient/launch/revocation_schedule.h"
#include "transient/launch/worker_process.h"
#include "transient/market/revocation_model.h"

namespace transient::launch {

struct FleetOptions {
  std::string token_path;  // the job's token file, for the workers
  int threads = 1;         // each worker's --threads
  // A replacement starts this long after a worker leaves (< 0: none), at most max_replacements
  // times (< 0: no bound).
  double replace_after_s = -1;
  int max_replacements = -1;
  std::vector<RevokeRule> rules;                          // --revoke
  std::shared_ptr<const market::RevocationModel> market;  // --revocations (nullptr: none)
  double time_scale = 1;                                  // of the market's lifetimes
  std::uint64_t seed = 0;
  // Starts the workers without exec when set (it must outlive the fleet); by exec otherwise, and
  // from the first time it fails (said on stderr).
  ForkServer* fork_server = nullptr;
};

// What the fleet needs of the job's coordinator.
class FleetCoordinator {
 public:
  virtual ~FleetCoordinator() = default;
  // The front door, HOST:PORT, as workers pass it to --coordinator.
  virtual std::string address() const = 0;
  // When the first step the coordinator saw was completed (nullopt before).
  virtual std::optional<std::chrono::steady_clock::time_point> first_step_time() const = 0;
  virtual std::int64_t last_step() const = 0;
  // The members of the running generation, in rank order (empty between generations).
  virtual const std::vector<std::string>& members() const = 0;
  virtual std::int64_t generation() const = 0;
  // The process of `worker` exited (`status` for people).
  virtual void process_exited(const std::string& worker, const std::string& status) = 0;
  // Prints "transient: `line`" on stderr, on a line of its own (after the progress line that a
  // terminal shows in place).
  virtual void say(const std::string& line) = 0;
};

class LocalFleet {
 public:
  // An event for the job's events.jsonl.
  using Record = std::function<void(const nlohmann::json&)>;

  // `coordinator` must outlive the fleet.
  LocalFleet(FleetOptions options, FleetCoordinator& coordinator, Record record);

  // Starts one worker process.
  void start_worker();
  // The coordinator admitted `worker`, which said it runs as `pid`.
  void admitted(const std::string& worker, long pid);
  // `worker` left the job (`reason`: failed, silent, preempted, ...): a replacement is scheduled
  // if the options allow one.
  void left(const std::string& worker, const std::string& reason);
  // Starts due replacements, injects due revocations, reports exited workers.
  void tick();
  // Why the job cannot go on here: every local worker has exited, the last of them in failure,
  // no replacement is due, and no other worker is a member. nullopt while it can.
  std::optional<std::string> exhausted() const;
  // The same when the last exited as asked (preempted, stopped): the job waits for a worker to
  // join. nullopt while a local worker or replacement can go on with it.
  std::optional<std::string> all_left() const;
  // Waits for the workers to exit after the job ended; kills those that do not within 30 s.
  void wait_for_exit();

 private:
  using Clock = std::chrono::steady_clock;
  struct Local {
    std::unique_ptr<WorkerProcess> process;
    std::string id;  // once admitted
    bool reported = false;
  };

  double now_s() const;
  // Every local worker has exited, no replacement is due and no other worker is a member.
  bool all_gone() const;
  Local* find(const std::string& id);
  void inject(const Injection& injection);

  FleetOptions options_;
  FleetCoordinator& coordinator_;
  Record record_;
  RevocationSchedule schedule_;
  Rng rng_;
  bool started_ = false;
  Clock::time_point start_;
  std::vector<Local> processes_;
  std::map<std::string, long> pids_;             // of every admitted worker, as it said
  std::set<std::string> stopped_;                // SIGSTOPped by an injection
  std::set<std::string> revoked_;                // signalled by an injection and not yet gone
  std::set<std::string> gone_;                   // left the job
  std::string last_exit_;                        // how the last worker process to exit ended
  bool last_exit_failed_ = false;                // ... in failure (not exit status 0)
  std::vector<Clock::time_point> replacements_;  // when to start one, ascending
  int replaced_ = 0;                             // replacements scheduled so far
  int workers_started_ = 0;                      // the next worker's --gpu: one per GPU, in turn
};

}  // namespace transient::launch
