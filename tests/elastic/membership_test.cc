// Every membership rule, driven through typed events on a clock of the test's own: no process,
// socket or sleep.
#include "transient/elastic/membership.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "elastic/fake_env.h"

namespace transient::elastic {
namespace {

using testing::all_of;
using testing::FakeEnv;
using Ids = std::vector<std::string>;

class MembershipTest : public ::testing::Test {
 protected:
  MembershipOptions options() const {
    MembershipOptions options;
    options.initial_workers = 1;
    options.heartbeat_timeout_s = 10;
    options.global_batch = 120;
    return options;
  }

  // Admits and readies `n` workers, then forms generation 0 with them.
  void start(int n, MembershipOptions opts) {
    machine_ = std::make_unique<Membership>(opts, env_);
    for (int i = 0; i < n; ++i) join();
    machine_->tick();
    const auto started = all_of<action::StartGeneration>(take());
    ASSERT_EQ(started.size(), 1U);
  }
  void start(int n) {
    auto opts = options();
    opts.initial_workers = n;
    start(n, opts);
  }
  std::string join(const std::string& address = "") {
    std::string refusal;
    const auto id = machine_->admit("", 1234, refusal);
    EXPECT_TRUE(id.has_value()) << refusal;
    machine_->ready(*id, address, "");
    return *id;
  }
  std::vector<Action> take() { return machine_->take_actions(); }
  void report(const std::string& id, Report::Kind kind, std::int64_t step,
              std::int64_t attempted = -1) {
    Report r;
    r.kind = kind;
    r.gen = machine_->generation();
    r.step = step;
    r.attempted = attempted;
    machine_->report(id, r);
  }
  // Ticks and returns the generation formed (fails the test if none was).
  Generation next_generation() {
    machine_->tick();
    const auto actions = take();
    const auto started = all_of<action::StartGeneration>(actions);
    EXPECT_EQ(started.size(), 1U);
    return started.empty() ? Generation{} : started.front().generation;
  }

