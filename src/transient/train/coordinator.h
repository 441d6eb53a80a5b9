// The coordinator of a job: the shell of sockets, files and clocks around the membership rules
// (elastic/membership.h), which decide who is in each generation, when a change is signalled,
// which state a generation starts from and how a recovery is accounted. This class turns the
// workers' messages (protocol.h) into the machine's events and its actions into messages, records
// (events.jsonl, the journal) and files. It holds the rendezvous keys the members'
// ProcessGroupGloo exchange addresses through (rendezvous_store.h), served only on the front
// door (channel.h) through which workers join with the job's token, send heartbeats and reports,
// and receive the configs of their generations: the job has one port, and nothing of it answers
// without the token. It stores the checkpoints and step records the workers send. It holds no
// tensors.
//
// The coordinator also owns the job's live dashboard (report/live_dashboard.h, --dashboard): its
// report page and /metrics on a port of their own, served on a thread of their own from the job
// directory; loopback peers are served freely, others only with the job's token.
//
// The state needed to take the job back after a restart (the machine's journal: generation,
// members, next worker number, a recovery in progress; and the port, the cost so far, the job's
// config) is journaled in <job>/coordinator.json whenever it changes. Used by one thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "transient/elastic/membership.h"
#include "transient/launch/local_fleet.h"
#include "transient/train/checkpoint_choice.h"
#include "transient/train/checkpoint_record.h"
#include "transient/train/messages.h"
#include "transient/train/protocol.h"
#include "transient/train/rendezvous_store.h"

namespace transient::train {

class EventLog;
struct CoordinatorJournal;
class Listener;
class LineChannel;
class ProgressLine;
}  // namespace transient::train
namespace transient::report {
class LiveDashboard;
}  // namespace transient::report
namespace transient::train {

// What a resumed job's earlier runs left in its journal, which its next run goes on with.
struct EarlierRuns {
  double cost_usd = 0;  // what the job's servers cost
  int rollbacks = 0;    // after a divergence, which count towards the same bound
  // Its generations and workers are numbered on: records never name two alike.
  std::int64_t next_generation = 0;
  int next_worker = 0;
};

// How long a coordinator taking back a running job waits for the journal's front door port
// while it is in use (channel.h, listen_once_free): the job's workers re-join at that port only.
// A connection that holds it as its own end keeps it for up to a minute after it closes, in
// TIME_WAIT or FIN_WAIT2 (Linux's 60 s): a little longer than that.
inline constexpr double kTakenBackPortWaitS = 75;

struct CoordinatorOptions {
  std::string bind = "127.0.0.1";  // address of the front door (IPv4 or IPv6; 0.0.0.0, :: = all)
  std::uint16_t port = 0;          // front door port (0 = any free port)
  int initial_workers = 1;         // members generation 0 waits for
  double initial_wait_s = 60;      // ... at most this long after the first admission
  bool taking_back = false;        // take_back() follows: the journal is not rewritten before
  // When no member is left, say how a worker joins (`transient coordinator`); false where the
  // caller starts the workers itself (`transient train`'s launcher replaces them or ends the job),
  // which then says only that none is left.
  bool invite_workers = true;
  // The live dashboard's HOST:PORT (port 0 = any free port); "off" serves none.
  std::string dashboard = "127.0.0.1:0";
  // The front door's port, the dashboard's: a journal's (a resumed or continued job's, found
  // free when the job was prepared), not the user's. One that another program has taken since
  // gives way to any free port, said on stderr, where a port the user gave is refused.
  bool port_or_another = false;
  bool dashboard_or_another = false;
  // What a checkpoint's bytes say it is (checkpoint.h's checkpoint_identity, which libtorch
  // reads): a generation that no member's state can start from takes the newest checkpoint of
  // this job (checkpoint_choice.h). REQUIRED.
  IdentifyCheckpoint identify_checkpoint;
  // What a resumed job's earlier runs left (a coordinator that takes a job back has them in the
  // journal it is given: take_back()).
  EarlierRuns before;
  // How an uploaded checkpoint's file (its descriptor) reaches the disk: 0, or the errno of the
  // failure. fsync when empty. It runs on a thread of its own, never the coordinator's: the sync
  // of a large checkpoint takes seconds on a busy disk, and every worker waited meanwhile (a
  // join, a store reply, a heartbeat's acknowledgement). Tests hold it.
  std::function<int(int)> sync_file;
};

// What the job came to.
struct JobOutcome {
  bool ended = false;
  WorkerResult result;  // rank 0's result of the last generation
  // Why the job failed ("" = it did not): an error of the job itself that a member met (a
  // checkpoint that cannot be written or read, ...), which every member would meet in turn.
  std::string failure;
  // The training loss was not finite (NaN or infinite) at this step (0 = it never was).
  std::int64_t diverged_at_step = 0;
};

class Coordinator : public launch::FleetCoordinator, private elastic::Env {
 public:
  using Clock = std::chrono::steady_clock;

