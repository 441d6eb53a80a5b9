// Thousands of random event sequences through the membership rules: workers join, train, are
// killed, fall silent, are preempted, write checkpoints; the coordinator is restarted from its
// journal; messages arrive late and in any order. The workers are simulated as the real ones
// behave (a lost peer fails every survivor's collective; a member holds the state of the steps it
// completed; a joiner holds none until the state is agreed). After every event the invariants
// are checked:
//   - one generation at a time: generations are numbered one by one, and a new one starts only
//     once every member of the last has reported or left;
//   - its members agree on the start step: the most advanced state a survivor holds, else the
//     newest checkpoint; it is never ahead of what was trained (no sample skipped) and the steps
//     trained again are counted (no sample repeated unaccounted);
//   - every recovery is accounted: each member lost is in exactly one recovery, recorded at the
//     first step of the generation after it, whose redone steps add up to the job's count;
//   - the journal is always enough to carry on: what was last written names the generation, its
//     members and the next worker number that the machine holds;
//   - no job waits unsaid: with no worker left (several may leave at one boundary) and nothing of
//     theirs on its way, it says that it waits for one to join, or it has ended.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "elastic/fake_env.h"
#include "transient/elastic/membership.h"

namespace transient::elastic {
namespace {

using testing::FakeEnv;

constexpr std::int64_t kTotalSteps = 80;

struct SimWorker {
  std::string id;
  bool alive = true;    // its process runs
  bool silent = false;  // its host is cut off: nothing it sends arrives
  std::int64_t gen = -1;
  bool has_state = false;
  std::int64_t held = 0;
  bool reported = false;  // it reported about `gen` (or it is in flight)
  Report last_report;
  double speed = 100;  // samples/s it measures (some are 3x faster: rebalances)
};

// One message on its way to the coordinator.
struct InFlight {
  std::string from;
  std::function<void(Membership&)> deliver;
};

class Cluster {
 public:
  explicit Cluster(std::uint64_t seed) : rng_(seed) {
    options_.initial_workers = 2;
    options_.initial_wait_s = 5;
    options_.heartbeat_timeout_s = 10;
    // Half the sequences hold members that all fall silent at once (a coordinator's link).
    options_.silence_hold_s = seed % 2 == 0 ? 0 : 30;
    options_.global_batch = 64;
    machine_ = std::make_unique<Membership>(options_, env_);
  }

  // Runs random events until the job ends or `events` have run. Returns false (with the test's
  // failure recorded) at the first broken invariant.
  void run(int events) {
    for (int i = 0; i < events && !ended_ && !::testing::Test::HasFatalFailure(); ++i) {
      step_event();
      apply_actions();
      check_invariants();
    }
  }

  bool ended() const { return ended_; }
  int generations() const { return static_cast<int>(last_generation_ + 1); }
  int recoveries() const { return recoveries_; }
  int restarts() const { return restarts_; }
  int unreachable_drops() const { return unreachable_drops_; }
  int waits() const { return waits_; }

 private:
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }
  bool chance(double p) { return std::bernoulli_distribution(p)(rng_); }

  std::vector<SimWorker*> live_workers() {
    std::vector<SimWorker*> live;
    for (auto& [id, worker] : workers_) {
      if (worker.alive) live.push_back(&worker);
    }
    return live;
  }
  bool is_member(const std::string& id) const {
    return std::find(members_.begin(), members_.end(), id) != members_.end();
  }

  void send(const std::string& from, std::function<void(Membership&)> deliver) {
    if (workers_.at(from).silent) return;  // lost on the cut link
    in_flight_.push_back({from, std::move(deliver)});
  }
  void send_report(SimWorker& worker, Report report) {
    worker.reported = true;
    worker.last_report = report;
    send(worker.id, [id = worker.id, report](Membership& m) { m.report(id, report); });
  }

