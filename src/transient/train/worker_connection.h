// The worker's side of its connection to the coordinator (worker.cc trains; this talks): the
// admission with the token's proof, heartbeats from a thread of its own, the coordinator's
// signals, the rendezvous store's requests, checkpoints sent and fetched, steps.csv rows kept
// until acknowledged, and a re-connection with the state the training thread last recorded when
// the coordinator goes away. Without libtorch.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "transient/train/channel.h"
#include "transient/train/checkpoint_record.h"
#include "transient/train/messages.h"
#include "transient/train/protocol.h"
#include "transient/train/store_transport.h"

namespace transient::train {

// The leave signal: SIGTERM (the cloud's preemption notice) or, for a worker started by hand,
// SIGINT; 0 until one came. on_leave_signal is the handler to install for both.
int leave_signal();
void on_leave_signal(int signal);
// A leave signal came over a second ago.
bool signalled_long_ago();

// A preemption notice (SIGTERM) or Ctrl-C came before the worker was admitted: nothing to leave.
struct LeftBeforeJoining {};

// The worker's side of its connection to the coordinator. A thread of its own sends heartbeats
// (so that a busy training thread never looks silent) and reads what the coordinator sends; if
// the connection breaks (the coordinator died) it re-connects and re-joins with the state the
// training thread last recorded, while training goes on.
class Connection : public StoreTransport {
 public:
  // What the training thread is doing, for the heartbeat thread's handling of a leave signal.
  // kForming: building the group (waiting for peers' addresses, connecting); kAgreeing: the
  // group exists and the state is being agreed on (a leaver may hold what its peers need).
  enum class Phase { kWaiting, kForming, kAgreeing, kTraining };

  Connection(const Endpoint& coordinator, std::string token, std::string worker_id);

  ~Connection();

  const std::string& id() const { return id_; }
  const JobConfig& job() const { return job_; }
  // A --quiet worker's connection says nothing on stderr when it leaves (its launcher does).
  void set_quiet(bool quiet) { quiet_ = quiet; }
  // How long a coordinator that went away is tried again before this worker gives up on it
  // (--coordinator-wait; 0 = for ever): it then counts as dropped (dropped(), next_generation's
  // `why` says so) and gave_up() is true. Training goes on meanwhile, but nothing it does is
  // kept without a coordinator (the checkpoints go to its disk), so the wait bounds what a job
  // whose coordinator is gone for good costs.
  void set_coordinator_wait(double seconds) { coordinator_wait_s_ = seconds; }
  bool gave_up() const { return gave_up_; }
  const Endpoint& coordinator() const { return coordinator_; }
  // The local address of this worker's route to the coordinator: what it advertises to its peers
  // unless told otherwise.
  const std::string& local_host() const { return local_host_; }

  void set_phase(Phase phase) { phase_ = phase; }
  // The generation whose group is being formed: an "abort" for it ends the store's waits.
  void set_forming(std::int64_t generation) { forming_ = generation; }

  // StoreTransport: one request of the rendezvous store, answered on this connection.
  nlohmann::json store_call(nlohmann::json request, std::chrono::milliseconds timeout) override {
    return call(message::StoreRequest{std::move(request)}, timeout).first;
  }

  // Sends the checkpoint of `step` (`bytes`) to the coordinator, which keeps the job's
  // checkpoints on its stable server, and returns its record once stored there. Returns nullopt
  // if the coordinator is away (the next checkpoint goes instead); throws InputError with its
  // reason if it could not store it (a full disk).
  std::optional<CheckpointRecord> send_checkpoint(std::int64_t step,
                                                  const std::vector<char>& bytes);

  // The bytes of the job's checkpoint `record`, from the coordinator, checked against the size
  // and checksum the generation named. Throws InputError if they cannot be had.
  std::vector<char> fetch_checkpoint(const CheckpointRecord& record);

  // A row of steps.csv for the coordinator's records. Each row is kept until the coordinator
  // says it has written it (it acknowledges on heartbeats), and rows not acknowledged are sent
  // again after a re-connection: none is lost to a coordinator that dies or restarts (a row
  // written twice is merged away).
  void record_row(std::string row);

 private:
  static constexpr std::size_t kMaxUnackedRows = 1000000;

  // Sends the rows not sent on the current connection yet.
  void send_rows_locked();

  // A request the coordinator answered with an error.
  struct Refused : std::runtime_error {
    using std::runtime_error::runtime_error;
  };

  // Sends `request` with a new id (or `id`, on `on_channel`) and waits for the reply to it: the
  // reply and the bytes of the chunks that came before it.
  std::pair<nlohmann::json, std::string> call(const message::ToCoordinator& request,
                                              std::chrono::milliseconds timeout,
                                              std::int64_t id = -1,
                                              std::shared_ptr<LineChannel> on_channel = nullptr);

 public:
  // Sends `message` if connected, without waiting (queued behind what the socket has not taken);
  // while the coordinator is away, events (message::Event) are kept (kMaxUnsentEvents at most)
  // and sent after the re-join, other messages dropped.
  void send(const message::ToCoordinator& message);

  // What to tell a restarted coordinator about this worker's part in the current generation.
  void set_state(nlohmann::json state) {
    std::lock_guard<std::mutex> lock(mutex_);
    state_ = std::move(state);
  }

  // Says `report` (of the current generation's end for this worker) and makes `state` what a
  // restarted coordinator is told of it. A report made while a re-join is under way (after its
  // hello took the state, before it was admitted) reaches nobody, and the hello carried the state
  // from before it: it goes out once the re-join is admitted.
  void report(const message::Report& report, nlohmann::json state);