  // Opens the front door and the store; writes the journal. `token` is the job's token. Throws
  // InputError if an address cannot be bound.
  Coordinator(JobConfig job, std::string token, CoordinatorOptions options, EventLog& events,
              GenerationConfig start);
  ~Coordinator() override;
  Coordinator(const Coordinator&) = delete;
  Coordinator& operator=(const Coordinator&) = delete;

  // The front door, HOST:PORT, as workers pass it to --coordinator.
  std::string address() const override;
  // The front door as a line telling how to join says it: address(), or HOST:PORT and what HOST
  // is when it listens on every address.
  std::string joining_address() const;
  // The live dashboard, HOST:PORT as bound ("" with --dashboard off).
  std::string dashboard_address() const;

  // One round: accepts connections, reads what workers sent, drops silent workers, forms the
  // next generation when the current one has ended. Waits at most `max_wait_s` for input.
  // Returns false once the job has ended (finished or paused).
  bool poll(double max_wait_s);

  // After the job has ended: the members of its last generation that were away when it ended
  // (a restarted coordinator's members not back yet, or a lost connection) are told so when
  // they re-connect (the refusal "the job has ended"), so that none waits for a coordinator that
  // is gone. One round like poll(); true while some are still to be told.
  bool tell_the_absent(double max_wait_s);
  // The members still to be told that the job has ended.
  const std::set<std::string>& absent() const { return absent_; }

  // Continues the job journaled in `journal` (coordinator.json of a coordinator that died): the
  // members of its generation go on training and re-join; membership changes work again.
  void take_back(const CoordinatorJournal& journal);

  // The launcher saw the process of `worker` exit (`status` for people).
  void process_exited(const std::string& worker, const std::string& status) override;
  // Every line of the coordinator's own goes through say() too: it erases the progress line first.
  void say(const std::string& line) override;
  // Pause at the next step boundary (Ctrl-C): the members checkpoint and stop.
  void request_stop();
  // Ends the job as failed with `cause` (the launcher found that no worker is left or will come).
  void fail(const std::string& cause);
  // The members of the current generation, in rank order (empty between generations).
  const std::vector<std::string>& members() const override { return membership_.members(); }
  std::int64_t generation() const override { return membership_.generation(); }

  // Called when a worker is admitted (id, pid it reported) and when one leaves (id, reason:
  // failed, silent, preempted, stopped).
  std::function<void(const std::string&, long)> on_admitted;
  std::function<void(const std::string&, const std::string&)> on_left;

  const JobOutcome& outcome() const { return outcome_; }
  // Totals for summary.json.
  int revocations() const { return membership_.revocations(); }
  int recoveries() const { return membership_.recoveries(); }
  int rollbacks() const { return rollbacks_; }
  double lr_scale() const { return lr_scale_; }
  std::int64_t redone_steps() const { return membership_.redone_steps(); }
  // Progress as rank 0 reported it: the last step and the throughput between the first and the
  // last step this coordinator saw (the samples those steps held, an epoch's last step what was
  // left of it).
  std::int64_t last_step() const override { return last_step_; }
  // The intra-op threads its members said they train with, each different number once (a
  // standalone coordinator's workers choose their own --threads); a worker that left before a
  // generation took it is not counted.
  const std::set<int>& worker_threads() const { return worker_threads_; }
  // The step of the first progress report of this coordinator's run; nullopt before one.
  std::optional<std::int64_t> first_reported_step() const {
    return first_step_time_ ? std::optional<std::int64_t>(first_step_) : std::nullopt;
  }
  // When the first step this coordinator saw was completed (nullopt before).
  std::optional<Clock::time_point> first_step_time() const override { return first_step_time_; }
  double samples_per_s() const;
  // What the job's servers have cost so far: the bill of its earlier runs (from the journal,
  // whatever their market) and this run's workers' (per second, from each one's admission to its
  // leaving, at this run's price); nullopt when the job knows no price.
  std::optional<double> cost_usd() const;
  // Stops the billing of a job that has ended and records its last `cost` event, and the bill in
  // the journal (where a resumed job's goes on from).
  void close_accounts() {
    account_cost(true);
    write_journal();
  }

 private:
  struct Peer;
  struct Worker;
  struct Syncing;

  // elastic::Env
  elastic::TimePoint now() override { return Clock::now(); }
  // When serve_connections last began reading every peer (each is read in every round).
  elastic::TimePoint listened_at() override { return listened_at_; }
  elastic::StartPoint start_point() override;

  // Carries out what the membership rules decided.
  void apply_actions();
  void start_generation(const elastic::Generation& generation);
  void worker_left(const elastic::action::WorkerLeft& left);
  void record_recovery(const elastic::action::Recovered& recovered);
  void end_job(const elastic::action::EndJob& end);
  void send_to(const std::string& worker, const message::ToWorker& message);
  void send_to(Worker& worker, const message::ToWorker& message);
  void reply_to(Worker& worker, std::int64_t id, nlohmann::json fields);