  void step_event() {
    const int kind = pick(100);
    if (trace_) std::printf("event %d\n", kind);
    if (kind < 8) return join();
    if (kind < 38) return train();
    if (kind < 43) return kill();
    if (kind < 46) return silence();
    if (kind < 50) return preempt();
    if (kind < 54) return checkpoint();
    if (kind < 55) return restart();
    if (kind < 56 && chance(0.3)) return stop();
    if (kind < 60) return fail_to_form();
    if (kind < 80) return deliver();
    return advance();
  }

  void join() {
    if (live_workers().size() >= 6) return;
    std::string refusal;
    const auto id = machine_->admit("", 100, refusal);
    if (!id) return;
    admitted_ids_.insert(*id);
    SimWorker worker;
    worker.id = *id;
    worker.speed = chance(0.3) ? 300 : 100;
    workers_[*id] = worker;
    send(*id, [id = *id](Membership& m) { m.ready(id, "10.0.0.1", "10.0.0.1:1"); });
  }

  // The running generation trains a step, if all its members can (none lost, none reported).
  void train() {
    if (members_.empty()) return;
    for (const auto& id : members_) {
      const SimWorker& worker = workers_.at(id);
      if (!worker.alive || worker.silent || worker.reported || worker.gen != last_generation_) {
        return;
      }
    }
    SimWorker& rank0 = workers_.at(members_.front());
    if (!formed_ && is_member(unreachable_)) return fail_to_form();  // it stays unreachable
    if (!formed_) {
      // The state agreement: the most advanced member broadcasts (joiners receive it).
      std::int64_t held = -1;
      for (const auto& id : members_) {
        if (workers_.at(id).has_state) held = std::max(held, workers_.at(id).held);
      }
      if (held < 0) held = start_step_;
      for (const auto& id : members_) {
        workers_.at(id).has_state = true;
        workers_.at(id).held = held;
      }
      formed_ = true;
      Report formed;
      formed.kind = Report::Kind::kFormed;
      formed.gen = last_generation_;
      send(rank0.id, [id = rank0.id, formed](Membership& m) { m.report(id, formed); });
    }
    // A signal rank 0 received takes effect at this boundary, before the step.
    if (stop_signalled_ || rank0.held >= kTotalSteps) return report_all(Report::Kind::kDone);
    if (change_signalled_) return report_all(Report::Kind::kBoundary);
    for (const auto& id : members_) workers_.at(id).held += 1;
    const std::int64_t step = rank0.held;
    trained_ = std::max(trained_, step);
    if (!stepped_) {
      stepped_ = true;
      Report stepped;
      stepped.kind = Report::Kind::kStepped;
      stepped.gen = last_generation_;
      stepped.step = step;
      send(rank0.id, [id = rank0.id, stepped](Membership& m) { m.report(id, stepped); });
    }
    send(rank0.id, [step](Membership& m) { m.progress(step); });
  }

  // Every member reports `kind` about the state it holds.
  void report_all(Report::Kind kind) {
    for (const auto& id : members_) {
      Report report;
      report.kind = kind;
      report.gen = last_generation_;
      report.step = workers_.at(id).held;
      send_report(workers_.at(id), report);
    }
  }

  // The collective of a generation failed: every live member reports the state it holds; a
  // member may have completed the step in progress before the failure reached it.
  void fail_collective() {
    for (const auto& id : members_) {
      SimWorker& worker = workers_.at(id);
      if (!worker.alive || worker.reported || worker.gen != last_generation_) continue;
      Report failed;
      failed.kind = Report::Kind::kFailed;
      failed.gen = last_generation_;
      if (!worker.has_state) {
        failed.step = -1;
      } else {
        failed.attempted = worker.held + 1;
        if (formed_ && !change_signalled_ && !stop_signalled_ && chance(0.3)) {
          worker.held += 1;  // it completed the step in progress
          trained_ = std::max(trained_, worker.held);
        }
        failed.step = worker.held;
      }
      send_report(worker, failed);
    }
  }

