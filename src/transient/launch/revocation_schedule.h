// When a local run (`transient train`) revokes its own workers, and which ones: the rules a user
// writes with --revoke ("kill@30s:rank0", "kill@every20s:any") and revocations drawn from the same
// market models the simulator uses (every worker gets a lifetime when it starts).
//
// This is pure logic on run time (seconds since the run started, from whatever clock the caller
// uses): the local fleet (local_fleet.h) asks due(now, step) and carries out what comes back
// (SIGKILL, SIGTERM, SIGSTOP), resolving each injection's target against the job's members of the
// moment with resolve_target(). Nothing here sleeps, signals or reads a clock, so tests drive it
// with made-up times. A RevocationSchedule is not thread-safe: the fleet, on the coordinator's
// thread, owns it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "transient/core/random.h"
#include "transient/market/revocation_model.h"

namespace transient::launch {

// What is done to the target process: SIGKILL (a dead process), SIGTERM (the cloud's preemption
// notice: a planned leave) or SIGSTOP (a silent host, caught by heartbeat timeout).
enum class RevokeAction { kKill, kPreempt, kStop };

// Whom a rule names: the worker at rank N in the current generation, the worker with id "wN",
// or any member drawn at random when the rule fires.
enum class TargetKind { kRank, kWorker, kAny };

// One --revoke rule, e.g. kill@30s:rank0.
struct RevokeRule {
  RevokeAction action = RevokeAction::kKill;
  bool every = false;         // "@every20s": repeats every at_s seconds (first at at_s)
  double at_s = 0;            // seconds after the run started (the period if `every`)
  std::int64_t at_step = -1;  // "@step120": after this many completed steps instead (-1 = by time)
  TargetKind target = TargetKind::kAny;
  int index = 0;     // N of rankN / workerN
  std::string text;  // the spec as written, for records
};

// Parses ACTION@TIME:TARGET: ACTION kill|preempt|stop; TIME a duration accepted by
// transient::parse_duration_s ("30s", "1.5m", "250ms", bare seconds), or "every" + a duration
// > 0, or "step" + a step count (due once that many steps are done); TARGET rankN | workerN |
// any (N a whole number >= 0).
// Examples: kill@30s:rank0, preempt@45s:worker2, stop@60s:any, kill@every20s:any.
// Throws InputError with one line: `--revoke: "<text>" <what is wrong>; accepted: ...`.
RevokeRule parse_revoke_rule(const std::string& text);

// "kill", "preempt", "stop".
std::string to_string(RevokeAction action);

// One injection to carry out.
struct Injection {
  double at_s = 0;  // run time at which it is due
  RevokeAction action = RevokeAction::kKill;
  TargetKind target = TargetKind::kAny;
  int index = 0;          // N of rankN / workerN (unused when worker_id is set)
  std::string worker_id;  // set for market-drawn injections (target kWorker by id)
  std::string rule;       // the rule's text, or "market:<model name>"
};

// Resolves an injection's target to a worker id. `members` are the job's members right now, ids
// in rank order ("w0", "w3", ...); `running`, the workers admitted and not gone, members or not.
// rankN -> members[N] if it exists; workerN -> "wN" if it is a member; a market-drawn worker_id
// -> itself if running (its server's lifetime ends whether or not it is in a generation: one that
// ended while the worker waited to join was skipped, and that worker was never revoked); any ->
// a member drawn uniformly from `rng` (one draw, only when there is a member). nullopt if no
// worker fits: the caller records the injection as skipped.
std::optional<std::string> resolve_target(const Injection& injection,
                                          const std::vector<std::string>& members,
                                          const std::vector<std::string>& running, Rng& rng);

// The injections of one run, from --revoke rules and/or a market model.
class RevocationSchedule {
 public:
  explicit RevocationSchedule(std::vector<RevokeRule> rules);

  // Market-driven revocations: every worker that starts afterwards gets a lifetime drawn from
  // `model` (RevocationModel::sample_lifetime_s, with an Rng seeded by `seed`) divided by
  // `time_scale` (3600 = one market hour per second of run time); it is preempted (kPreempt of
  // kWorker by id) then. kNever lifetimes schedule nothing.
  // REQUIRES: model != nullptr, time_scale > 0 and finite.
  void use_market(std::shared_ptr<const market::RevocationModel> model, double time_scale,
                  std::uint64_t seed);

  // Tells the schedule that `worker_id` started at run time `now_s`. Only market-driven schedules
  // use it (otherwise it does nothing). A worker id that starts again gets a fresh lifetime that
  // replaces its pending one.
  void on_worker_started(const std::string& worker_id, double now_s);

  // The injections due at or before `now_s`, in time order (ties: rules in the order given, then
  // market ones in the order their workers started), each returned once. An "every" rule
  // re-arms: every occurrence up to now_s is returned, so a caller that polls late gets the
  // ones it missed.
  // Rules given by step are due once `step` steps are done (-1 = not known yet).
  std::vector<Injection> due(double now_s, std::int64_t step = -1);

  // The time of the next injection, or nullopt if none is pending.
  std::optional<double> next_at() const;

  // No rules and no market model.
  bool empty() const;

 private:
  struct ArmedRule {
    RevokeRule rule;
    std::int64_t fired = 0;  // occurrences returned so far
    bool done = false;       // a one-off rule that has fired
  };

  // The time of the rule's next occurrence; REQUIRES: !armed.done.
  static double next_time_s(const ArmedRule& armed);

  std::vector<ArmedRule> rules_;
  std::shared_ptr<const market::RevocationModel> model_;
  double time_scale_ = 1.0;
  Rng rng_{0};
  std::vector<Injection> market_pending_;  // in the order their workers started
};

}  // namespace transient::launch