  FakeEnv env_;
  std::unique_ptr<Membership> machine_;
};

TEST_F(MembershipTest, GenerationZeroWaitsForItsWorkersOrForTheInitialWait) {
  auto opts = options();
  opts.initial_workers = 3;
  opts.initial_wait_s = 10;
  machine_ = std::make_unique<Membership>(opts, env_);
  join();
  join();
  machine_->tick();
  EXPECT_TRUE(all_of<action::StartGeneration>(take()).empty());
  env_.advance(9);
  machine_->heartbeat("w0", std::nullopt);
  machine_->heartbeat("w1", std::nullopt);
  machine_->tick();
  EXPECT_TRUE(all_of<action::StartGeneration>(take()).empty());
  env_.advance(2);
  machine_->heartbeat("w0", std::nullopt);
  machine_->heartbeat("w1", std::nullopt);
  const Generation generation = next_generation();
  EXPECT_EQ(generation.number, 0);
  EXPECT_EQ(generation.members, (Ids{"w0", "w1"}));
  EXPECT_EQ(generation.start_step, 0);
}

// The wait counts from the earliest admission of the workers waiting now (review): a worker that
// came and left again had started it, and one that came 9 s later was trained alone 1 s after.
TEST_F(MembershipTest, TheInitialWaitCountsFromTheWorkersStillWaiting) {
  auto opts = options();
  opts.initial_workers = 3;
  opts.initial_wait_s = 10;
  machine_ = std::make_unique<Membership>(opts, env_);
  join();
  env_.advance(9);
  machine_->worker_lost("w0", "preempted");
  EXPECT_EQ(join(), "w1");
  env_.advance(2);
  machine_->heartbeat("w1", std::nullopt);
  machine_->tick();
  EXPECT_TRUE(all_of<action::StartGeneration>(take()).empty()) << "w1 has waited 2 s";
  env_.advance(9);
  machine_->heartbeat("w1", std::nullopt);
  const Generation generation = next_generation();
  EXPECT_EQ(generation.number, 0);
  EXPECT_EQ(generation.members, (Ids{"w1"}));
}

TEST_F(MembershipTest, AResumedJobStartsFromItsCheckpointAndTheJournalComesBeforeTheConfig) {
  auto opts = options();
  opts.start = {40, "checkpoint-40.pt", 1000, 7};
  machine_ = std::make_unique<Membership>(opts, env_);
  join();
  take();
  machine_->tick();
  const auto actions = take();
  ASSERT_EQ(actions.size(), 2U);
  EXPECT_TRUE(std::holds_alternative<action::WriteJournal>(actions[0]));
  const auto& generation = std::get<action::StartGeneration>(actions[1]).generation;
  EXPECT_EQ(generation.start_step, 40);
  EXPECT_EQ(generation.from.checkpoint, "checkpoint-40.pt");
  EXPECT_FALSE(generation.from_survivors);
  EXPECT_EQ(env_.start_points, 0);  // generation 0 starts where the job resumes
}

// A resumed job numbers on from its earlier runs: its first generation waits for its workers as
// generation 0 does and starts from the checkpoint it resumes from, and a take-back of that run
// knows which generation was its first.
TEST_F(MembershipTest, AResumedJobsGenerationsAndWorkersAreNumberedOnFromItsEarlierRuns) {
  auto opts = options();
  opts.initial_workers = 2;
  opts.initial_wait_s = 10;
  opts.start = {40, "checkpoint-40.pt", 1000, 7};
  opts.first_generation = 5;
  opts.first_worker = 7;
  machine_ = std::make_unique<Membership>(opts, env_);
  EXPECT_EQ(machine_->generation(), 4);
  EXPECT_FALSE(machine_->running());
  EXPECT_EQ(join(), "w7");
  machine_->tick();
  EXPECT_TRUE(all_of<action::StartGeneration>(take()).empty()) << "waits for its 2 workers";
  EXPECT_EQ(join(), "w8");
  const Generation first = next_generation();
  EXPECT_EQ(first.number, 5);
  EXPECT_EQ(first.members, (Ids{"w7", "w8"}));
  EXPECT_EQ(first.from.checkpoint, "checkpoint-40.pt");
  EXPECT_EQ(env_.start_points, 0);  // where the job resumes, not a new choice
  const MembershipJournal journal = machine_->journal();
  EXPECT_EQ(journal.generation, 5);
  EXPECT_EQ(journal.first_generation, 5);
  EXPECT_EQ(journal.next_worker, 9);

  // A coordinator that died before the run's first generation formed: taken back, it still waits
  // for its workers, which are numbered on, and starts from the newest checkpoint (where the job
  // resumed, or a later one: not from scratch).
  FakeEnv env;
  env.checkpoint = {40, "checkpoint-40.pt", 1000, 7};
  Membership restarted(options(), env);
  MembershipJournal before_any = journal;
  before_any.generation = 4;
  before_any.members.clear();
  restarted.take_back(before_any);
  EXPECT_FALSE(restarted.running());
  std::string refusal;
  EXPECT_EQ(restarted.admit("", 1, refusal), "w9");
  restarted.ready("w9", "", "");
  restarted.tick();
  const auto started = all_of<action::StartGeneration>(restarted.take_actions());
  ASSERT_EQ(started.size(), 1U);
  EXPECT_EQ(started[0].generation.number, 5);
  EXPECT_EQ(started[0].generation.from.checkpoint, "checkpoint-40.pt");
  EXPECT_EQ(started[0].generation.start_step, 40);
}

TEST_F(MembershipTest, ALossAbortsTheOthersAndTheMostAdvancedSurvivorLeads) {
  start(3);
  machine_->progress(7);
  machine_->worker_lost("w1", "failed");
  auto actions = take();
  const auto left = all_of<action::WorkerLeft>(actions);
  ASSERT_EQ(left.size(), 1U);
  EXPECT_TRUE(left[0].announce && left[0].trained && left[0].member);
  const auto aborts = all_of<action::Signal>(actions);
  ASSERT_EQ(aborts.size(), 2U);
  EXPECT_EQ(aborts[0].worker, "w0");
  EXPECT_EQ(aborts[1].worker, "w2");
  EXPECT_EQ(aborts[0].what, "abort");
  EXPECT_EQ(machine_->revocations(), 1);

  report("w0", Report::Kind::kFailed, 7, 8);
  machine_->tick();
  EXPECT_TRUE(all_of<action::StartGeneration>(take()).empty()) << "w2 has not reported";
  env_.advance(0.05);
  report("w2", Report::Kind::kFailed, 8, 8);  // it completed step 8's all-reduce
  const Generation generation = next_generation();
  EXPECT_EQ(generation.number, 1);
  EXPECT_EQ(generation.members, (Ids{"w0", "w2"}));
  EXPECT_EQ(generation.start_step, 8);
  EXPECT_TRUE(generation.from_survivors);
  EXPECT_TRUE(generation.after_loss);
  EXPECT_TRUE(machine_->recovering());

  env_.advance(0.1);
  report("w0", Report::Kind::kFormed, 8);
  env_.advance(0.2);
  report("w0", Report::Kind::kStepped, 9);
  const auto recovered = all_of<action::Recovered>(take());
  ASSERT_EQ(recovered.size(), 1U);
  EXPECT_EQ(recovered[0].lost, (Ids{"w1"}));
  EXPECT_EQ(recovered[0].cause, "failed");
  EXPECT_EQ(recovered[0].redone_steps, 0);  // step 8 survived in w2
  EXPECT_NEAR(recovered[0].detect_s, 0.05, 1e-6);
  EXPECT_NEAR(recovered[0].reform_s, 0.1, 1e-6);
  EXPECT_NEAR(recovered[0].duration_s, 0.35, 1e-6);
  EXPECT_EQ(machine_->recoveries(), 1);
  EXPECT_FALSE(machine_->recovering());
}

TEST_F(MembershipTest, AStepNoSurvivorCompletedIsRedoneAndCounted) {
  start(2);
  machine_->worker_lost("w0", "failed");
  take();
  report("w1", Report::Kind::kFailed, 7, 8);
  const Generation generation = next_generation();
  EXPECT_EQ(generation.start_step, 7);
  report("w1", Report::Kind::kStepped, 8);
  const auto recovered = all_of<action::Recovered>(take());
  ASSERT_EQ(recovered.size(), 1U);
  EXPECT_EQ(recovered[0].redone_steps, 1);
  EXPECT_EQ(machine_->redone_steps(), 1);
}

// A member lost after the job's last step: the generation formed without it has no step to
// train, and its members' done ends the recovery (no stepped report ever came: the recovery was
// never recorded, though every lost member is in exactly one).
TEST_F(MembershipTest, ALossAfterTheLastStepIsARecoveryEndedByTheJobsEnd) {
  start(2);
  machine_->progress(20);
  machine_->worker_lost("w0", "failed");
  take();
  report("w1", Report::Kind::kFailed, 20, 20);
  const Generation generation = next_generation();
  EXPECT_EQ(generation.start_step, 20);
  env_.advance(0.3);
  report("w1", Report::Kind::kDone, 20);
  machine_->tick();
  const auto actions = take();
  const auto recovered = all_of<action::Recovered>(actions);
  ASSERT_EQ(recovered.size(), 1U);
  EXPECT_EQ(recovered[0].lost, (Ids{"w0"}));
  EXPECT_EQ(recovered[0].redone_steps, 0);
  EXPECT_EQ(recovered[0].step, 20);
  EXPECT_TRUE(recovered[0].at_end);
  EXPECT_NEAR(recovered[0].duration_s, 0.3, 1e-6);
  EXPECT_EQ(machine_->recoveries(), 1);
  const auto ended = all_of<action::EndJob>(actions);
  ASSERT_EQ(ended.size(), 1U);
  EXPECT_TRUE(ended[0].finished);
}

// Rank 0 lost after the last step, before it stored the final state and said it was done: the
// members done hold that state, and form a generation with no step to train whose rank 0 stores
// it. The job ended "finished" at once, with no checkpoint of its last step.
TEST_F(MembershipTest, RankZeroLostBeforeItsDoneLeavesTheFinalStateToAMemberDone) {
  start(3);
  machine_->progress(20);
  report("w1", Report::Kind::kDone, 20);
  report("w2", Report::Kind::kDone, 20);
  machine_->tick();
  EXPECT_FALSE(machine_->ended()) << "rank 0 has not stored the final state yet";
  take();
  machine_->worker_lost("w0", "failed");
  const Generation generation = next_generation();
  EXPECT_EQ(generation.members, (Ids{"w1", "w2"}));
  EXPECT_EQ(generation.start_step, 20);
  EXPECT_TRUE(generation.from_survivors);
  EXPECT_TRUE(generation.after_loss);
  EXPECT_FALSE(machine_->ended());
  report("w2", Report::Kind::kDone, 20);
  machine_->tick();
  EXPECT_FALSE(machine_->ended()) << "the new rank 0 has not stored it yet";
  report("w1", Report::Kind::kDone, 20);
  machine_->tick();
  const auto actions = take();
  const auto recovered = all_of<action::Recovered>(actions);
  ASSERT_EQ(recovered.size(), 1U);
  EXPECT_EQ(recovered[0].lost, (Ids{"w0"}));
  EXPECT_EQ(recovered[0].redone_steps, 0);
  EXPECT_TRUE(recovered[0].at_end);
  const auto ended = all_of<action::EndJob>(actions);
  ASSERT_EQ(ended.size(), 1U);
  EXPECT_TRUE(ended[0].finished);
  // Rank 0 lost after its done (the final state stored): nothing more to do.
  start(2);
  machine_->progress(20);
  report("w0", Report::Kind::kDone, 20);
  machine_->worker_lost("w0", "failed");
  report("w1", Report::Kind::kDone, 20);
  machine_->tick();
  EXPECT_TRUE(machine_->ended());
  EXPECT_TRUE(all_of<action::StartGeneration>(take()).empty());
}

TEST_F(MembershipTest, AJoinIsSignalledToRankZeroAndStartsAtTheBoundaryWithNothingRedone) {
  start(2);
  const std::string joiner = join();
  machine_->tick();
  const auto signals = all_of<action::Signal>(take());
  ASSERT_EQ(signals.size(), 1U);
  EXPECT_EQ(signals[0].worker, "w0");
  EXPECT_EQ(signals[0].what, "change");
  machine_->tick();
  EXPECT_TRUE(all_of<action::Signal>(take()).empty()) << "signalled once";
  report("w0", Report::Kind::kBoundary, 5);
  report("w1", Report::Kind::kBoundary, 5);
  const Generation generation = next_generation();
  EXPECT_EQ(generation.members, (Ids{"w0", "w1", joiner}));
  EXPECT_EQ(generation.start_step, 5);
  EXPECT_FALSE(generation.after_loss);
  EXPECT_FALSE(machine_->recovering());
  report("w0", Report::Kind::kStepped, 6);
  EXPECT_TRUE(all_of<action::Recovered>(take()).empty());
  EXPECT_EQ(machine_->revocations(), 0);
}

TEST_F(MembershipTest, APreemptedMemberLeavesAtTheBoundaryAndTheRecoveryRedoesNothing) {
  start(3);
  Report notice;
  notice.kind = Report::Kind::kBoundary;
  notice.gen = 0;
  notice.step = 12;
  report("w0", Report::Kind::kBoundary, 12);
  notice.leaving = true;
  notice.reason = "preempted";
  machine_->report("w1", notice);
  report("w2", Report::Kind::kBoundary, 12);
  machine_->tick();
  const auto actions = take();
  const auto left = all_of<action::WorkerLeft>(actions);
  ASSERT_EQ(left.size(), 1U);
  EXPECT_EQ(left[0].worker, "w1");
  EXPECT_EQ(left[0].reason, "preempted");
  const auto started = all_of<action::StartGeneration>(actions);
  ASSERT_EQ(started.size(), 1U);
  EXPECT_EQ(started[0].generation.members, (Ids{"w0", "w2"}));
  EXPECT_EQ(started[0].generation.start_step, 12);
  report("w0", Report::Kind::kStepped, 13);
  const auto recovered = all_of<action::Recovered>(take());
  ASSERT_EQ(recovered.size(), 1U);
  EXPECT_EQ(recovered[0].cause, "preempted");
  EXPECT_EQ(recovered[0].redone_steps, 0);
}

TEST_F(MembershipTest, ASilentWorkerIsDroppedAndTheFailureDatesFromItsSilence) {
  start(2);
  env_.advance(5);
  machine_->heartbeat("w0", std::nullopt);
  env_.advance(5);
  machine_->tick();
  EXPECT_TRUE(all_of<action::Drop>(take()).empty()) << "10 s is not more than the timeout";
  env_.advance(1);
  machine_->heartbeat("w0", std::nullopt);
  machine_->tick();
  const auto actions = take();
  const auto drops = all_of<action::Drop>(actions);
  ASSERT_EQ(drops.size(), 1U);
  EXPECT_EQ(drops[0].worker, "w1");
  EXPECT_EQ(drops[0].reason, "silent");
  ASSERT_EQ(all_of<action::Signal>(actions).size(), 1U);
  report("w0", Report::Kind::kFailed, 3, 4);
  next_generation();
  report("w0", Report::Kind::kStepped, 4);
  const auto recovered = all_of<action::Recovered>(take());
  ASSERT_EQ(recovered.size(), 1U);
  EXPECT_EQ(recovered[0].cause, "silent");
  EXPECT_NEAR(recovered[0].detect_s, 11, 1e-6);
}

// Silence is measured up to when the workers' lines were last read (Env::listened_at), not to
// now: a coordinator that read every worker and then stalled (an uploaded checkpoint's fsync on a
// loaded disk) dropped those it had read before the stall as silent, their heartbeats of the
// stall unread. Once it reads again, a worker that sent nothing is dropped as before.
TEST_F(MembershipTest, SilenceIsMeasuredToWhenTheWorkersWereLastReadNotToNow) {
  start(2);
  env_.advance(1);
  machine_->heartbeat("w0", std::nullopt);
  machine_->heartbeat("w1", std::nullopt);
  env_.stall_reading();
  env_.advance(30);  // three heartbeat timeouts of stall
  machine_->tick();
  EXPECT_TRUE(all_of<action::Drop>(take()).empty()) << "the coordinator's stall is no silence";
  env_.read_again();
  machine_->heartbeat("w0", std::nullopt);  // its lines of the stall, read now
  machine_->tick();
  const auto drops = all_of<action::Drop>(take());
  ASSERT_EQ(drops.size(), 1U);
  EXPECT_EQ(drops[0].worker, "w1");
  EXPECT_EQ(drops[0].reason, "silent");
}

// Every member silent at once (the coordinator's own link cut): held, not dropped, and the first
// heard again ends the hold; each of the others then has as long as the hold lasted (its TCP
// resends on a timer that backed off meanwhile), and a heartbeat timeout after that.
// Each was dropped as silent, and their re-joins refused: the job fell back to its checkpoint.
TEST_F(MembershipTest, EveryMemberSilentAtOnceIsHeldUntilOneIsHeardAgain) {
  auto opts = options();
  opts.initial_workers = 2;
  opts.silence_hold_s = 60;
  start(2, opts);
  machine_->progress(30);
  env_.advance(11);
  machine_->tick();
  auto actions = take();
  EXPECT_TRUE(all_of<action::Drop>(actions).empty()) << "dropped while held";
  const auto records = all_of<action::Record>(actions);
  ASSERT_EQ(records.size(), 1U);
  EXPECT_EQ(records[0].event.at("event"), "workers_unheard");
  EXPECT_EQ(records[0].event.at("workers"), (Ids{"w0", "w1"}));
  EXPECT_NE(records[0].say.find("the coordinator's own link may be cut"), std::string::npos);
  env_.advance(40);
  machine_->tick();
  EXPECT_TRUE(all_of<action::Drop>(take()).empty()) << "dropped within the hold";
  machine_->heartbeat("w0", std::nullopt);
  actions = take();
  ASSERT_EQ(all_of<action::Record>(actions).size(), 1U);
  EXPECT_EQ(all_of<action::Record>(actions)[0].event.at("event"), "workers_heard_again");
  EXPECT_EQ(all_of<action::Record>(actions)[0].event.at("held_s"), 40);
  for (int i = 0; i < 5; ++i) {
    env_.advance(9.9);
    machine_->heartbeat("w0", std::nullopt);
    machine_->tick();
  }
  EXPECT_TRUE(all_of<action::Drop>(take()).empty())
      << "w1 has 40 s (the hold) and a heartbeat timeout from the end of the hold";
  EXPECT_TRUE(machine_->running());
  EXPECT_FALSE(machine_->recovering());
  // One that stays silent after that is lost as any other.
  env_.advance(0.6);
  machine_->heartbeat("w0", std::nullopt);
  machine_->tick();
  const auto drops = all_of<action::Drop>(take());
  ASSERT_EQ(drops.size(), 1U);
  EXPECT_EQ(drops[0].worker, "w1");
  EXPECT_EQ(drops[0].reason, "silent");
}

// Held members never heard again within the hold are each dropped as silent, as they were
// without it: the failure dates from their silence.
TEST_F(MembershipTest, MembersNotHeardWithinTheHoldAreDroppedAsSilent) {
  auto opts = options();
  opts.initial_workers = 2;
  opts.silence_hold_s = 60;
  start(2, opts);
  env_.advance(11);
  machine_->tick();
  EXPECT_TRUE(all_of<action::Drop>(take()).empty());
  env_.advance(60);
  machine_->tick();
  EXPECT_TRUE(all_of<action::Drop>(take()).empty()) << "60 s is the hold, not more";
  env_.advance(1);
  machine_->tick();
  const auto actions = take();
  const auto drops = all_of<action::Drop>(actions);
  ASSERT_EQ(drops.size(), 2U);
  EXPECT_EQ(drops[0].reason, "silent");
  const auto records = all_of<action::Record>(actions);
  ASSERT_FALSE(records.empty());
  EXPECT_EQ(records[0].event.at("dropped"), true);
}

// A member silent while another is heard is lost as before the hold existed, and so is one
// whose peer fell silent later (not at once), and Ctrl-C during a hold pauses at once: no
// member can be told.
TEST_F(MembershipTest, OnlyASilenceOfEveryMemberAtOnceIsHeldAndAStopDuringItPausesAtOnce) {
  auto opts = options();
  opts.initial_workers = 2;
  opts.silence_hold_s = 60;
  start(2, opts);
  env_.advance(6);
  machine_->heartbeat("w1", std::nullopt);
  env_.advance(5);
  machine_->tick();
  auto drops = all_of<action::Drop>(take());
  ASSERT_EQ(drops.size(), 1U) << "w1 was heard 5 s ago, half the timeout";
  EXPECT_EQ(drops[0].worker, "w0");

  start(2, opts);
  env_.advance(11);
  machine_->tick();
  ASSERT_TRUE(all_of<action::Drop>(take()).empty());
  machine_->request_stop();
  const auto ends = all_of<action::EndJob>(take());
  ASSERT_EQ(ends.size(), 1U);
  EXPECT_TRUE(ends[0].stopped);
}

TEST_F(MembershipTest, WithNoMemberLeftTheJobWaitsThenStartsFromTheNewestCheckpoint) {
  start(1);
  machine_->progress(35);
  machine_->worker_lost("w0", "failed");
  machine_->tick();
  auto actions = take();
  EXPECT_TRUE(all_of<action::StartGeneration>(actions).empty());
  const auto waiting = all_of<action::Waiting>(actions);
  ASSERT_EQ(waiting.size(), 1U);
  EXPECT_EQ(waiting[0].step, 35);
  EXPECT_TRUE(machine_->members().empty());
  EXPECT_TRUE(machine_->journal().members.empty());

  env_.checkpoint = {30, "checkpoint-30.pt", 10, 1};
  env_.advance(20);
  const std::string replacement = join();
  const Generation generation = next_generation();
  EXPECT_EQ(generation.members, (Ids{replacement}));
  EXPECT_EQ(generation.start_step, 30);
  EXPECT_EQ(generation.from.checkpoint, "checkpoint-30.pt");
  EXPECT_EQ(env_.start_points, 1);
  report(replacement, Report::Kind::kStepped, 31);
  const auto recovered = all_of<action::Recovered>(take());
  ASSERT_EQ(recovered.size(), 1U);
  EXPECT_EQ(recovered[0].lost, (Ids{"w0"}));
  EXPECT_NEAR(recovered[0].waited_s, 20, 1e-6);
  EXPECT_EQ(recovered[0].redone_steps, 5);  // steps 31-35 again
}

TEST_F(MembershipTest, AMemberNobodyCanReachIsDroppedWhenTheSameGroupFailsToFormTwice) {
  auto opts = options();
  opts.initial_workers = 3;
  machine_ = std::make_unique<Membership>(opts, env_);
  join("10.0.0.1");
  join("10.0.0.2");
  join("127.0.0.1");
  machine_->tick();
  take();
  auto fail_to_form = [&] {
    for (const std::string id : {"w0", "w1", "w2"}) {
      Report r;
      r.kind = Report::Kind::kFailed;
      r.gen = machine_->generation();
      if (id != "w2") r.unreachable = {"w2"};
      machine_->report(id, r);
    }
  };
  fail_to_form();
  Generation generation = next_generation();
  EXPECT_EQ(generation.members, (Ids{"w0", "w1", "w2"})) << "once may be bad luck";
  fail_to_form();
  machine_->tick();
  const auto actions = take();
  const auto drops = all_of<action::Drop>(actions);
  ASSERT_EQ(drops.size(), 1U);
  EXPECT_EQ(drops[0].worker, "w2");
  EXPECT_NE(drops[0].reason.find("127.0.0.1"), std::string::npos);
  EXPECT_NE(drops[0].reason.find("--advertise"), std::string::npos);
  const auto started = all_of<action::StartGeneration>(actions);
  ASSERT_EQ(started.size(), 1U);
  EXPECT_EQ(started[0].generation.members, (Ids{"w0", "w1"}));
  EXPECT_EQ(machine_->revocations(), 0) << "dropping a worker is not a revocation";
  // The recovery is from that loss (it said "failed", the first failure to form).
  report("w0", Report::Kind::kStepped, 1);
  const auto recovered = all_of<action::Recovered>(take());
  ASSERT_EQ(recovered.size(), 1U);
  EXPECT_EQ(recovered[0].lost, (Ids{"w2"}));
  EXPECT_EQ(recovered[0].cause, "unreachable");
}

// A generation whose members all stay but whose first step fails is re-formed; the third in a
// row ends the job with a failure that names the generations, the workers and the step (found
// when a worker's collective refused its own buffers: a generation every 30 s for ever).
TEST_F(MembershipTest, ThreeGenerationsInARowFailingBeforeAStepWithNobodyLostEndTheJob) {
  start(2);
  machine_->progress(5);  // generation 0 trains a while
  auto fail_before_a_step = [&] {
    report("w0", Report::Kind::kFormed, 5);
    report("w0", Report::Kind::kFailed, 5, 6);
    report("w1", Report::Kind::kFailed, 5, 6);
  };
  fail_before_a_step();
  EXPECT_EQ(next_generation().number, 1) << "generation 0 made progress before it failed";
  fail_before_a_step();
  EXPECT_EQ(next_generation().number, 2) << "once may be bad luck";
  machine_->progress(6);  // generation 2 completes a step: the count starts again
  report("w0", Report::Kind::kFailed, 6, 7);
  report("w1", Report::Kind::kFailed, 6, 7);
  EXPECT_EQ(next_generation().number, 3);
  for (const std::int64_t generation : {4, 5}) {
    report("w0", Report::Kind::kFailed, 6, 7);
    report("w1", Report::Kind::kFailed, 6, 7);
    EXPECT_EQ(next_generation().number, generation);
  }
  report("w0", Report::Kind::kFailed, 6, 7);
  report("w1", Report::Kind::kFailed, 6, 7);
  machine_->tick();
  const auto actions = take();
  EXPECT_TRUE(all_of<action::StartGeneration>(actions).empty());
  const auto ended = all_of<action::EndJob>(actions);
  ASSERT_EQ(ended.size(), 1U);
  EXPECT_FALSE(ended[0].finished);
  EXPECT_NE(ended[0].failure.find("generations 3 to 5"), std::string::npos) << ended[0].failure;
  EXPECT_NE(ended[0].failure.find("w0, w1"), std::string::npos) << ended[0].failure;
  EXPECT_NE(ended[0].failure.find("at step 6"), std::string::npos) << ended[0].failure;
  EXPECT_EQ(machine_->revocations(), 0);
}

// Failures with a member lost are recoveries, however many come in a row.
TEST_F(MembershipTest, FailuresThatLoseAMemberAreRecoveriesHoweverManyInARow) {
  start(5);
  for (int loss = 0; loss < 4; ++loss) {
    const auto members = machine_->members();
    machine_->worker_lost(members.front(), "failed");
    for (std::size_t i = 1; i < members.size(); ++i) {
      report(members[i], Report::Kind::kFailed, 0, 1);
    }
    machine_->tick();
    const auto actions = take();
    EXPECT_TRUE(all_of<action::EndJob>(actions).empty()) << "loss " << loss;
    EXPECT_EQ(all_of<action::StartGeneration>(actions).size(), 1U) << "loss " << loss;
  }
  EXPECT_EQ(machine_->members().size(), 1U);
}

TEST_F(MembershipTest, AStopWhileTheGroupFormsPausesTheJobAfterAMoment) {
  start(2);
  machine_->request_stop();
  const auto signals = all_of<action::Signal>(take());
  ASSERT_EQ(signals.size(), 1U);
  EXPECT_EQ(signals[0].what, "stop");
  env_.advance(0.5);
  machine_->tick();
  EXPECT_TRUE(all_of<action::EndJob>(take()).empty());
  env_.advance(0.6);
  machine_->tick();
  const auto ended = all_of<action::EndJob>(take());
  ASSERT_EQ(ended.size(), 1U);
  EXPECT_TRUE(ended[0].stopped);
  EXPECT_TRUE(machine_->journal().paused);
}

// A generation that begins to form long after Ctrl-C (a member fell silent during the stop, and
// the next generation began once the heartbeat timeout passed) gets its moment to form too: it was
// cut off at once, and the job paused without the state its members held (no checkpoint written;
// --resume began again from step 0).
TEST_F(MembershipTest, AGenerationThatBeginsToFormLongAfterAStopGetsItsMomentToo) {
  start(2);
  report("w0", Report::Kind::kFormed, 0);
  report("w1", Report::Kind::kFormed, 0);
  machine_->request_stop();
  take();
  // w1 falls silent; w0 waits in the step for it.
  for (int second = 0; second < 11; ++second) {
    env_.advance(1);
    machine_->heartbeat("w0", std::nullopt);
    machine_->tick();
  }
  ASSERT_EQ(all_of<action::Drop>(take()).size(), 1U);
  report("w0", Report::Kind::kFailed, 20, 21);
  const Generation next = next_generation();
  EXPECT_EQ(next.members, (std::vector<std::string>{"w0"}));
  env_.advance(0.5);
  machine_->heartbeat("w0", std::nullopt);
  machine_->tick();
  EXPECT_TRUE(all_of<action::EndJob>(take()).empty()) << "cut off as it began to form";
  // It forms, and the stop goes as for any formed group: at the step boundary, with its state.
  report("w0", Report::Kind::kFormed, 20);
  report("w0", Report::Kind::kDone, 21);
  machine_->tick();
  const auto ended = all_of<action::EndJob>(take());
  ASSERT_EQ(ended.size(), 1U);
  EXPECT_TRUE(ended[0].stopped);
}

TEST_F(MembershipTest, AStopOfAFormedGroupWaitsForItsMembersToFinishTheStep) {
  start(2);
  report("w0", Report::Kind::kFormed, 0);
  machine_->request_stop();
  take();
  env_.advance(30);
  machine_->heartbeat("w0", std::nullopt);
  machine_->heartbeat("w1", std::nullopt);
  machine_->tick();
  EXPECT_TRUE(all_of<action::EndJob>(take()).empty());
  report("w0", Report::Kind::kDone, 9);
  report("w1", Report::Kind::kDone, 9);
  machine_->tick();
  const auto ended = all_of<action::EndJob>(take());
  ASSERT_EQ(ended.size(), 1U);
  EXPECT_TRUE(ended[0].finished);
  EXPECT_TRUE(ended[0].stopped);
}

TEST_F(MembershipTest, AStopWithNoGenerationPausesAtOnce) {
  machine_ = std::make_unique<Membership>(options(), env_);
  machine_->request_stop();
  EXPECT_EQ(all_of<action::EndJob>(take()).size(), 1U);
  std::string refusal;
  EXPECT_FALSE(machine_->admit("", 1, refusal).has_value());
  EXPECT_EQ(refusal, "the job has ended");
}

TEST_F(MembershipTest, MeasuredSpeedsThatChangeTheSplitAreSignalledAsARebalance) {
  start(2);
  machine_->heartbeat("w0", 100.0);
  machine_->heartbeat("w1", 110.0);
  env_.advance(10);
  machine_->heartbeat("w0", 100.0);
  machine_->heartbeat("w1", 110.0);
  machine_->tick();
  EXPECT_TRUE(all_of<action::Signal>(take()).empty()) << "within 25%: noise";
  machine_->heartbeat("w1", 300.0);
  env_.advance(10);
  machine_->heartbeat("w0", 100.0);
  machine_->tick();
  EXPECT_TRUE(all_of<action::Signal>(take()).empty()) << "one check is not enough: noisy speeds";
  env_.advance(10);
  machine_->heartbeat("w0", 100.0);
  machine_->heartbeat("w1", 300.0);
  machine_->tick();
  const auto signals = all_of<action::Signal>(take());
  ASSERT_EQ(signals.size(), 1U);
  EXPECT_EQ(signals[0].what, "change");
  report("w0", Report::Kind::kBoundary, 20);
  report("w1", Report::Kind::kBoundary, 20);
  const Generation generation = next_generation();
  EXPECT_EQ(generation.speeds, (std::vector<double>{100, 300}));
  EXPECT_FALSE(generation.after_loss);
}

// Speeds that cross the re-split threshold at one check and not at the next (noise, as workers
// sharing cores measure) change nothing: a generation formed for them would have had the same
// split (seen in `make run`: a 'rebalance' generation with the shares it had).
TEST_F(MembershipTest, ASplitAskedForAtOneCheckOnlyIsNotMade) {
  start(2);
  for (const double speed : {300.0, 110.0, 300.0, 110.0}) {
    env_.advance(10);
    machine_->heartbeat("w0", 100.0);
    machine_->heartbeat("w1", speed);
    machine_->tick();
    EXPECT_TRUE(all_of<action::Signal>(take()).empty()) << "w1 at " << speed;
  }
}

TEST_F(MembershipTest, ALossDuringAPlannedChangeIsARecovery) {
  start(2);
  join();
  machine_->tick();
  take();
  report("w0", Report::Kind::kBoundary, 5);
  machine_->worker_lost("w1", "failed");
  const Generation generation = next_generation();
  EXPECT_EQ(generation.members, (Ids{"w0", "w2"}));
  EXPECT_TRUE(generation.after_loss);
  report("w0", Report::Kind::kStepped, 6);
  const auto recovered = all_of<action::Recovered>(take());
  ASSERT_EQ(recovered.size(), 1U);
  EXPECT_EQ(recovered[0].lost, (Ids{"w1"}));
}

TEST_F(MembershipTest, AllMembersDoneEndTheJobAndLaterLossesAreNotRevocations) {
  start(2);
  report("w0", Report::Kind::kDone, 100);
  machine_->tick();
  EXPECT_TRUE(all_of<action::EndJob>(take()).empty());
  report("w1", Report::Kind::kDone, 100);
  machine_->tick();
  const auto ended = all_of<action::EndJob>(take());
  ASSERT_EQ(ended.size(), 1U);
  EXPECT_TRUE(ended[0].finished);
  EXPECT_FALSE(ended[0].stopped);
  machine_->worker_lost("w0", "stopped");
  const auto left = all_of<action::WorkerLeft>(take());
  ASSERT_EQ(left.size(), 1U);
  EXPECT_FALSE(left[0].announce);
  EXPECT_EQ(machine_->revocations(), 0);
}

// A worker whose own data or model file failed it before it was ready leaves "misconfigured":
// announced, but neither a revocation nor a change to the running generation.
TEST_F(MembershipTest, AWorkerThatCouldNotStartIsNoRevocation) {
  start(2);
  std::string refusal;
  const auto late = machine_->admit("", 1, refusal);
  ASSERT_TRUE(late.has_value()) << refusal;
  take();
  machine_->worker_lost(*late, "misconfigured");
  const auto actions = take();
  const auto left = all_of<action::WorkerLeft>(actions);
  ASSERT_EQ(left.size(), 1U);
  EXPECT_TRUE(left[0].announce);
  EXPECT_FALSE(left[0].member || left[0].trained);
  EXPECT_TRUE(all_of<action::Signal>(actions).empty());
  EXPECT_EQ(machine_->revocations(), 0);
  machine_->worker_lost("w1", "failed");
  EXPECT_EQ(machine_->revocations(), 1) << "the same counter counts a member's loss";
}

// The members of a generation trained on while no coordinator was: a restarted one bills them
// from the journal's bill, where it billed them from its own start (the gap was free).
TEST_F(MembershipTest, ARestartedCoordinatorBillsItsMembersFromTheJournalsBill) {
  start(2);
  report("w0", Report::Kind::kFormed, 0);
  FakeEnv env;
  Membership restarted(options(), env);
  restarted.take_back(machine_->journal(), 42.5);
  for (const char* id : {"w0", "w1"}) {
    EXPECT_NEAR(
        std::chrono::duration<double>(env.now() - restarted.workers().at(id).admitted).count(),
        42.5, 1e-6)
        << id;
  }
}

TEST_F(MembershipTest, ARestartedCoordinatorTakesTheGenerationBackAndItsMembersRejoin) {
  start(2);
  report("w0", Report::Kind::kFormed, 0);
  const MembershipJournal journal = machine_->journal();
  EXPECT_EQ(journal.generation, 0);
  EXPECT_EQ(journal.members, (Ids{"w0", "w1"}));
  EXPECT_EQ(journal.next_worker, 2);

  FakeEnv env;
  Membership restarted(options(), env);
  restarted.take_back(journal);
  EXPECT_EQ(restarted.generation(), 0);
  EXPECT_TRUE(restarted.running());
  EXPECT_EQ(restarted.rejoin("w9", {0}), "not a member of generation 0 (it has left the job)");
  EXPECT_EQ(restarted.rejoin("w0", {1}), "not a member of generation 0 (it has left the job)");
  EXPECT_EQ(restarted.rejoin("w0", {0}), "");
  // w1 had reported its generation failed before the restart: the generation ends.
  RejoinState reported;
  reported.gen = 0;
  reported.reported = true;
  reported.step = 4;
  EXPECT_EQ(restarted.rejoin("w1", reported), "");
  Report failed;
  failed.gen = 0;
  failed.step = 4;
  restarted.report("w0", failed);
  restarted.tick();
  const auto started = all_of<action::StartGeneration>(restarted.take_actions());
  ASSERT_EQ(started.size(), 1U);
  EXPECT_EQ(started[0].generation.number, 1);
  EXPECT_EQ(started[0].generation.start_step, 4);
  std::string refusal;
  EXPECT_EQ(restarted.admit("", 1, refusal), "w2") << "worker numbers go on";
}

// Taken back after both members finished while no coordinator was: rank 0 re-joins, stores the
// final state, says done and goes (it was signalled while it waited); the other never comes back.
// The job is finished: a member that said done and then went is done all the same. It waited for
// a worker instead, and paused "after step 0" once stopped.
TEST_F(MembershipTest, AMemberThatSaidDoneAndWentIsDoneAfterATakeBack) {
  start(2);
  report("w0", Report::Kind::kFormed, 0);
  FakeEnv env;
  Membership restarted(options(), env);
  restarted.take_back(machine_->journal());
  restarted.progress(300);
  EXPECT_EQ(restarted.rejoin("w0", {0}), "");
  Report done;
  done.kind = Report::Kind::kDone;
  done.gen = 0;
  done.step = 300;
  restarted.report("w0", done);
  restarted.worker_lost("w0", "stopped");
  restarted.tick();
  EXPECT_FALSE(restarted.ended()) << "w1 may come back";
  env.advance(11);  // the heartbeat timeout: w1 is silent
  restarted.tick();
  ASSERT_TRUE(restarted.ended());
  const auto ended = all_of<action::EndJob>(restarted.take_actions());
  ASSERT_EQ(ended.size(), 1U);
  EXPECT_TRUE(ended[0].finished);
  EXPECT_EQ(ended[0].step, 300);
}

// Ctrl-C with no member to tell (a take-back none of whose members has come back) pauses the
// job now; it paused only once they were dropped as silent, a heartbeat timeout later.
TEST_F(MembershipTest, AStopWithNoMemberToTellPausesNow) {
  start(2);
  FakeEnv env;
  Membership restarted(options(), env);
  restarted.take_back(machine_->journal());
  restarted.progress(120);
  restarted.request_stop(false);
  ASSERT_TRUE(restarted.ended());
  const auto ended = all_of<action::EndJob>(restarted.take_actions());
  ASSERT_EQ(ended.size(), 1U);
  EXPECT_TRUE(ended[0].stopped);
  EXPECT_EQ(ended[0].step, 120);
}

TEST_F(MembershipTest, AWorkerIdThatIsTakenOrNotAPlainNameIsRefused) {
  start(1);
  std::string refusal;
  EXPECT_FALSE(machine_->admit("w0", 1, refusal).has_value());
  EXPECT_EQ(refusal, "worker id \"w0\" is taken by a worker in the job");
  EXPECT_FALSE(machine_->admit("a/b", 1, refusal).has_value());
  // It names files and is printed: no path, no control character (shown as '?' in the refusal).
  for (const std::string& id :
       std::vector<std::string>{"..", ".", "a b", "a\nb", "\x1b[31m", std::string(65, 'w')}) {
    EXPECT_FALSE(machine_->admit(id, 1, refusal).has_value()) << id;
  }
  EXPECT_EQ(refusal.find('\n'), std::string::npos);
  EXPECT_FALSE(machine_->admit("\x1b[31m", 1, refusal).has_value());
  EXPECT_EQ(
      refusal,
      "worker id \"?[31m\" is not a plain name (printable ASCII without spaces, '/' or '\"')");
  EXPECT_EQ(machine_->admit("spot-7", 1, refusal), "spot-7");
  // Gone, its id stays its own in the records: said so, where "taken" sent a restarted pod's
  // owner looking for a worker that was not there.
  machine_->worker_lost("spot-7", "failed");
  EXPECT_FALSE(machine_->admit("spot-7", 1, refusal).has_value());
  EXPECT_EQ(refusal,
            "worker id \"spot-7\" belonged to a worker that left the job; a worker id is never "
            "used twice: give another, or none");
  EXPECT_EQ(machine_->admit(std::string(64, 'w'), 1, refusal), std::string(64, 'w'));
}

TEST_F(MembershipTest, ReportsAboutAnEndedGenerationAreIgnored) {
  start(2);
  machine_->worker_lost("w1", "failed");
  report("w0", Report::Kind::kFailed, 3);
  next_generation();
  Report stale;
  stale.kind = Report::Kind::kFailed;
  stale.gen = 0;
  stale.step = 3;
  machine_->report("w0", stale);
  machine_->tick();
  EXPECT_TRUE(all_of<action::StartGeneration>(take()).empty());
  EXPECT_EQ(machine_->find("w0")->state, WorkerState::kMember);
}

}  // namespace
}  // namespace transient::elastic