  // The group cannot form: one member's address is unreachable to the others, who name it; it
  // names nobody (it could reach them). The member stays unreachable until it is dropped.
  void fail_to_form() {
    if (members_.empty() || formed_) return;
    for (const auto& id : members_) {
      const SimWorker& worker = workers_.at(id);
      if (!worker.alive || worker.silent || worker.reported || worker.gen != last_generation_) {
        return;
      }
    }
    if (!is_member(unreachable_) || !workers_.at(unreachable_).alive) {
      unreachable_ = members_[static_cast<std::size_t>(pick(static_cast<int>(members_.size())))];
    }
    const std::string bad = unreachable_;
    for (const auto& id : members_) {
      SimWorker& worker = workers_.at(id);
      Report failed;
      failed.kind = Report::Kind::kFailed;
      failed.gen = last_generation_;
      failed.step = worker.has_state ? worker.held : -1;
      failed.attempted = failed.step;
      if (id != bad) failed.unreachable = {bad};
      send_report(worker, failed);
    }
  }

  void kill() {
    auto live = live_workers();
    if (live.empty()) return;
    SimWorker& victim = *live[static_cast<std::size_t>(pick(static_cast<int>(live.size())))];
    victim.alive = false;
    // Its connection closes (its process is gone); a cut-off host's close is never seen.
    if (!victim.silent) {
      in_flight_.push_back(
          {victim.id, [id = victim.id](Membership& m) { m.worker_lost(id, "failed"); }});
    }
    if (is_member(victim.id) && victim.gen == last_generation_) fail_collective();
  }

  void silence() {
    auto live = live_workers();
    if (live.empty()) return;
    SimWorker& victim = *live[static_cast<std::size_t>(pick(static_cast<int>(live.size())))];
    victim.silent = true;
  }

  // Members receive their preemption notices (one, or several at once: a zone's servers are
  // taken together): the members stop at the next boundary, and those noticed leave.
  void preempt() {
    if (members_.empty() || !formed_ || change_signalled_ || stop_signalled_) return;
    for (const auto& id : members_) {
      const SimWorker& worker = workers_.at(id);
      if (!worker.alive || worker.silent || worker.reported) return;
    }
    std::set<std::string> leavers{
        members_[static_cast<std::size_t>(pick(static_cast<int>(members_.size())))]};
    for (const auto& id : members_) {
      if (chance(0.3)) leavers.insert(id);
    }
    for (const auto& id : members_) {
      Report boundary;
      boundary.kind = Report::Kind::kBoundary;
      boundary.gen = last_generation_;
      boundary.step = workers_.at(id).held;
      if (leavers.count(id) != 0) {
        boundary.leaving = true;
        boundary.reason = "preempted";
      }
      send_report(workers_.at(id), boundary);
    }
    for (const auto& leaver : leavers) {
      workers_.at(leaver).alive = false;
      send(leaver, [leaver](Membership& m) { m.worker_lost(leaver, "preempted"); });
    }
  }

  // Rank 0 of a stepping generation writes a checkpoint of the state it holds.
  void checkpoint() {
    if (members_.empty() || !stepped_) return;
    const SimWorker& rank0 = workers_.at(members_.front());
    if (!rank0.alive || rank0.reported) return;
    env_.checkpoint = {rank0.held, "checkpoint-" + std::to_string(rank0.held) + ".pt", 1, 1};
  }

  void stop() {
    if (stop_requested_) return;
    stop_requested_ = true;
    machine_->request_stop();
  }

  void deliver() {
    if (in_flight_.empty()) return;
    // Each sender's messages arrive in order (one connection each); senders interleave freely.
    const auto& from =
        in_flight_[static_cast<std::size_t>(pick(static_cast<int>(in_flight_.size())))].from;
    const auto it = std::find_if(in_flight_.begin(), in_flight_.end(),
                                 [&](const InFlight& m) { return m.from == from; });
    InFlight message = *it;
    in_flight_.erase(it);
    if (workers_.count(message.from) && machine_->find(message.from) != nullptr) {
      machine_->heard(message.from);
    }
    message.deliver(*machine_);
  }

