#include "transient/elastic/membership.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

#include "transient/core/text.h"
#include "transient/launch/batch_split.h"
#include "transient/records/event_reader.h"

namespace transient::elastic {

namespace {

// Generations in a row that may fail before their first step with every member still there.
constexpr int kFailuresWithoutAStep = 3;

double seconds_between(TimePoint from, TimePoint to) {
  return std::chrono::duration<double>(to - from).count();
}

double rounded_ms(double seconds) { return std::round(seconds * 1e6) / 1e6; }

// `seconds` as people read them: "12", "2.5".
std::string seconds_text(double seconds) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.3g", seconds);
  return text;
}

bool contains(const std::vector<std::string>& ids, const std::string& id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

}  // namespace

bool is_planned_change(const std::string& cause) {
  return cause == "join" || cause == "change" || cause == "rebalance";
}

Membership::Membership(MembershipOptions options, Env& env)
    : options_(std::move(options)),
      env_(env),
      next_worker_(options_.first_worker),
      generation_(options_.first_generation - 1),
      first_generation_(options_.first_generation),
      start_(options_.start) {
  last_step_ = start_.step;
  attempted_step_ = start_.step;
  last_balance_check_ = env_.now();
}

std::vector<Action> Membership::take_actions() { return std::exchange(actions_, {}); }

MembershipJournal Membership::journal() const {
  MembershipJournal journal{generation_, first_generation_,
                            members_,    next_worker_,
                            ended_,      ended_ && stopped_ && failure_.empty(),
                            std::nullopt};
  if (recovery_) {
    journal.recovery = JournaledRecovery{recovery_->generation, recovery_->cause, recovery_->lost,
                                         recovery_->attempted_step};
  }
  return journal;
}

const WorkerInfo* Membership::find(const std::string& id) const {
  const auto it = workers_.find(id);
  return it == workers_.end() ? nullptr : &it->second;
}

WorkerInfo* Membership::find_mutable(const std::string& id) {
  const auto it = workers_.find(id);
  return it == workers_.end() ? nullptr : &it->second;
}

bool Membership::running_member(const std::string& id) const {
  const WorkerInfo* worker = find(id);
  return running_ && worker != nullptr && worker->state == WorkerState::kMember;
}

std::string Membership::next_worker_id() {
  for (;;) {
    std::string id = "w" + std::to_string(next_worker_++);
    if (workers_.count(id) == 0) return id;
  }
}

bool is_plain_worker_id(const std::string& id) {
  if (id.empty() || id.size() > 64 || id == "." || id == "..") return false;
  return std::all_of(id.begin(), id.end(),
                     [](char c) { return c > ' ' && c < 0x7f && c != '/' && c != '"'; });
}

std::optional<std::string> Membership::admit(const std::string& requested, long pid,
                                             std::string& refusal) {
  if (ended_) {
    refusal = "the job has ended";
    return std::nullopt;
  }
  // A worker that was loading or waiting when a coordinator died comes back with its id but no
  // generation: it is admitted as a new worker under that id (it holds no state).
  std::string id = requested;
  if (id.empty()) {
    id = next_worker_id();
  } else if (!is_plain_worker_id(id)) {
    refusal = "worker id \"" + printable(id.substr(0, 64)) +
              "\" is not a plain name (printable ASCII without spaces, '/' or '\"')";
    return std::nullopt;
  } else if (const auto it = workers_.find(id); it != workers_.end()) {
    // The records name each worker once: a worker that left keeps its id (its rows, its bill).
    refusal = "worker id \"" + id + "\" " +
              (it->second.released ? "belonged to a worker that left the job; a worker id is "
                                     "never used twice: give another, or none"
                                   : "is taken by a worker in the job");
    return std::nullopt;
  }
  WorkerInfo worker;
  worker.id = id;
  worker.pid = pid;
  worker.admitted = env_.now();
  worker.last_heard = worker.admitted;
  workers_[id] = worker;
  actions_.push_back(action::WriteJournal{});  // the next worker number
  return id;
}

std::string Membership::rejoin(const std::string& id, const RejoinState& state) {
  WorkerInfo* worker = find_mutable(id);
  if (ended_) return "the job has ended";
  if (worker == nullptr || worker->state == WorkerState::kGone || state.gen != generation_) {
    return "not a member of generation " + std::to_string(generation_) + " (it has left the job)";
  }
  heard_from(*worker);
  if (state.reported && worker->state == WorkerState::kMember) {
    reported(*worker, state.step, state.attempted, state.leaving, state.cause);
    end_generation(worker->leave_reason);
  }
  actions_.push_back(
      action::Record{{{"event", "worker_rejoined"}, {"worker", id}, {"gen", generation_}}, ""});
  return "";
}

void Membership::reported(WorkerInfo& worker, std::int64_t held, std::int64_t attempted,
                          bool leaving, const std::string& reason) {
  worker.state = WorkerState::kReported;
  worker.held = held;
  worker.attempted = attempted >= 0 ? attempted : held;
  worker.leaving = leaving;
  worker.leave_reason = reason;
  attempted_step_ = std::max(attempted_step_, worker.attempted);
}

void Membership::heard(const std::string& id) {
  if (WorkerInfo* worker = find_mutable(id)) heard_from(*worker);
}

void Membership::heard_from(WorkerInfo& worker) {
  const TimePoint now = env_.now();
  worker.last_heard = now;
  if (!held_since_ || worker.state == WorkerState::kGone) return;
  // The link is back, and what the others said meanwhile is on its way, but each connection's
  // TCP resends it only when its own retransmission timer fires, and that timer backed off while
  // the link was cut: the next try comes up to about as long after the link's return as the
  // silence lasted. Their silence counts from then (one not heard a heartbeat timeout after that
  // is dropped, as silent); from now, one of them was dropped 3 s after the first was heard again
  // after a 55 s cut, its heartbeats still in its socket.
  const auto held = now - *held_since_;
  const double held_s = rounded_ms(std::chrono::duration<double>(held).count());
  held_since_.reset();
  for (auto& [id, other] : workers_) {
    if (other.state != WorkerState::kGone) other.last_heard = &other == &worker ? now : now + held;
  }
  actions_.push_back(
      action::Record{{{"event", "workers_heard_again"}, {"worker", worker.id}, {"held_s", held_s}},
                     "heard from worker " + worker.id + " again after " + seconds_text(held_s) +
                         " s of silence: the job goes on with its members"});
}

void Membership::heartbeat(const std::string& id, std::optional<double> speed) {
  WorkerInfo* worker = find_mutable(id);
  if (worker == nullptr) return;
  heard_from(*worker);
  if (speed && std::isfinite(*speed) && *speed >= 0) worker->speed = *speed;
}

void Membership::ready(const std::string& id, const std::string& address,
                       const std::string& probe) {
  WorkerInfo* worker = find_mutable(id);
  if (worker == nullptr) return;
  worker->address = address.substr(0, 256);
  worker->probe = probe.substr(0, 300);
  actions_.push_back(action::Record{
      {{"event", "worker_ready"}, {"worker", id}, {"address", worker->address}}, ""});
  if (worker->state == WorkerState::kLoading) {
    worker->state = WorkerState::kPending;
    pending_.push_back(id);
  }
}

void Membership::progress(std::int64_t step) {
  last_step_ = step;
  attempted_step_ = std::max(attempted_step_, step);
}

void Membership::report(const std::string& id, const Report& report) {
  WorkerInfo* worker = find_mutable(id);
  if (worker == nullptr || worker->state == WorkerState::kGone) return;
  if (report.gen != generation_) return;  // about a generation that is over
  switch (report.kind) {
    case Report::Kind::kGrouped:
    case Report::Kind::kFormed:
      formed_ = true;
      unformed_count_ = 0;
      unformed_members_.clear();
      if (report.kind == Report::Kind::kFormed && recovery_ &&
          recovery_->generation == report.gen) {
        recovery_->formed = env_.now();
      }
      return;
    case Report::Kind::kStepped:
      if (recovery_ && recovery_->generation == report.gen) recovered(report.step, report.step);
      return;
    case Report::Kind::kFailed:
    case Report::Kind::kBoundary: {
      if (worker->state != WorkerState::kMember) return;
      reported(*worker, report.step, report.attempted, report.leaving, report.reason);
      if (report.kind == Report::Kind::kFailed) {
        if (!formed_ && !report.unreachable.empty()) note_unreachable(report.unreachable);
        if (!first_failure_) first_failure_ = env_.now();
        end_generation(report.cause);
      } else {
        if (worker->leaving && !first_failure_) first_failure_ = env_.now();
        end_generation(worker->leaving ? worker->leave_reason : "change");
      }
      return;
    }
    case Report::Kind::kDone: {
      // Every member's result is the same (the evaluation is all-reduced).
      const std::int64_t step = report.step >= 0 ? report.step : last_step_;
      if (worker->state == WorkerState::kMember) {
        worker->state = WorkerState::kDone;
        worker->said_done = true;
        worker->held = step;  // the state it holds, should rank 0 be lost before storing it
      }
      // A loss after the job's last step: the generation formed after it has no step to train,
      // and ends the job at once; its first member done ends the recovery instead of a step.
      if (recovery_ && recovery_->generation == report.gen) recovered(step + 1, step);
      return;
    }
  }
}

void Membership::worker_lost(const std::string& id, const std::string& reason) {
  WorkerInfo* worker = find_mutable(id);
  if (worker != nullptr) gone(*worker, reason);
}

void Membership::gone(WorkerInfo& worker, const std::string& reason) {
  if (worker.state == WorkerState::kGone) return;
  const WorkerState previous = worker.state;
  worker.state = WorkerState::kGone;
  worker.leave_reason = reason;
  worker.released = env_.now();
  pending_.erase(std::remove(pending_.begin(), pending_.end(), worker.id), pending_.end());
  const bool member = contains(members_, worker.id);
  action::WorkerLeft left;
  left.worker = worker.id;
  left.reason = reason;
  left.announce = !ended_ && previous != WorkerState::kDone;
  left.trained = member && running_;
  left.member = member;
  left.gen = generation_;
  left.step = last_step_;
  actions_.push_back(left);
  if (!left.announce) return;
  if (records::left_by_revocation(reason)) ++revocations_;
  if (member && running_ && previous == WorkerState::kMember) {
    if (!first_failure_) first_failure_ = env_.now();
    end_generation(reason);
    for (const auto& other : members_) {
      if (find(other)->state == WorkerState::kMember) {
        actions_.push_back(action::Signal{other, "abort", generation_});
      }
    }
  }
  if (member) lost_.push_back(worker.id);
}

void Membership::end_generation(const std::string& cause) {
  // A loss overrides a planned change in progress (it is a recovery), never the other way.
  if (ending_ && !(is_planned_change(ending_cause_) && !is_planned_change(cause))) return;
  ending_ = true;
  ending_cause_ = cause;
}

void Membership::note_unreachable(const std::vector<std::string>& ids) {
  for (const auto& id : ids) {
    if (contains(members_, id)) ++unreachable_votes_[id];
  }
}

void Membership::drop_unreachable_member() {
  std::vector<std::string> members = members_;
  std::sort(members.begin(), members.end());
  if (members == unformed_members_) {
    ++unformed_count_;
  } else {
    unformed_members_ = members;
    unformed_count_ = 1;
  }
  if (unformed_count_ < 2 || unreachable_votes_.empty()) return;
  std::string blamed;
  int votes = 0;
  bool tie = false;
  for (const auto& [id, count] : unreachable_votes_) {
    if (count > votes) {
      blamed = id;
      votes = count;
      tie = false;
    } else if (count == votes) {
      tie = true;
    }
  }
  if (tie) return;
  WorkerInfo& worker = *find_mutable(blamed);
  const std::string why =
      "its peers could not reach it at " + worker.address +
      " (twice); start it with --advertise ADDR or --interface IFNAME naming an address the "
      "other workers can reach";
  actions_.push_back(action::Record{{{"event", "worker_unreachable"},
                                     {"worker", blamed},
                                     {"address", worker.address},
                                     {"gen", generation_}},
                                    "worker " + blamed + " dropped: " + why});
  actions_.push_back(action::Drop{blamed, "unreachable: " + why});
  gone(worker, "unreachable");
  unformed_count_ = 0;
  unformed_members_.clear();
}

bool Membership::hold_if_all_silent() {
  const TimePoint now = env_.now();
  const double timeout = options_.heartbeat_timeout_s;
  if (held_since_) {
    if (seconds_between(*held_since_, now) <= options_.silence_hold_s) return true;
    held_since_.reset();
    actions_.push_back(action::Record{{{"event", "workers_unheard"},
                                       {"held_s", rounded_ms(options_.silence_hold_s)},
                                       {"dropped", true}},
                                      "no worker heard again within " +
                                          seconds_text(options_.silence_hold_s) +
                                          " s: each is dropped as silent"});
    return false;
  }
  if (options_.silence_hold_s <= 0 || !running_ || members_.empty()) return false;
  // At once: when the first passes the timeout, none was heard for half of it either (a member
  // sends five heartbeats a timeout).
  const TimePoint listened = env_.listened_at();
  bool any_past = false;
  std::vector<std::string> silent;
  for (const auto& [id, worker] : workers_) {
    if (worker.state == WorkerState::kGone || worker.state == WorkerState::kDone) continue;
    const double quiet_s = seconds_between(worker.last_heard, listened);
    if (quiet_s <= timeout / 2) return false;
    any_past = any_past || quiet_s > timeout;
    silent.push_back(id);
  }
  if (!any_past) return false;
  held_since_ = now;
  actions_.push_back(action::Record{
      {{"event", "workers_unheard"}, {"workers", silent}, {"step", last_step_}},
      "no worker heard for " + seconds_text(timeout) +
          " s, all of them at once: the coordinator's own link may be cut; they stay members "
          "for up to " +
          seconds_text(options_.silence_hold_s) +
          " s, training on among themselves (their steps are recorded once they are heard)"});
  return true;
}

void Membership::check_heartbeats() {
  if (hold_if_all_silent()) return;
  const TimePoint listened = env_.listened_at();
  for (auto& [id, worker] : workers_) {
    if (worker.state == WorkerState::kGone || worker.state == WorkerState::kDone) continue;
    if (seconds_between(worker.last_heard, listened) <= options_.heartbeat_timeout_s) continue;
    actions_.push_back(action::Drop{id, "silent"});
    // The failure happened when it fell silent, not when that was noticed.
    if (running_ && worker.state == WorkerState::kMember && !first_failure_) {
      first_failure_ = worker.last_heard;
    }
    gone(worker, "silent");
  }
}

void Membership::tick() {
  if (ended_) return;
  check_heartbeats();
  if (stop_requested_ && running_ && !formed_ && stop_time_ &&
      seconds_between(std::max(*stop_time_, forming_since_), env_.now()) >
          options_.stop_forming_s) {
    // A group that has not formed within a moment of Ctrl-C or SIGTERM, or of beginning to form
    // after it (a member fell silent, and the next generation began once the heartbeat timeout
    // passed: cut off at once, its members' state was never written), holds no step in progress:
    // the job pauses now instead of waiting for it (its members exit when told).
    actions_.push_back(
        action::Record{{{"event", "stopped_while_forming"}, {"gen", generation_}}, ""});
    stop_now();
    return;
  }
  finish_if_done();
  if (ended_) return;
  maybe_signal_change();
  maybe_form_generation();
}

void Membership::recovered(std::int64_t next_step, std::int64_t step) {
  const TimePoint now = env_.now();
  action::Recovered recovered;
  recovered.gen = recovery_->generation;
  recovered.cause = recovery_->cause;
  recovered.lost = recovery_->lost;
  recovered.detect_s = rounded_ms(seconds_between(recovery_->failed, recovery_->decided));
  recovered.reform_s =
      rounded_ms(seconds_between(recovery_->decided, recovery_->formed.value_or(now)));
  recovered.duration_s = rounded_ms(seconds_between(recovery_->failed, now));
  recovered.waited_s = rounded_ms(recovery_->waited_s);
  recovered.redone_steps = std::max<std::int64_t>(0, recovery_->attempted_step - (next_step - 1));
  recovered.step = step;
  recovered.members = members_.size();
  recovered.at_end = next_step > step;
  ++recoveries_;
  redone_steps_ += recovered.redone_steps;
  recovery_.reset();
  actions_.push_back(std::move(recovered));
  actions_.push_back(action::WriteJournal{});  // no recovery in progress
}

void Membership::end(const action::EndJob& end) {
  running_ = false;
  ended_ = true;
  stopped_ = end.stopped;
  failure_ = end.failure;
  actions_.push_back(end);
  actions_.push_back(action::WriteJournal{});  // says how the job ended
}

void Membership::stop_now() { end(action::EndJob{false, true, "", last_step_}); }

void Membership::request_stop(bool reachable) {
  if (stop_requested_ || ended_) return;
  stop_requested_ = true;
  stop_time_ = env_.now();
  actions_.push_back(action::Record{{{"event", "stop_requested"}, {"step", last_step_}}, ""});
  // Members not heard (held: the coordinator's link may be cut) cannot be told either.
  if (!running_ || !reachable || held_since_) {
    stop_now();
    return;
  }
  actions_.push_back(action::Signal{members_.front(), "stop", generation_});
}

void Membership::end_job(const std::string& failure) {
  if (!ended_) end(action::EndJob{false, false, failure, last_step_});
}

void Membership::finish_if_done() {
  if (!running_ || members_.empty()) return;
  bool any_done = false;
  for (const auto& id : members_) {
    const WorkerInfo& worker = *find(id);
    if (worker.state == WorkerState::kMember) return;
    // One that said done and went since (its process ended: it was signalled while it waited)
    // is done all the same.
    any_done = any_done || worker.said_done;
  }
  if (!any_done) return;
  if (!find(members_.front())->said_done) {
    // Rank 0 stores the job's final checkpoint before it says it is done: lost before that, the
    // job's result would be no checkpoint of its last step. The members done hold that state
    // (every member's is the same): they are survivors, and the generation they form has no
    // step to train; its rank 0 stores the state and ends the job.
    for (const auto& id : members_) {
      WorkerInfo& worker = *find_mutable(id);
      if (worker.state == WorkerState::kDone) reported(worker, worker.held, worker.held, false, "");
    }
    end_generation(find(members_.front())->leave_reason);
    return;
  }
  end(action::EndJob{true, stop_requested_, "", last_step_});
}

void Membership::maybe_signal_change() {
  if (!running_ || ending_ || stop_requested_) return;
  std::string cause;
  if (!pending_.empty()) {
    cause = "join";
  } else if (seconds_between(last_balance_check_, env_.now()) >= options_.balance_check_s) {
    last_balance_check_ = env_.now();
    std::vector<double> speeds;
    for (const auto& id : members_) speeds.push_back(find(id)->speed);
    if (generation_speeds_.size() != speeds.size()) return;  // the split in force is unknown
    const auto now = launch::member_shares(options_.global_batch, speeds);
    const auto current = launch::member_shares(options_.global_batch, generation_speeds_);
    bool imbalanced = false;
    for (std::size_t i = 0; i < now.size() && i < current.size(); ++i) {
      imbalanced =
          imbalanced || std::abs(now[i] - current[i]) > std::max<std::int64_t>(1, current[i] / 10);
    }
    // Per-step speeds are noisy (workers sharing cores, a slow path): near the 25% at which the
    // split starts to follow speeds, one check can ask for a split that the speeds at the next
    // generation no longer give, and the re-formation is wasted. Two checks in a row must agree.
    imbalanced_checks_ = imbalanced ? imbalanced_checks_ + 1 : 0;
    if (imbalanced_checks_ >= 2) cause = "rebalance";
  }
  if (cause.empty()) return;
  actions_.push_back(action::Signal{members_.front(), "change", generation_});
  ending_ = true;
  ending_cause_ = cause;
}

void Membership::maybe_form_generation() {
  const TimePoint now = env_.now();
  if (running_) {
    if (!ending_) return;
    std::vector<std::string> survivors;
    for (const auto& id : members_) {
      const WorkerInfo& worker = *find(id);
      if (worker.state == WorkerState::kMember) return;  // not every member has reported
      if (worker.state == WorkerState::kDone) return;    // the job is finishing
      if (worker.state == WorkerState::kReported && !worker.leaving) survivors.push_back(id);
    }
    for (const auto& id : members_) {
      WorkerInfo& worker = *find_mutable(id);
      if (worker.state == WorkerState::kReported && worker.leaving)
        gone(worker, worker.leave_reason);
    }
    running_ = false;
    if (!formed_) drop_unreachable_member();
    // A failure with every member still there (none lost, none dropped) before the generation's
    // first step is retried; three in a row is an error retrying does not fix (a collective that
    // refuses a member's buffers, a peer that answers nonsense), and the job stops with it rather
    // than re-forming for ever.
    const bool failed_alone =
        !is_planned_change(ending_cause_) && lost_.empty() && last_step_ <= generation_start_step_;
    failed_without_a_step_ = failed_alone ? failed_without_a_step_ + 1 : 0;
    if (failed_without_a_step_ >= kFailuresWithoutAStep) {
      std::string members;
      for (const auto& id : members_) members += (members.empty() ? "" : ", ") + id;
      end_job("generations " + std::to_string(generation_ - kFailuresWithoutAStep + 1) + " to " +
              std::to_string(generation_) + " of the same workers (" + members +
              ") each failed before completing a step, at step " +
              std::to_string(generation_start_step_) +
              ", with none of them lost: a failure retrying does not fix (the workers' logs "
              "say what failed)");
      return;
    }
    // A loss (a member gone, even one that had reported at a planned boundary) is a recovery.
    if (!is_planned_change(ending_cause_) || !lost_.empty()) {
      std::string cause = ending_cause_;
      if (!lost_.empty()) cause = find(lost_.front())->leave_reason;
      if (recovery_) {
        // Another loss before the recovery's first step: one recovery, longer.
        recovery_->generation = generation_ + 1;
        recovery_->decided = now;
        recovery_->formed.reset();
        recovery_->attempted_step = std::max(recovery_->attempted_step, attempted_step_);
        // A recovery from failures with nobody lost (a group that could not form) that loses a
        // worker is a recovery from that loss: a joiner its peers could not reach was said
        // "recovered from the loss of w2 (failed)".
        if (recovery_->lost.empty() && !lost_.empty()) {
          recovery_->cause = find(lost_.front())->leave_reason;
        }
        recovery_->lost.insert(recovery_->lost.end(), lost_.begin(), lost_.end());
      } else {
        Recovery recovery;
        recovery.generation = generation_ + 1;
        recovery.cause = cause;
        recovery.failed = first_failure_.value_or(now);
        recovery.decided = now;
        recovery.attempted_step = attempted_step_;
        recovery.lost = lost_;
        recovery_ = recovery;
      }
    } else if (recovery_) {
      recovery_->generation = generation_ + 1;  // a join before the recovery's first step
    }
    first_failure_.reset();
    lost_.clear();
    survivors.erase(std::remove_if(survivors.begin(), survivors.end(),
                                   [&](const std::string& id) {
                                     return find(id)->state == WorkerState::kGone;
                                   }),
                    survivors.end());
    if (!survivors.empty() || !pending_.empty()) {
      form_generation(std::move(survivors));
      return;
    }
    members_.clear();
    actions_.push_back(action::WriteJournal{});
  }
  if (stop_requested_) {
    stop_now();
    return;
  }
  if (pending_.empty()) {
    if (generation_ >= first_generation_ && !waiting_announced_) {
      waiting_announced_ = true;
      actions_.push_back(action::Waiting{last_step_});
    }
    return;
  }
  if (generation_ < first_generation_) {  // the run's first generation
    const bool enough = static_cast<int>(pending_.size()) >= options_.initial_workers;
    // Counted from the earliest admission of those waiting now: from the run's first, a worker
    // that had left again started the count for the others (one that came 48 s later formed the
    // generation alone 12 s after).
    std::optional<TimePoint> earliest;
    for (const auto& id : pending_) {
      if (const auto* worker = find(id); worker != nullptr) {
        if (!earliest || worker->admitted < *earliest) earliest = worker->admitted;
      }
    }
    const bool waited_long = earliest && seconds_between(*earliest, now) > options_.initial_wait_s;
    if (!enough && !waited_long) return;
  }
  form_generation({});
}

void Membership::form_generation(std::vector<std::string> survivors) {
  Generation next;
  next.number = generation_ + 1;
  next.members = survivors;
  next.members.insert(next.members.end(), pending_.begin(), pending_.end());
  if (recovery_ && survivors.empty())
    recovery_->waited_s = seconds_between(recovery_->decided, env_.now());
  std::int64_t held = -1;
  for (const auto& id : survivors) held = std::max(held, find(id)->held);
  if (held < 0) {
    // No member holds state: the newest checkpoint (the run's first generation: the one the job
    // resumes from).
    if (generation_ >= first_generation_ || start_unknown_) {
      start_ = env_.start_point();
      if (recovery_) recovery_->attempted_step = std::max(recovery_->attempted_step, last_step_);
    }
    next.from = start_;
    next.start_step = start_.step;
    last_step_ = start_.step;
  } else {
    next.from_survivors = true;
    next.start_step = held;
  }
  for (const auto& id : next.members) {
    next.speeds.push_back(find(id)->speed);
    next.probes.push_back(find(id)->probe);
  }
  next.after_loss = recovery_.has_value();
  generation_speeds_ = next.speeds;
  last_balance_check_ = env_.now();
  imbalanced_checks_ = 0;
  generation_ = next.number;
  members_ = next.members;
  running_ = true;
  formed_ = false;
  forming_since_ = env_.now();
  unreachable_votes_.clear();
  ending_ = false;
  ending_cause_.clear();
  waiting_announced_ = false;
  attempted_step_ = next.start_step;
  generation_start_step_ = next.start_step;
  pending_.clear();
  for (const auto& id : members_) {
    WorkerInfo& worker = *find_mutable(id);
    worker.state = WorkerState::kMember;
    worker.said_done = false;
    worker.held = -1;
    worker.attempted = -1;
    worker.leaving = false;
  }
  actions_.push_back(action::WriteJournal{});  // before the members hear of it
  actions_.push_back(action::StartGeneration{next});
  if (stop_requested_) actions_.push_back(action::Signal{members_.front(), "stop", generation_});
}

void Membership::take_back(const MembershipJournal& journal, double unbilled_s) {
  generation_ = journal.generation;
  first_generation_ = journal.first_generation;
  next_worker_ = journal.next_worker;
  members_ = journal.members;
  const TimePoint now = env_.now();
  for (const auto& id : members_) {
    WorkerInfo worker;
    worker.id = id;
    worker.state = WorkerState::kMember;
    worker.last_heard = now;
    worker.admitted = now - std::chrono::duration_cast<TimePoint::duration>(
                                std::chrono::duration<double>(std::max(0.0, unbilled_s)));
    workers_[id] = worker;
  }
  running_ = generation_ >= first_generation_ && !members_.empty();
  start_unknown_ = generation_ < first_generation_;
  if (journal.recovery) {
    Recovery recovery;
    recovery.generation = journal.recovery->generation;
    recovery.cause = journal.recovery->cause;
    recovery.lost = journal.recovery->lost;
    recovery.attempted_step = journal.recovery->attempted_step;
    recovery.failed = recovery.decided = now;
    recovery_ = recovery;
  }
  formed_ = true;  // its members formed their group before the restart
  generation_speeds_.clear();
  last_balance_check_ = now;
  actions_.push_back(action::WriteJournal{});
}

}  // namespace transient::elastic
