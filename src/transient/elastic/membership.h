// The membership rules of an elastic job, as a state machine without sockets, libtorch or a real
// clock: who is in a generation, when a change is signalled, which state a new generation starts
// from, when a member is dropped, and how a recovery is accounted. Typed events come in as method
// calls; what the coordinator must do comes out as typed actions, in order, from take_actions().
// The coordinator (train/coordinator.h) is the shell of sockets around it: it turns messages into
// events and actions into messages, records and files. Time, and the checkpoint a generation with
// no survivor starts from, come from an Env (leveldb's idea): tests drive the rules on a clock of
// their own in microseconds.
//
// Workers go Loading (admitted) -> Pending (ready: data and model loaded) -> Member (of the
// running generation) -> Reported (its part in the generation ended, holding state of a step)
// -> Member of the next generation, or Gone (left: failed, silent, preempted, unreachable,
// stopped), or Done (the job ended with it). A failure (connection closed, process exited,
// heartbeats missed) ends the running generation at once and every other member is told to abort;
// a planned change (a pending join, a rebalance) is signalled to rank 0 and a member's preemption
// notice travels in the step's all-reduce, so that the members report at the same step boundary.
// Once every member has reported, the next generation is formed from the survivors and the
// pending workers: it starts from the most advanced state a survivor holds, else from the Env's
// start point (the newest valid checkpoint). A generation that fails to form twice with the same
// members drops the member the others named as unreachable; one that fails three times in a row
// before its first step with nobody lost ends the job (a failure retrying does not fix, not a
// revocation). A loss opens a recovery that is
// recorded, with its timings and the steps redone, when the next generation completes its first
// step; losses before that are folded into it.
//
// Not thread-safe: one thread (the coordinator's) calls it.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace transient::elastic {

using Clock = std::chrono::steady_clock;
using TimePoint = Clock::time_point;

// A state a generation can start from when no member holds one.
struct StartPoint {
  std::int64_t step = 0;   // steps completed in that state
  std::string checkpoint;  // its file in the job's checkpoints ("" = a fresh start)
  std::int64_t bytes = 0;
  std::uint32_t crc32 = 0;
};

// What the rules need of the world.
class Env {
 public:
  virtual ~Env() = default;
  virtual TimePoint now() = 0;
  // The moment up to which what every worker sent has been read: a worker's silence is measured
  // to it, not to now(), so that a coordinator that stalled after reading (the fsync of its
  // journal or manifest on a slow disk, its host frozen) does not take its own stall for the
  // workers' silence while their lines wait unread. now() where reading is not apart.
  virtual TimePoint listened_at() { return now(); }
  // The newest state a generation with no survivor can start from (the coordinator's chooses the
  // newest valid checkpoint and trims the step records after it). Called only then.
  virtual StartPoint start_point() = 0;
};

struct MembershipOptions {
  int initial_workers = 1;          // members generation 0 waits for ...
  double initial_wait_s = 60;       // ... at most this long after the earliest admission of
                                    // the workers waiting
  double heartbeat_timeout_s = 10;  // a worker not heard from for longer is dropped as silent
  double balance_check_s = 10;      // how often measured speeds are compared with the split
                                    // (a re-split needs two checks in a row that ask for it)
  std::int64_t global_batch = 1;    // of the job, split among the members by speed
  // A generation whose group has not formed this long after a stop was requested pauses the job.
  double stop_forming_s = 1;
  // When every worker falls silent at once while a generation runs, the silence is more likely
  // the coordinator's own link (cut, or its host frozen) than every server lost together: they
  // stay members for up to this long, training on among themselves, and the first heard again
  // ends the wait (each then has a heartbeat timeout from that moment). 0: each is dropped as
  // silent after the heartbeat timeout (a local fleet, whose workers no link separates).
  double silence_hold_s = 0;
  StartPoint start;  // where the first generation starts (a resumed job's checkpoint)
  // A resumed job numbers its generations and workers on from where its last run stopped (its
  // journal's): its records then never name two generations or two workers alike.
  std::int64_t first_generation = 0;
  int first_worker = 0;
};

enum class WorkerState { kLoading, kPending, kMember, kReported, kDone, kGone };