  void advance() {
    env_.advance(std::uniform_real_distribution<double>(0.05, 4.0)(rng_));
    for (auto& [id, worker] : workers_) {
      if (worker.alive && !worker.silent && machine_->find(id) != nullptr) {
        if (chance(0.02)) worker.speed = worker.speed == 100 ? 300 : 100;
        machine_->heartbeat(id, worker.speed);
      }
    }
    machine_->tick();
  }

  // The coordinator dies and a new one takes the job back from the journal. Messages in flight
  // are lost; the workers re-connect: members of the journaled generation with their state,
  // the others as new workers under their ids.
  void restart() {
    ++restarts_;
    waiting_ = false;
    in_flight_.clear();
    machine_ = std::make_unique<Membership>(options_, env_);
    machine_->take_back(journal_);
    if (journal_.ended) {
      ended_ = true;
      return;
    }
    stop_requested_ = false;
    change_signalled_ = false;
    members_ = journal_.members;
    for (auto& [id, worker] : workers_) {
      if (!worker.alive || worker.silent) continue;
      if (is_member(id) && worker.gen == journal_.generation) {
        RejoinState state;
        state.gen = worker.gen;
        state.reported = worker.reported;
        if (worker.reported) {
          state.step = worker.last_report.step;
          state.attempted = worker.last_report.attempted;
          state.leaving = worker.last_report.leaving;
          state.cause = worker.last_report.cause;
        }
        EXPECT_EQ(machine_->rejoin(id, state), "") << id;
        continue;
      }
      std::string refusal;
      const auto admitted = machine_->admit(id, 100, refusal);
      if (!admitted) {
        worker.alive = false;  // it exits
        continue;
      }
      worker.gen = -1;
      worker.reported = false;
      worker.has_state = false;
      machine_->ready(id, "10.0.0.1", "10.0.0.1:1");
    }
  }

  void apply_actions() {
    for (auto& action : machine_->take_actions()) {
      if (trace_) print(action);
      if (auto* start = std::get_if<action::StartGeneration>(&action)) on_start(start->generation);
      if (auto* signal = std::get_if<action::Signal>(&action)) on_signal(*signal);
      if (auto* drop = std::get_if<action::Drop>(&action)) {
        workers_.at(drop->worker).alive = false;
        unreachable_drops_ += drop->reason.rfind("unreachable", 0) == 0;
      }
      if (auto* left = std::get_if<action::WorkerLeft>(&action)) on_left(*left);
      if (auto* recovered = std::get_if<action::Recovered>(&action)) on_recovered(*recovered);
      if (std::holds_alternative<action::WriteJournal>(action)) journal_ = machine_->journal();
      if (std::holds_alternative<action::EndJob>(action)) ended_ = true;
      if (std::holds_alternative<action::Waiting>(action)) {
        waiting_ = true;
        ++waits_;
      }
    }
  }

  void on_start(const Generation& generation) {
    // One generation at a time.
    ASSERT_EQ(generation.number, last_generation_ + 1);
    for (const auto& id : members_) {
      const SimWorker& worker = workers_.at(id);
      const WorkerInfo* info = machine_->find(id);
      ASSERT_TRUE(worker.reported || info == nullptr || info->state == WorkerState::kGone)
          << id << " of generation " << last_generation_ << " has not reported";
    }
    ASSERT_FALSE(generation.members.empty());
    std::set<std::string> distinct(generation.members.begin(), generation.members.end());
    ASSERT_EQ(distinct.size(), generation.members.size());
    // The start step: the most advanced state a survivor reported, else the newest checkpoint.
    if (generation.from_survivors) {
      std::int64_t held = -1;
      for (const auto& id : generation.members) {
        const SimWorker& worker = workers_.at(id);
        if (worker.gen == last_generation_ && worker.reported && !worker.last_report.leaving) {
          held = std::max(held, worker.last_report.step);
        }
      }
      ASSERT_EQ(generation.start_step, held);
    } else if (generation.number > 0) {
      ASSERT_EQ(generation.start_step, env_.checkpoint.step);
      ASSERT_EQ(generation.from.checkpoint, env_.checkpoint.checkpoint);
    }
    // No sample skipped: never ahead of what was trained.
    ASSERT_LE(generation.start_step, trained_);
    // A loss since the last recovery makes this generation a recovery.
    if (!lost_.empty()) {
      ASSERT_TRUE(generation.after_loss);
    }
    last_generation_ = generation.number;
    waiting_ = false;
    members_ = generation.members;
    start_step_ = generation.start_step;
    formed_ = stepped_ = change_signalled_ = false;
    stop_signalled_ = stop_requested_;  // a stop is signalled to a new generation's rank 0 at once
    for (const auto& id : members_) {
      SimWorker& worker = workers_.at(id);
      worker.gen = generation.number;
      worker.reported = false;  // it holds what it held; the agreed state comes as it forms
    }
  }