  // Accepts connections and reads what peers sent (waiting at most `max_wait_s`); drops peers
  // that said no hello in time.
  void serve_connections(double max_wait_s);
  void drop_dead_peers();  // forgets the connections closed or dropped
  void accept_connections();
  void read_peer(Peer& peer);
  void handle_hello(Peer& peer, const nlohmann::json& hello);
  void handle_message(Worker& worker, const nlohmann::json& message);
  void handle_report(Worker& worker, const message::Report& report);
  void handle_store(Worker& worker, const nlohmann::json& request);
  void handle_checkpoint(Worker& worker, const message::CheckpointPart& message);
  // Adopts the uploads whose sync has ended (every one, waiting for them, when `wait`), tells
  // their senders, and records them. Throws InputError if one a rollback overtook cannot be set
  // aside.
  void adopt_synced_uploads(bool wait);
  void set_aside_if_overtaken(const CheckpointRecord& record);
  void handle_rows(Worker& worker, const message::Rows& message);
  // Logs worker_rows_restored once a re-joined worker's kept rows are written.
  void note_rows_restored(Worker& worker);
  void send_checkpoint(Worker& worker, const message::FetchCheckpoint& request);
  // Queues more of the checkpoint `peer` fetches as its socket takes it, and writes what is
  // queued without waiting.
  void send_queued(Peer& peer);
  void drop_garbage(Peer& peer, const std::string& reason);
  // Whether one more dropped connection or refused stranger (a peer that has not proved the
  // token) may be logged in full: kLoggedDropsPerWindow a window; beyond, it is counted and the
  // count said once the window is over, so that a flood cannot fill the disk or the terminal.
  bool log_stranger_in_full();
  void write_journal() const;
  void update_progress(const ProgressReport& report);
  Worker* find_worker(const std::string& id);

  JobConfig job_;
  std::string token_;
  CoordinatorOptions options_;
  EventLog& events_;
  elastic::Membership membership_;
  std::unique_ptr<Listener> listener_;
  std::unique_ptr<report::LiveDashboard> dashboard_;  // none with --dashboard off
  std::unique_ptr<CheckpointDirectory> checkpoints_;  // the job's, on this (stable) server
  RendezvousStore store_;
  std::vector<std::unique_ptr<Peer>> peers_;
  // The checkpoints being sent to workers (by file and CRC-32), read once while any is sent.
  std::map<std::string, std::weak_ptr<const std::vector<char>>> served_;
  // The connections and uploads of the workers the machine knows (admitted, not yet released).
  std::map<std::string, std::unique_ptr<Worker>> workers_;
  // Uploads received whole and checked, being synced to disk (options_.sync_file), oldest
  // first; and how many uploads have begun (each has a temporary file of its own).
  std::vector<std::unique_ptr<Syncing>> syncing_;
  std::int64_t uploads_begun_ = 0;

  std::unique_ptr<ProgressLine> progress_;
  std::int64_t last_step_ = 0;
  std::vector<std::string> previous_members_;  // of the last generation formed here
  double since_checkpoint_s_ = 0;              // as rank 0 last reported it
  std::optional<Clock::time_point> first_step_time_;
  std::set<int> worker_threads_;
  std::int64_t first_step_ = 0;
  Clock::time_point last_step_time_;
  Clock::time_point listened_at_ = Clock::now();

  void account_cost(bool now);
  double cost_before_usd_ = 0;  // billed before this coordinator (a pause, or a restart)
  Clock::time_point last_cost_event_;
  std::optional<Clock::time_point> ended_at_;  // billing stops when the job ends
  bool accounts_closed_ = false;               // the last cost event is written

  // --on-divergence rollback: the learning rate's factor (halved by each rollback), how many
  // there were, and the generation rolled back last (its members' reports of it are one).
  void roll_back(std::int64_t step, const std::string& loss, const std::string& by);
  double lr_scale_ = 1;
  int rollbacks_ = 0;
  std::set<std::string> absent_;  // members away when the job ended, not yet told
  // The last step finished from the survivors' kept gradients (rank 0's `step_resumed`): its
  // generation and the samples computed again, for that generation's recovery.
  std::int64_t resumed_generation_ = -1;
  std::int64_t recomputed_samples_ = 0;
  std::int64_t resumed_batch_ = 0;
  // The generation a rollback ended (none yet: -1 is the generation before generation 0, and
  // an upload before it formed set every checkpoint aside).
  std::optional<std::int64_t> rolled_back_generation_;
  std::int64_t set_aside_from_step_ = 0;  // that rollback's first step set aside
  // --on-divergence stop: the job's failure, said when each member still connected has said its
  // last words (end_after_divergence), and those that have.
  void end_after_divergence();
  std::optional<std::string> divergence_failure_;
  std::set<std::string> diverged_members_;
  JobOutcome outcome_;
  Clock::time_point drop_window_start_;  // the window of dropped connections being counted
  long drops_in_window_ = 0;
  long drops_unlogged_ = 0;  // of them, beyond those logged one by one
};

}  // namespace transient::train