// What the rules know of a worker.
struct WorkerInfo {
  std::string id;
  WorkerState state = WorkerState::kLoading;
  long pid = 0;
  TimePoint admitted;                 // billed from then ...
  std::optional<TimePoint> released;  // ... until it left
  TimePoint last_heard;
  std::string address;  // where its peers reach it, as it said (for messages)
  std::string probe;    // its reachability probe, HOST:PORT
  double speed = 0;     // samples/s of forward+backward, as it measured it (0 = unknown)
  // Its report of the generation that ended its part (while Reported).
  std::int64_t held = -1;       // steps completed in the state it holds (-1: none)
  std::int64_t attempted = -1;  // the step it had started
  bool leaving = false;
  std::string leave_reason;  // why it leaves or left
  bool said_done = false;    // it reported the job done in the running generation
};

// A member's report about generation `gen`.
struct Report {
  enum class Kind {
    kGrouped,   // rank 0: its process group exists
    kFormed,    // rank 0: the members agreed on the state
    kStepped,   // rank 0: the generation's first step is done (step = its number)
    kFailed,    // its collective failed (a peer was lost): it holds state of `step`
    kBoundary,  // it stopped at a step boundary as signalled (leaving: it goes)
    kDone,      // the job ended (finished, or paused by a stop)
  };
  Kind kind = Kind::kFailed;
  std::int64_t gen = -1;
  std::int64_t step = -1;       // held (kFailed, kBoundary) or completed (kStepped)
  std::int64_t attempted = -1;  // the step it had started (-1: = step)
  bool leaving = false;
  std::string reason = "preempted";  // why it leaves (leaving)
  std::string cause = "failed";      // what ended the generation (kFailed)
  // The members whose probe it could not reach when the group could not form (kFailed).
  std::vector<std::string> unreachable;
};

// A re-joining member's state after a coordinator restart (its hello's "rejoin").
struct RejoinState {
  std::int64_t gen = -1;
  bool reported = false;  // it had reported about `gen` (then the fields below hold)
  std::int64_t step = -1;
  std::int64_t attempted = -1;
  bool leaving = false;
  std::string cause = "failed";
};

// A generation to start.
struct Generation {
  std::int64_t number = 0;
  std::vector<std::string> members;  // rank order: survivors, then joiners by admission
  std::int64_t start_step = 0;
  StartPoint from;  // the state when no survivor holds one (checkpoint "" otherwise)
  bool from_survivors = false;
  std::vector<double> speeds;  // measured, rank order (0 = unknown)
  std::vector<std::string> probes;
  bool after_loss = false;  // a recovery is in progress
};

// A recovery in progress, as journaled: a restarted coordinator records it when the generation
// after it steps (its timings then count from the restart).
struct JournaledRecovery {
  std::int64_t generation = 0;  // the generation whose first step ends it
  std::string cause;
  std::vector<std::string> lost;
  std::int64_t attempted_step = 0;
};

// What the machine needs written to take the job back after a restart.
struct MembershipJournal {
  std::int64_t generation = -1;       // the latest formed (first_generation - 1: none yet)
  std::int64_t first_generation = 0;  // this run's first
  std::vector<std::string> members;
  int next_worker = 0;
  bool ended = false;
  bool paused = false;  // ended by a stop request, not finished or failed
  std::optional<JournaledRecovery> recovery;
};