  void on_signal(const action::Signal& signal) {
    if (signal.gen != last_generation_) return;
    SimWorker& worker = workers_.at(signal.worker);
    if (!worker.alive || worker.silent) return;
    if (signal.what == "change") change_signalled_ = true;
    if (signal.what == "stop") stop_signalled_ = true;
    if (signal.what == "abort") fail_collective();
  }

  void on_left(const action::WorkerLeft& left) {
    if (left.announce && left.member) lost_[left.worker] = left.gen;
    workers_.at(left.worker).alive = false;
  }

  void on_recovered(const action::Recovered& recovered) {
    ++recoveries_;
    // The members lost before this generation; those lost in it belong to the next recovery.
    const std::set<std::string> lost(recovered.lost.begin(), recovered.lost.end());
    ASSERT_EQ(lost.size(), recovered.lost.size()) << "a member lost twice";
    std::set<std::string> expected;
    for (const auto& [id, gen] : lost_) {
      if (gen < recovered.gen) expected.insert(id);
    }
    ASSERT_EQ(lost, expected) << "generation " << recovered.gen;
    for (const auto& id : expected) lost_.erase(id);
    ASSERT_GE(recovered.redone_steps, 0);
    ASSERT_GE(recovered.duration_s, recovered.detect_s);
    redone_ += recovered.redone_steps;
  }

  void check_invariants() {
    if (::testing::Test::HasFatalFailure()) return;
    // The journal is always enough to carry on.
    const MembershipJournal now = machine_->journal();
    ASSERT_EQ(journal_.generation, now.generation);
    ASSERT_EQ(journal_.members, now.members);
    ASSERT_EQ(journal_.ended, now.ended);
    for (const auto& id : admitted_ids_) {
      if (id[0] == 'w') {
        ASSERT_LT(std::stoi(id.substr(1)), journal_.next_worker);
      }
    }
    // Recoveries account for every step redone (the counts survive no restart: compared
    // only on the machine that recorded them).
    if (restarts_ == 0) {
      ASSERT_EQ(machine_->redone_steps(), redone_);
    }
    // A running generation's members are live workers of the machine's.
    if (machine_->running()) {
      for (const auto& id : machine_->members()) ASSERT_NE(machine_->find(id), nullptr) << id;
    }
    // No worker left, and nothing of theirs on its way: once the silent are dropped (a heartbeat
    // timeout, or the hold of members that all fall silent at once), the job says it waits for
    // one to join. It must not wait without saying so (a coordinator whose last two workers left
    // at once said nothing in 120 s in CI, where a worker that joins is told to).
    if (!ended_ && !waiting_ && last_generation_ >= 0 && in_flight_.empty() &&
        live_workers().empty()) {
      const double wait_s = options_.silence_hold_s + 3 * options_.heartbeat_timeout_s;
      for (double waited = 0; waited < wait_s && !waiting_ && !ended_; waited += 1) {
        env_.advance(1);
        machine_->tick();
        apply_actions();
        if (::testing::Test::HasFatalFailure()) return;
      }
      ASSERT_TRUE(waiting_ || ended_)
          << "no worker is left, and the job neither waits for one nor has ended (generation "
          << last_generation_ << ")";
    }
  }