  void set_speed(double samples_per_s) { speed_ = samples_per_s; }

  // Data and model are loaded: the worker can be a member from the next generation on. `address`
  // is the one it advertises to its peers (for messages about peers that cannot be reached);
  // `threads`, its intra-op threads (the job's summary records them).
  void mark_ready(const std::string& address, const std::string& probe, int threads);

  // Opens the reachability probe (protocol.h) on `address` and returns its HOST:PORT; the
  // heartbeat thread accepts and closes connections to it. Throws InputError naming `what` if
  // the address cannot be listened on (not an address of this host).
  std::string open_probe(const std::string& address, const std::string& what);

  // Says goodbye (`error`: why a "misconfigured" worker goes): the coordinator will close the
  // connection, which is then not re-opened.
  void leave(const std::string& reason, const std::string& error = "") {
    leaving_ = true;
    send(message::Bye{reason, error});
  }

  // Sends this worker's last report (`last`: done with the job, or stopped by a divergence),
  // then goodbye. Both are sent again after a re-join: a worker that finished its steps while
  // its coordinator was away tells the restarted one, which would otherwise wait for ever.
  void finish(const message::Report& last, const std::string& reason);
  // Takes finish() back: a generation came after it (rank 0 was lost before it stored the final
  // state, which this worker holds), and this worker is a member again.
  void unfinish();

  // The next generation after `after` that this worker is told about, or nullopt once it has
  // been dropped or the job has ended (`why` says which).
  std::optional<GenerationConfig> next_generation(std::int64_t after, std::string& why);

  // A "change" or "stop" signal for generation `generation`, if one came.
  bool change_signalled(std::int64_t generation) const { return change_gen_ == generation; }
  bool stop_signalled(std::int64_t generation) const { return stop_gen_ == generation; }
  // The coordinator ended generation `generation` (a member was dropped).
  bool abort_signalled(std::int64_t generation) const { return abort_gen_ == generation; }
  bool dropped() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return !left_.empty();
  }

 private:
  // kClosed: the connection closed before an answer (a coordinator that gives way to newer
  // unproven connections when many come at once, or one that went).
  enum class Hello { kAdmitted, kRefused, kUnproven, kNoAnswer, kClosed };

  // Reads one line from a peer that has not proven itself, a quarter of a second at a time so
  // that a preemption notice ends a first connection at once; nullopt after 30 s or a close.
  std::optional<nlohmann::json> read_reply(LineChannel& channel, bool first);

  // Says hello (with `rejoin` after a reconnection), checks the coordinator's proof of the token
  // (token_proof.h), proves it in turn, and reads the admission. The token itself is never sent.
  // The id and the job are taken from the first admission only: the training thread reads them.
  Hello hello(LineChannel& channel, const nlohmann::json* rejoin);

  void handle(const message::ToWorker& message);

  void run();

  // The coordinator went away: try again every 250 ms until it is back (training goes on), or
  // for --coordinator-wait.
  void reconnect();
  Endpoint coordinator_;
  std::string token_;
  std::string id_;
  std::shared_ptr<LineChannel> channel_;  // replaced (under mutex_) on a reconnection
  JobConfig job_;
  std::string local_host_;
  std::string ready_address_;
  std::string ready_probe_;
  int ready_threads_ = 0;
  std::unique_ptr<Listener> probe_listener_;  // outlives thread_ (declared before it)
  std::atomic<Listener*> probe_{nullptr};
  std::atomic<bool> quiet_{false};
  std::atomic<double> coordinator_wait_s_{kDefaultCoordinatorWaitS};
  std::atomic<bool> gave_up_{false};
  std::string refusal_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<GenerationConfig> generations_;  // GUARDED_BY(mutex_)
  std::string left_;                          // GUARDED_BY(mutex_)
  nlohmann::json state_;                      // GUARDED_BY(mutex_)
  static constexpr std::size_t kMaxUnsentEvents = 10000;
  std::vector<nlohmann::json> unsent_events_;  // GUARDED_BY(mutex_): send()'s while away
  std::vector<nlohmann::json> last_words_;     // GUARDED_BY(mutex_): finish()'s, sent again
  nlohmann::json last_report_;                 // GUARDED_BY(mutex_): report()'s
  // Requests in flight by id: their replies once they came, and the chunks before them.
  struct Call {
    std::optional<nlohmann::json> reply;
    std::string data;
  };
  std::map<std::int64_t, Call> calls_;  // GUARDED_BY(mutex_)
  // Rows of steps.csv by sequence number, until the coordinator acknowledges them.
  message::RowBacklog unacked_rows_{kMaxUnackedRows};  // GUARDED_BY(mutex_)
  std::int64_t rows_sent_through_ = 0;  // GUARDED_BY(mutex_): on the current connection
  std::int64_t next_call_ = 0;          // GUARDED_BY(mutex_)
  std::int64_t channel_epoch_ = 0;      // GUARDED_BY(mutex_); counts connections lost
  std::atomic<Phase> phase_{Phase::kWaiting};

  std::atomic<std::int64_t> forming_{-1};
  std::atomic<std::int64_t> change_gen_{-1};
  std::atomic<std::int64_t> stop_gen_{-1};
  std::atomic<std::int64_t> abort_gen_{-1};
  std::atomic<double> speed_{0};
  std::atomic<bool> stopping_{false};
  std::atomic<bool> leaving_{false};
  std::atomic<bool> ready_{false};
  std::thread thread_;
};

}  // namespace transient::train