// Actions, in the order they are to be carried out.
namespace action {
// Send every member of `generation` its config (after the journal is written).
struct StartGeneration {
  Generation generation;
};
// Tell `worker`: "change" or "stop" (rank 0: end the generation at the next step boundary) or
// "abort" (a member was lost: leave generation `gen` now).
struct Signal {
  std::string worker;
  std::string what;
  std::int64_t gen = 0;
};
// Tell `worker` it was dropped (`reason` for it to print); it exits.
struct Drop {
  std::string worker;
  std::string reason;
};
// `worker` has left the job: release what the shell holds for it (its connection, its store
// client, a checkpoint it was sending). `announce`: it left a job still running (log it, count
// it); `trained`: it was a member of the running generation.
struct WorkerLeft {
  std::string worker;
  std::string reason;
  bool announce = true;
  bool trained = false;
  bool member = false;  // a member of the running (or ending) generation: a loss to recover from
  std::int64_t gen = -1;
  std::int64_t step = 0;
};
// A recovery ended with the first step of generation `gen`.
struct Recovered {
  std::int64_t gen = 0;
  std::string cause;
  std::vector<std::string> lost;
  double detect_s = 0;    // from the first failure to the decision to form the next generation
  double reform_s = 0;    // from the decision to the state agreed
  double duration_s = 0;  // from the first failure to the first step (or to the job's end, for
                          // a generation with no step left to train)
  double waited_s = 0;    // of it, with no worker at all
  std::int64_t redone_steps = 0;
  std::int64_t step = 0;  // the first step of the generation (the job's last, for one with none)
  std::size_t members = 0;
  bool at_end = false;  // the generation had no step left to train: it ended the job
};
// Write the journal (journal()).
struct WriteJournal {};
// The job has ended: tell every worker. `finished`: its members reported done (their result is
// the job's); else it stopped at `step` (paused when `stopped`, failed when `failure` is set).
struct EndJob {
  bool finished = false;
  bool stopped = false;
  std::string failure;
  std::int64_t step = 0;
};
// No worker is left: the job waits for one to join (at `step`).
struct Waiting {
  std::int64_t step = 0;
};
// A line for events.jsonl, and one for people (`say`, "" = none).
struct Record {
  nlohmann::json event;
  std::string say;
};
}  // namespace action

using Action = std::variant<action::StartGeneration, action::Signal, action::Drop,
                            action::WorkerLeft, action::Recovered, action::WriteJournal,
                            action::EndJob, action::Waiting, action::Record>;

// Whether `id` may name a worker: 1 to 64 printable ASCII characters other than ' ', '/' and
// '"', and not "." or "..". It names the worker's files in the job directory and is printed in the
// coordinator's lines and `transient status`, so nothing in it may be a path or a control
// character. `transient worker --worker-id` and the coordinator's admission both check it.
bool is_plain_worker_id(const std::string& id);

class Membership {
 public:
  // `env` must outlive the machine.
  Membership(MembershipOptions options, Env& env);

  // --- Events ---
  // A worker proved the token. `requested` is the id it asks for ("" = a new one). Returns its id,
  // or nullopt with `refusal` set (the job has ended, the id is taken, was a departed worker's, or
  // is not a plain name).
  std::optional<std::string> admit(const std::string& requested, long pid, std::string& refusal);
  // A member of the journaled generation re-connects after a coordinator restart. Returns "" or
  // the refusal.
  std::string rejoin(const std::string& id, const RejoinState& state);
  // Anything heard from `id` (it is alive).
  void heard(const std::string& id);
  void heartbeat(const std::string& id, std::optional<double> speed);
  // Loaded its data and model: it joins the next generation.
  void ready(const std::string& id, const std::string& address, const std::string& probe);
  void report(const std::string& id, const Report& report);
  // Rank 0 completed `step`.
  void progress(std::int64_t step);
  // Its connection closed, or its process exited; `reason` is the one it gave ("failed" if none).
  // It counts in revocations() as records::left_by_revocation(reason) says.
  void worker_lost(const std::string& id, const std::string& reason);
  // Timers: silent workers, a stop while forming, the balance check, forming the next generation.
  void tick();
  // Pause at the next step boundary (Ctrl-C); `reachable`: whether any member can be told (none
  // can when none of a take-back's members has come back: the job pauses now).
  void request_stop(bool reachable = true);
  // The job cannot go on (`failure` said to people); nothing more is formed.
  void end_job(const std::string& failure);
  // The job's state a restarted coordinator carries on from: its members are expected to rejoin.
  // They are billed from `unbilled_s` before now: the time since the journal's bill, when their
  // servers trained on with no coordinator (a worker re-connects for as long as it runs).
  void take_back(const MembershipJournal& journal, double unbilled_s = 0);

  // --- Output ---
  std::vector<Action> take_actions();

  // --- State ---
  MembershipJournal journal() const;
  std::int64_t generation() const { return generation_; }
  const std::vector<std::string>& members() const { return members_; }
  bool running() const { return running_; }
  bool ended() const { return ended_; }
  bool recovering() const { return recovery_.has_value(); }
  std::int64_t last_step() const { return last_step_; }
  int revocations() const { return revocations_; }
  int recoveries() const { return recoveries_; }
  std::int64_t redone_steps() const { return redone_steps_; }
  const WorkerInfo* find(const std::string& id) const;
  const std::map<std::string, WorkerInfo>& workers() const { return workers_; }
  // A member of the running generation (it may use the rendezvous store).
  bool running_member(const std::string& id) const;