  // MEMBERSHIP_TRACE=1 prints every action, to follow a failing seed.
  void print(const Action& action) const {
    if (auto* a = std::get_if<action::StartGeneration>(&action)) {
      std::printf("  start gen %lld from %lld (%s)", static_cast<long long>(a->generation.number),
                  static_cast<long long>(a->generation.start_step),
                  a->generation.from_survivors ? "survivors" : "checkpoint");
      for (const auto& id : a->generation.members) std::printf(" %s", id.c_str());
      std::printf("\n");
    }
    if (auto* a = std::get_if<action::Signal>(&action)) {
      std::printf("  signal %s %s gen %lld\n", a->worker.c_str(), a->what.c_str(),
                  static_cast<long long>(a->gen));
    }
    if (auto* a = std::get_if<action::WorkerLeft>(&action)) {
      std::printf("  left %s %s announce %d member %d\n", a->worker.c_str(), a->reason.c_str(),
                  a->announce, a->member);
    }
    if (auto* a = std::get_if<action::Recovered>(&action)) {
      std::printf("  recovered gen %lld lost %zu\n", static_cast<long long>(a->gen),
                  a->lost.size());
    }
  }

  bool trace_ = std::getenv("MEMBERSHIP_TRACE") != nullptr;
  std::mt19937_64 rng_;
  FakeEnv env_;
  MembershipOptions options_;
  std::unique_ptr<Membership> machine_;
  std::map<std::string, SimWorker> workers_;
  std::set<std::string> admitted_ids_;
  std::deque<InFlight> in_flight_;
  MembershipJournal journal_;
  std::int64_t last_generation_ = -1;
  std::vector<std::string> members_;
  std::int64_t start_step_ = 0;
  bool formed_ = false;
  bool stepped_ = false;
  bool change_signalled_ = false;
  bool stop_signalled_ = false;
  bool stop_requested_ = false;
  bool ended_ = false;
  bool waiting_ = false;      // the machine said it waits for a worker (since the last generation)
  std::int64_t trained_ = 0;  // the most steps any state ever held
  std::map<std::string, std::int64_t> lost_;  // members lost, with their generation
  std::int64_t redone_ = 0;
  int recoveries_ = 0;
  int restarts_ = 0;
  int unreachable_drops_ = 0;
  int waits_ = 0;            // times the machine said it waits for a worker
  std::string unreachable_;  // a member the others cannot reach ("" = none)
};

TEST(MembershipRandom, InvariantsHoldThroughThousandsOfRandomSequences) {
  int ended = 0;
  int generations = 0;
  int recoveries = 0;
  int restarts = 0;
  int unreachable_drops = 0;
  int waits = 0;
  const char* only = std::getenv("MEMBERSHIP_SEED");
  for (std::uint64_t seed = 1; seed <= 2000; ++seed) {
    if (only != nullptr && std::to_string(seed) != only) continue;
    SCOPED_TRACE("seed " + std::to_string(seed));
    Cluster cluster(seed);
    cluster.run(1500);
    if (::testing::Test::HasFatalFailure()) return;
    ended += cluster.ended();
    generations += cluster.generations();
    recoveries += cluster.recoveries();
    restarts += cluster.restarts();
    unreachable_drops += cluster.unreachable_drops();
    waits += cluster.waits();
  }
  // The sequences reached the states the invariants are about.
  EXPECT_GT(ended, 500);
  EXPECT_GT(generations, 10000);
  EXPECT_GT(recoveries, 2000);
  EXPECT_GT(restarts, 500);
  EXPECT_GT(unreachable_drops, 20);
  EXPECT_GT(waits, 500);
  std::printf(
      "2000 sequences: %d ended, %d generations, %d recoveries, %d restarts, %d unreachable "
      "members dropped, %d waits for a worker said\n",
      ended, generations, recoveries, restarts, unreachable_drops, waits);
}

}  // namespace
}  // namespace transient::elastic
