#include "transient/launch/local_fleet.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <thread>
#include <utility>

namespace transient::launch {

LocalFleet::LocalFleet(FleetOptions options, FleetCoordinator& coordinator, Record record)
    : options_(std::move(options)),
      coordinator_(coordinator),
      record_(std::move(record)),
      schedule_(options_.rules),
      rng_(options_.seed ^ 0x5eedULL) {
  if (options_.market) schedule_.use_market(options_.market, options_.time_scale, options_.seed);
}

void LocalFleet::start_worker() {
  const std::vector<std::string> args{"worker",
                                      "--coordinator",
                                      coordinator_.address(),
                                      "--token-file",
                                      options_.token_path,
                                      "--threads",
                                      std::to_string(options_.threads),
                                      "--gpu",
                                      std::to_string(workers_started_++),
                                      "--quiet"};
  Local local;
  if (options_.fork_server != nullptr) {
    try {
      local.process = std::make_unique<WorkerProcess>(options_.fork_server->spawn(args));
    } catch (const std::runtime_error& error) {
      coordinator_.say(std::string("warning: ") + error.what() +
                       "; workers start by exec from now on");
      options_.fork_server = nullptr;
    }
  }
  if (!local.process) local.process = std::make_unique<WorkerProcess>(args);
  processes_.push_back(std::move(local));
}

void LocalFleet::admitted(const std::string& worker, long pid) {
  pids_[worker] = pid;
  for (auto& process : processes_) {
    if (process.process->pid() == pid) process.id = worker;
  }
  schedule_.on_worker_started(worker, now_s());
}

void LocalFleet::left(const std::string& worker, const std::string& reason) {
  if (reason == "silent" && stopped_.count(worker) > 0 && pids_[worker] > 0) {
    // Woken up, a silent worker learns that it left and exits by itself.
    ::kill(static_cast<pid_t>(pids_[worker]), SIGCONT);
  }
  revoked_.erase(worker);
  gone_.insert(worker);
  // One that could not start (its data or model file) is not replaced: its replacement, started
  // here with the same flags, would fail as it did, for as long as replacements last.
  const bool more = options_.max_replacements < 0 || replaced_ < options_.max_replacements;
  if (options_.replace_after_s >= 0 && more && reason != "misconfigured") {
    ++replaced_;
    // On the wall clock, not the injection clock, which starts only at the first step: a worker
    // lost before that step was never replaced (and no first step came without it).
    replacements_.push_back(Clock::now() +
                            std::chrono::duration_cast<Clock::duration>(
                                std::chrono::duration<double>(options_.replace_after_s)));
  }
}

void LocalFleet::tick() {
  // The injection clock starts at the first completed step, so that start-up (loading the data,
  // forming the first group) does not count.
  if (!started_ && coordinator_.first_step_time()) {
    started_ = true;
    start_ = *coordinator_.first_step_time();
  }
  const double now = now_s();
  while (!replacements_.empty() && replacements_.front() <= Clock::now()) {
    replacements_.erase(replacements_.begin());
    start_worker();
  }
  if (started_) {
    for (const auto& injection : schedule_.due(now, coordinator_.last_step())) inject(injection);
  }
  for (auto& local : processes_) {
    if (local.reported) continue;
    if (const auto status = local.process->poll()) {
      local.reported = true;
      last_exit_ = describe_wait_status(*status);
      last_exit_failed_ = !(WIFEXITED(*status) && WEXITSTATUS(*status) == 0);
      if (!local.id.empty()) coordinator_.process_exited(local.id, last_exit_);
    }
  }
}

bool LocalFleet::all_gone() const {
  if (processes_.empty() || !replacements_.empty()) return false;
  if (!coordinator_.members().empty()) return false;
  for (const auto& local : processes_) {
    if (!local.reported) return false;
  }
  return true;
}

std::optional<std::string> LocalFleet::exhausted() const {
  if (!last_exit_failed_ || !all_gone()) return std::nullopt;
  return "every worker has exited and none is left to continue (the last " + last_exit_ + ")";
}

std::optional<std::string> LocalFleet::all_left() const {
  if (last_exit_failed_ || !all_gone()) return std::nullopt;
  return "every worker has left the job (the last " + last_exit_ + ") and no replacement is due";
}

void LocalFleet::wait_for_exit() {
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  for (auto& local : processes_) {
    // One that was never admitted, or has left the job, holds nothing of it: it need not be
    // waited for (one frozen by hand would hold the launcher for the whole 30 s).
    if (local.id.empty() || gone_.count(local.id) > 0) {
      local.process->kill();
      continue;
    }
    while (!local.process->poll() && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    local.process->kill();
  }
}

double LocalFleet::now_s() const {
  return started_ ? std::chrono::duration<double>(Clock::now() - start_).count() : 0;
}

LocalFleet::Local* LocalFleet::find(const std::string& id) {
  for (auto& local : processes_) {
    if (local.id == id) return &local;
  }
  return nullptr;
}

namespace {

// Whether process `pid` runs this program's executable: a worker started by hand on this machine
// does, while a pid claimed by a worker elsewhere (another host, another pid namespace) names
// some unrelated process here, which an injection must not signal.
bool runs_this_program(long pid) {
  struct stat self {};
  struct stat other {};
  const std::string exe = "/proc/" + std::to_string(pid) + "/exe";
  return ::stat("/proc/self/exe", &self) == 0 && ::stat(exe.c_str(), &other) == 0 &&
         self.st_dev == other.st_dev && self.st_ino == other.st_ino;
}

}  // namespace

// Signals the member the injection targets: a worker this launcher started, or one started by
// hand on this machine (by the pid it gave when it joined, if that process runs this program).
// A member already revoked and not yet gone is not a target again: two rules due at once hit two
// workers.
void LocalFleet::inject(const Injection& injection) {
  std::vector<std::string> members = coordinator_.members();
  if (injection.target == TargetKind::kAny) {
    members.erase(std::remove_if(members.begin(), members.end(),
                                 [&](const std::string& id) { return revoked_.count(id) > 0; }),
                  members.end());
  }
  std::vector<std::string> running;
  for (const auto& [id, pid] : pids_) {
    if (gone_.count(id) == 0) running.push_back(id);
  }
  const auto target = resolve_target(injection, members, running, rng_);
  const auto skip = [&](const std::string& why) {
    record_({{"event", "revocation_skipped"}, {"rule", injection.rule}, {"reason", why}});
    coordinator_.say("revocation " + injection.rule + " skipped: " + why);
  };
  if (!target) {
    return skip(injection.worker_id.empty() ? "no such member now"
                                            : "worker " + injection.worker_id + " has left");
  }
  if (revoked_.count(*target) > 0) return skip("worker " + *target + " is being revoked already");
  Local* local = find(*target);
  long pid = 0;
  if (local != nullptr) {
    pid = local->reported ? 0 : local->process->pid();
  } else if (pids_[*target] > 0 && runs_this_program(pids_[*target])) {
    pid = pids_[*target];
  } else {
    return skip("worker " + *target + " runs on another host or as no process of this program");
  }
  if (pid <= 0) return skip("worker " + *target + " has exited");
  const int signal = injection.action == RevokeAction::kKill      ? SIGKILL
                     : injection.action == RevokeAction::kPreempt ? SIGTERM
                                                                  : SIGSTOP;
  record_({{"event", "revocation_injected"},
           {"action", to_string(injection.action)},
           {"worker", *target},
           {"rule", injection.rule},
           {"gen", coordinator_.generation()}});
  coordinator_.say("injecting " + to_string(injection.action) + " into worker " + *target + " (" +
                   injection.rule + ")");
  if (signal == SIGSTOP) stopped_.insert(*target);
  revoked_.insert(*target);
  ::kill(static_cast<pid_t>(pid), signal);
}

}  // namespace transient::launch