 private:
  WorkerInfo* find_mutable(const std::string& id);
  std::string next_worker_id();
  void gone(WorkerInfo& worker, const std::string& reason);
  // Its part in the generation ended holding the state of step `held`.
  void reported(WorkerInfo& worker, std::int64_t held, std::int64_t attempted, bool leaving,
                const std::string& reason);
  void end_generation(const std::string& cause);
  void note_unreachable(const std::vector<std::string>& ids);
  void drop_unreachable_member();
  void check_heartbeats();
  // Whether every worker fell silent at once, and then holds them (silence_hold_s).
  bool hold_if_all_silent();
  // `worker` was heard: alive, and, if it ends a hold, every worker's silence starts again.
  void heard_from(WorkerInfo& worker);
  void finish_if_done();
  void maybe_signal_change();
  void maybe_form_generation();
  void form_generation(std::vector<std::string> survivors);
  void stop_now();
  // Ends the recovery in progress: `next_step` is the first step its generation completed (one
  // past the last step when it had none to train), `step` the one to record.
  void recovered(std::int64_t next_step, std::int64_t step);
  void end(const action::EndJob& end);

  MembershipOptions options_;
  Env& env_;
  std::vector<Action> actions_;
  std::map<std::string, WorkerInfo> workers_;
  std::vector<std::string> pending_;  // ready, waiting for a generation, in admission order
  int next_worker_ = 0;

  std::int64_t generation_ = -1;
  std::int64_t first_generation_ = 0;  // this run's first (generation_ below it: none formed yet)
  std::vector<std::string> members_;
  StartPoint start_;
  // Taken back before the run's first generation formed: it starts from the newest checkpoint
  // (the start the dead coordinator was given is not journaled).
  bool start_unknown_ = false;
  bool running_ = false;
  bool ending_ = false;
  std::string ending_cause_;  // failed, silent, preempted, join, change, rebalance, ...
  bool formed_ = false;       // the running generation's group has formed
  std::optional<TimePoint> first_failure_;
  // Every worker fell silent at once (options_.silence_hold_s): since when they are held.
  std::optional<TimePoint> held_since_;
  bool stop_requested_ = false;
  std::optional<TimePoint> stop_time_;
  TimePoint forming_since_;  // when the running generation began to form
  bool ended_ = false;
  bool stopped_ = false;  // ... paused by a stop request
  std::string failure_;   // ... failed, why
  bool waiting_announced_ = false;
  // Generations that failed to form in a row with the same members, and the votes of the others
  // on which member they could not reach.
  std::vector<std::string> unformed_members_;
  int unformed_count_ = 0;
  std::map<std::string, int> unreachable_votes_;
  // Generations in a row that failed before their first step with nobody lost, and the step the
  // running generation started at. Not journaled: a restarted coordinator counts afresh.
  int failed_without_a_step_ = 0;
  std::int64_t generation_start_step_ = 0;

  struct Recovery {
    std::int64_t generation = 0;
    std::string cause;
    TimePoint failed;
    TimePoint decided;
    std::optional<TimePoint> formed;
    std::int64_t attempted_step = 0;
    std::vector<std::string> lost;
    double waited_s = 0;
  };
  std::optional<Recovery> recovery_;
  std::int64_t attempted_step_ = 0;  // the furthest step a member of this generation started
  std::vector<std::string> lost_;    // members of the running generation that left
  std::vector<double> generation_speeds_;
  TimePoint last_balance_check_;
  int imbalanced_checks_ = 0;  // balance checks in a row whose speeds ask for another split
  std::int64_t last_step_ = 0;

  int revocations_ = 0;
  int recoveries_ = 0;
  std::int64_t redone_steps_ = 0;
};

// "failed", "preempted", ... as a worker gives them; "join", "change" and "rebalance" are the
// planned changes, which end a generation at a step boundary without a loss.
bool is_planned_change(const std::string& cause);

}  // namespace transient::elastic
