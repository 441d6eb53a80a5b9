#include "transient/train/coordinator.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "transient/core/atomic_file.h"
#include "transient/core/duration.h"
#include "transient/core/error.h"
#include "transient/records/job_files.h"
#include "transient/report/live_dashboard.h"
#include "transient/train/channel.h"
#include "transient/train/checkpoint.h"
#include "transient/train/checkpoint_choice.h"
#include "transient/train/event_log.h"
#include "transient/train/progress_line.h"
#include "transient/train/sharding.h"
#include "transient/train/step_records.h"
#include "transient/train/token_proof.h"

namespace transient::train {

namespace fs = std::filesystem;

namespace {

constexpr double kHelloTimeoutS = 5;            // a connection must say hello within this
constexpr double kBalanceCheckS = 10;           // how often speeds are compared with the split
constexpr long kMaxStrangers = 64;              // connections not yet admitted
constexpr std::size_t kStrangerMaxLine = 4096;  // bytes of a line before the token is proven
constexpr long kMaxStrangersPerHost = 8;        // ... of them from one host
constexpr long kLoggedDropsPerWindow = 20;      // dropped connections logged one by one ...
constexpr double kDropWindowS = 10;             // ... in each window of this length
constexpr std::int64_t kMaxCheckpointBytes = std::int64_t{1} << 40;  // 1 TiB
constexpr std::size_t kChunkBytes = 512 << 10;  // of a checkpoint sent to a worker
constexpr std::size_t kMaxRowBytes = 512;       // of a steps.csv row

double seconds_between(std::chrono::steady_clock::time_point from,
                       std::chrono::steady_clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

double rounded_ms(double seconds) { return std::round(seconds * 1e6) / 1e6; }

}  // namespace

struct Coordinator::Peer {
  std::unique_ptr<LineChannel> channel;
  Clock::time_point opened;
  std::string worker;     // empty until admitted
  nlohmann::json hello;   // the hello, kept until the worker proves the token
  std::string challenge;  // the nonce this coordinator sent it ("" before the hello)
  std::string bye;        // the reason the worker gave before closing
  bool dead = false;      // to be removed at the end of the round
};

struct Coordinator::Worker {
  enum class State { kLoading, kPending, kMember, kReported, kDone, kGone };
  std::string id;
  Peer* peer = nullptr;
  State state = State::kLoading;
  Clock::time_point last_heard;
  long pid = 0;
  std::string address;                        // where its peers reach it, as it said (for messages)
  std::string probe;                          // its reachability probe, HOST:PORT
  Clock::time_point admitted;                 // billed from then ...
  std::optional<Clock::time_point> released;  // ... until it left
  std::int64_t rows_written = 0;              // the last steps row (its sequence number) written
  std::int64_t rows_acknowledged = 0;         // ... and told to the worker
  double speed = 0;  // samples/s of forward+backward, as the worker measured it (0 = unknown)
  // The report that ended its part in the current generation.
  std::int64_t held = -1;       // steps completed in the state it holds
  std::int64_t attempted = -1;  // the step it had started when the generation ended
  bool leaving = false;
  std::string leave_reason;
  // A checkpoint it is sending (rank 0): written to a temporary file as it comes.
  struct Incoming {
    std::int64_t id = -1;
    CheckpointRecord record;
    std::string path;
    int fd = -1;
    std::int64_t received = 0;
    std::uint32_t crc32 = 0;
    Clock::time_point started;
    std::string failure;  // why it cannot be stored; told in the reply to its end
  };
  std::optional<Incoming> incoming;
};

Coordinator::Coordinator(JobConfig job, std::string token, CoordinatorOptions options,
                         EventLog& events, GenerationConfig start)
    : job_(std::move(job)),
      token_(std::move(token)),
      options_(std::move(options)),
      events_(events),
      start_(std::move(start)),
      progress_(std::make_unique<ProgressLine>()),
      last_step_time_(Clock::now()) {
  last_step_ = start_.start_step;
  attempted_step_ = start_.start_step;
  lr_scale_ = start_.lr_scale;
  listener_ = std::make_unique<Listener>(options_.bind, options_.port, "--bind/--port");
  if (options_.dashboard != "off") {
    const auto at = report::parse_dashboard_address(options_.dashboard, "--dashboard");
    dashboard_ = std::make_unique<report::LiveDashboard>(job_.options.job_dir, token_, at.host,
                                                         at.port, "--dashboard");
    std::fprintf(stderr, "transient: dashboard on http://%s/\n", dashboard_->address().c_str());
    std::fflush(stderr);
  }
  checkpoints_ = std::make_unique<CheckpointDirectory>(
      records::JobFiles(job_.options.job_dir).checkpoints(), job_.options.keep);
  if (!options_.taking_back) write_journal();
}

Coordinator::~Coordinator() {
  for (auto& [id, worker] : workers_) discard_incoming(*worker);
}

std::string Coordinator::address() const {
  return Endpoint{options_.bind, listener_->port()}.text();
}

std::string Coordinator::dashboard_address() const {
  return dashboard_ ? dashboard_->address() : "";
}

double Coordinator::samples_per_s() const {
  if (!first_step_time_) return 0;
  const double seconds = seconds_between(*first_step_time_, last_step_time_);
  return seconds > 0
             ? static_cast<double>((last_step_ - first_step_) * job_.options.global_batch) / seconds
             : 0;
}

bool Coordinator::poll(double max_wait_s) {
  if (outcome_.ended) return false;
  std::vector<pollfd> fds;
  fds.push_back({listener_->fd(), POLLIN, 0});
  for (const auto& peer : peers_) fds.push_back({peer->channel->fd(), POLLIN, 0});
  ::poll(fds.data(), fds.size(), static_cast<int>(std::max(0.0, max_wait_s) * 1000));
  if (fds[0].revents != 0) accept_connections();
  // Every peer is read, not only those poll flagged: a line may wait in a buffer.
  for (std::size_t i = 0; i < peers_.size(); ++i) {
    if (!peers_[i]->dead) read_peer(*peers_[i]);
  }
  const auto now = Clock::now();
  for (auto& peer : peers_) {
    if (!peer->dead && peer->worker.empty() &&
        seconds_between(peer->opened, now) > kHelloTimeoutS) {
      drop_garbage(*peer, "no hello within " + format_duration(kHelloTimeoutS));
    }
  }
  peers_.erase(std::remove_if(peers_.begin(), peers_.end(), [](const auto& p) { return p->dead; }),
               peers_.end());
  check_heartbeats();
  for (auto& [client, reply] : store_.take_completed()) {
    // Waits that keys set in this round completed.
    if (Worker* worker = find_worker(client); worker != nullptr && worker->peer != nullptr) {
      worker->peer->channel->send(reply);
    }
  }
  if (stop_requested_ && running_ && !generation_formed_ && stop_time_ &&
      seconds_between(*stop_time_, Clock::now()) > 1) {
    // A group that has not formed within a second of Ctrl-C or SIGTERM holds no step in
    // progress: the job pauses now instead of waiting for it (its members exit when told).
    events_.append({{"event", "stopped_while_forming"}, {"gen", generation_}});
    end_job("");
    outcome_.result.stopped = true;
  }
  finish_if_done();
  if (!outcome_.ended) {
    maybe_signal_change();
    maybe_form_generation();
  }
  account_cost(false);
  if (outcome_.ended && !journal_closed_) {
    journal_closed_ = true;
    write_journal();  // says how it ended: a paused job can be continued from it
  }
  return !outcome_.ended;
}

// The host part of HOST:PORT (an IPv6 host keeps its brackets).
std::string host_of(const std::string& peer) { return peer.substr(0, peer.rfind(':')); }

void Coordinator::accept_connections() {
  for (;;) {
    std::string peer_name;
    const int fd = listener_->accept(peer_name);
    if (fd < 0) return;
    auto peer = std::make_unique<Peer>();
    peer->channel = std::make_unique<LineChannel>(fd, peer_name);
    // Connections that have not proven the token are bounded per source host and in all. At a
    // bound the oldest of them that has not even said hello gives way to the newest (a worker
    // says hello at once and proves the token in a round trip), so that idle connections,
    // however many, cannot keep a worker that holds the token out.
    const std::string host = host_of(peer_name);
    long from_host = 0;
    long strangers = 0;
    Peer* idle_of_host = nullptr;
    Peer* idle = nullptr;
    for (const auto& p : peers_) {
      if (!p->worker.empty() || p->dead) continue;
      ++strangers;
      const bool same_host = host_of(p->channel->peer()) == host;
      from_host += same_host;
      if (!p->challenge.empty()) continue;  // in the middle of its handshake
      if (idle == nullptr || p->opened < idle->opened) idle = p.get();
      if (same_host && (idle_of_host == nullptr || p->opened < idle_of_host->opened)) {
        idle_of_host = p.get();
      }
    }
    Peer* evicted = from_host >= kMaxStrangersPerHost ? idle_of_host
                    : strangers >= kMaxStrangers      ? idle
                                                      : nullptr;
    if ((from_host >= kMaxStrangersPerHost || strangers >= kMaxStrangers) && evicted == nullptr) {
      drop_garbage(*peer, "too many connections from " + host + " that have not proven the token");
      continue;  // the channel closes as `peer` goes
    }
    if (evicted != nullptr) {
      drop_garbage(*evicted, "idle without a hello while newer connections wait");
    }
    peer->opened = Clock::now();
    // Before it has proven the token a connection may send a few KiB, not a megabyte per line.
    peer->channel->set_max_line(kStrangerMaxLine);
    peers_.push_back(std::move(peer));
  }
}

void Coordinator::drop_garbage(Peer& peer, const std::string& reason) {
  peer.dead = true;
  // Logged in full up to kLoggedDropsPerWindow a window; beyond, counted and summed up once the
  // window is over, so that a flood cannot fill the disk or the terminal.
  const auto now = Clock::now();
  if (seconds_between(drop_window_start_, now) >= kDropWindowS) {
    if (drops_unlogged_ > 0) {
      std::fprintf(stderr,
                   "transient: dropped %ld more connections in %.0f s (not logged one by one)\n",
                   drops_unlogged_, kDropWindowS);
      events_.append({{"event", "connections_dropped"},
                      {"count", drops_unlogged_},
                      {"window_s", kDropWindowS}});
    }
    drop_window_start_ = now;
    drops_in_window_ = 0;
    drops_unlogged_ = 0;
  }
  if (++drops_in_window_ > kLoggedDropsPerWindow) {
    ++drops_unlogged_;
    return;
  }
  std::fprintf(stderr, "transient: dropped a connection from %s: %s\n",
               peer.channel->peer().c_str(), reason.c_str());
  events_.append({{"event", "connection_dropped"},
                  {"peer", peer.channel->peer()},
                  {"bytes", peer.channel->bytes_received()},
                  {"reason", reason}});
}

void Coordinator::read_peer(Peer& peer) {
  std::vector<std::string> lines;
  const auto status = peer.channel->read_available(lines);
  Worker* worker = peer.worker.empty() ? nullptr : find_worker(peer.worker);
  for (const auto& line : lines) {
    if (peer.dead) break;
    nlohmann::json message;
    try {
      message = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception&) {
      message = nullptr;
    }
    if (!message.is_object()) {
      // Garbage: before a hello the connection is dropped; from an admitted worker the line is
      // logged and ignored.
      std::string shown = line.substr(0, 40);
      for (char& c : shown) {
        if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) c = '?';
      }
      if (worker == nullptr) {
        drop_garbage(peer, "not a JSON hello (starts with \"" + shown + "\")");
      } else {
        events_.append({{"event", "garbage"}, {"worker", worker->id}, {"line", shown}});
      }
      continue;
    }
    try {
      if (worker == nullptr) {
        handle_hello(peer, message);
        worker = peer.worker.empty() ? nullptr : find_worker(peer.worker);
        continue;
      }
      if (worker->peer != &peer) continue;  // an old connection of a worker that re-connected
      worker->last_heard = Clock::now();
      if (message.contains("bye")) {
        peer.bye = message.value("bye", "stopped");
        continue;
      }
      handle_message(*worker, message);
    } catch (const nlohmann::json::exception& error) {
      // Well-formed JSON of the wrong shape (a number where a name belongs, ...).
      if (worker == nullptr) {
        drop_garbage(peer, std::string("a malformed hello: ") + error.what());
      } else {
        events_.append({{"event", "garbage"}, {"worker", worker->id}, {"reason", error.what()}});
      }
    }
  }
  if (status == LineChannel::Status::kTooLong) {
    drop_garbage(peer, peer.worker.empty() ? "a line longer than 4 KiB before the token was proven"
                                           : "a line longer than 1 MiB");
  }
  if (status != LineChannel::Status::kOpen || peer.dead) {
    peer.dead = true;
    if (worker != nullptr && worker->peer == &peer) {
      worker->peer = nullptr;
      worker_gone(*worker, peer.bye.empty() ? "failed" : peer.bye);
    }
  }
}

void Coordinator::handle_hello(Peer& peer, const nlohmann::json& message) {
  if (peer.challenge.empty()) {
    // The hello: answered with this coordinator's proof of the token (bound to the worker's
    // nonce) and a challenge of its own. Nothing else of the job is said before the worker's
    // proof.
    if (message.value("hello", "") != "transient-worker") {
      drop_garbage(peer, "the first message is not a worker's hello");
      return;
    }
    if (message.value("version", 0) != kProtocolVersion) {
      drop_garbage(peer, "a hello of protocol version " +
                             message.value("version", nlohmann::json(0)).dump() +
                             "; this coordinator speaks version " +
                             std::to_string(kProtocolVersion));
      return;
    }
    const std::string nonce = message.value("nonce", "");
    if (!is_nonce(nonce)) {
      drop_garbage(peer, "a hello without a nonce of 32 hex digits");
      return;
    }
    peer.hello = message;
    peer.challenge = new_nonce();
    peer.channel->send({{"challenge", peer.challenge},
                        {"proof", token_proof(token_, "coordinator", nonce, peer.challenge)}});
    return;
  }
  const nlohmann::json& hello = peer.hello;
  std::string id = hello.value("worker", "");
  auto refuse = [&](const std::string& reason) {
    std::fprintf(stderr, "transient: refused a worker from %s: %s\n", peer.channel->peer().c_str(),
                 reason.c_str());
    events_.append({{"event", "worker_refused"},
                    {"peer", peer.channel->peer()},
                    {"worker", id},
                    {"reason", reason}});
    peer.channel->send({{"refused", reason}});
    peer.dead = true;
  };
  if (message.contains("bye")) {
    // It found this coordinator's proof wrong: it holds another token.
    return refuse("wrong job token (" + message.value("bye", std::string()) + ")");
  }
  const std::string proof = message.value("proof", "");
  const std::string expected =
      token_proof(token_, "worker", peer.challenge, hello.value("nonce", std::string()));
  if (!proofs_equal(proof, expected)) {
    return refuse("wrong job token");
  }
  peer.channel->set_max_line(LineChannel::kMaxLine);  // a proven worker may send large lines
  if (outcome_.ended) return refuse("the job has ended");
  if (token_.empty()) return refuse("the job has no token");
  Worker* worker = id.empty() ? nullptr : find_worker(id);
  const bool rejoin = hello.contains("rejoin") && hello.at("rejoin").is_object() &&
                      hello.at("rejoin").contains("gen");
  if (rejoin) {
    // A member of the journaled generation re-connecting after a coordinator restart.
    const auto& state = hello.at("rejoin");
    if (worker == nullptr || worker->state == Worker::State::kGone ||
        state.value("gen", std::int64_t{-2}) != generation_) {
      return refuse("not a member of generation " + std::to_string(generation_) +
                    " (it has left the job)");
    }
    if (worker->peer != nullptr) worker->peer->dead = true;
    worker->peer = &peer;
    peer.worker = id;
    worker->last_heard = Clock::now();
    if (state.value("reported", false) && worker->state == Worker::State::kMember) {
      worker->state = Worker::State::kReported;
      worker->held = state.value("step", std::int64_t{-1});
      worker->attempted = state.value("attempted", worker->held);
      worker->leaving = state.value("leaving", false);
      worker->leave_reason = state.value("cause", "failed");
      attempted_step_ = std::max(attempted_step_, worker->attempted);
      end_generation(worker->leave_reason);
    }
    peer.channel->send({{"admitted", id}, {"job", to_json(job_)}});
    events_.append({{"event", "worker_rejoined"}, {"worker", id}, {"gen", generation_}});
    return;
  }
  // A worker that was loading or waiting for a generation when the coordinator died comes back
  // with its id but no generation: it is admitted as a new worker (it holds no state).
  if (id.empty()) {
    id = next_worker_id();
  } else if (id.find_first_of("/ \"") != std::string::npos || worker != nullptr) {
    return refuse("worker id \"" + id + "\" is taken or not a plain name");
  }
  auto fresh = std::make_unique<Worker>();
  fresh->id = id;
  fresh->peer = &peer;
  fresh->last_heard = Clock::now();
  fresh->admitted = fresh->last_heard;
  fresh->pid = hello.value("pid", 0L);
  peer.worker = id;
  workers_[id] = std::move(fresh);
  if (!first_admission_) first_admission_ = Clock::now();
  peer.channel->send({{"admitted", id}, {"job", to_json(job_)}});
  events_.append({{"event", "worker_joined"},
                  {"worker", id},
                  {"peer", peer.channel->peer()},
                  {"pid", hello.value("pid", 0L)}});
  write_journal();  // the next worker number
  if (on_admitted) on_admitted(id, hello.value("pid", 0L));
}

std::string Coordinator::next_worker_id() {
  for (;;) {
    std::string id = "w" + std::to_string(next_worker_++);
    if (workers_.count(id) == 0) return id;
  }
}

Coordinator::Worker* Coordinator::find_worker(const std::string& id) {
  auto it = workers_.find(id);
  return it == workers_.end() ? nullptr : it->second.get();
}

void Coordinator::handle_message(Worker& worker, const nlohmann::json& message) {
  if (message.contains("hb")) {
    if (message.contains("speed")) worker.speed = message.value("speed", 0.0);
    if (worker.rows_written > worker.rows_acknowledged && worker.peer != nullptr) {
      // The worker may forget the rows written here (they are on this server's disk).
      worker.peer->channel->send({{"rows_ack", worker.rows_written}});
      worker.rows_acknowledged = worker.rows_written;
    }
    return;
  }
  if (message.contains("store")) {
    handle_store(worker, message);
    return;
  }
  if (message.contains("rows")) {
    handle_rows(worker, message);
    return;
  }
  if (message.contains("checkpoint")) {
    handle_checkpoint(worker, message);
    return;
  }
  if (message.contains("fetch_checkpoint")) {
    send_checkpoint(worker, message);
    return;
  }
  if (message.contains("ready")) {
    // Loaded its data and model: it can be a member from the next generation on.
    if (message.contains("address") && message.at("address").is_string()) {
      worker.address = message.at("address").get<std::string>().substr(0, 256);
    }
    if (message.contains("probe") && message.at("probe").is_string()) {
      worker.probe = message.at("probe").get<std::string>().substr(0, 300);
    }
    events_.append({{"event", "worker_ready"}, {"worker", worker.id}, {"address", worker.address}});
    if (worker.state == Worker::State::kLoading) {
      worker.state = Worker::State::kPending;
      pending_.push_back(worker.id);
    }
    return;
  }
  if (message.contains("progress")) {
    update_progress(progress_report_from_json(message.at("progress")));
    return;
  }
  if (message.contains("event")) {
    const auto& event = message.at("event");
    if (event.is_object() && event.value("event", "") == "image_skipped") {
      skipped_images_.insert(event.value("file", ""));
    }
    events_.append(event);
    return;
  }
  const std::string report = message.value("report", "");
  const std::int64_t gen = message.value("gen", std::int64_t{-1});
  if (report == "fatal") {
    // An error of the job, not of this worker's peers: the next member would meet it too (a
    // full disk, a read-only checkpoints/, a checkpoint that does not fit): the job stops here.
    const std::string error = message.value("error", "an unknown error");
    events_.append({{"event", "worker_failed"}, {"worker", worker.id}, {"error", error}});
    end_job("worker " + worker.id + " failed: " + error);
    return;
  }
  if (report == "diverged") {
    // Every member reports it (the loss is all-reduced): the first report decides.
    const std::int64_t step = message.value("step", std::int64_t{0});
    if (outcome_.ended || (gen == generation_ && rolled_back_generation_ == gen)) return;
    const std::string loss = message.value("loss", std::string("nan"));
    if (job_.options.on_divergence == "rollback" && gen == generation_ &&
        rollbacks_ < kMaxRollbacks) {
      roll_back(step, loss, worker.id);
      return;
    }
    outcome_.diverged_at_step = step;
    events_.append({{"event", "diverged"},
                    {"step", step},
                    {"loss", loss},
                    {"worker", worker.id},
                    {"action", "stop"},
                    {"rollbacks", rollbacks_}});
    end_job("the training loss was " + loss + " at step " + std::to_string(step) +
            (rollbacks_ > 0 ? " after " + std::to_string(rollbacks_) + " rollback" +
                                  (rollbacks_ == 1 ? "" : "s") + " with a learning rate x" +
                                  nlohmann::json(lr_scale_).dump()
                            : std::string()));
    return;
  }
  if (gen != generation_) return;  // about a generation that is over
  if (report == "grouped") {
    generation_formed_ = true;
    unformed_count_ = 0;
    unformed_members_.clear();
    return;
  }
  if (report == "formed") {
    generation_formed_ = true;
    unformed_count_ = 0;
    unformed_members_.clear();
    if (recovery_ && recovery_->generation == gen) recovery_->formed = Clock::now();
    return;
  }
  if (report == "stepped") {
    if (recovery_ && recovery_->generation == gen) {
      const auto now = Clock::now();
      const std::int64_t step = message.value("step", std::int64_t{0});
      const std::int64_t redone = std::max<std::int64_t>(0, recovery_->attempted_step - (step - 1));
      ++recoveries_;
      redone_steps_ += redone;
      nlohmann::json event = {
          {"event", "recovery"},
          {"gen", gen},
          {"cause", recovery_->cause},
          {"lost", recovery_->lost},
          {"detect_s", rounded_ms(seconds_between(recovery_->failed, recovery_->decided))},
          {"reform_s",
           rounded_ms(seconds_between(recovery_->decided, recovery_->formed.value_or(now)))},
          {"duration_s", rounded_ms(seconds_between(recovery_->failed, now))},
          {"waited_s", rounded_ms(recovery_->waited_s)},
          {"redone_steps", redone}};
      events_.append(event);
      progress_->finish();
      std::fprintf(stderr,
                   "transient: recovered from the loss of %s (%s) in %.0f ms: generation %lld "
                   "with %zu workers goes on at step %lld (%lld step%s redone)\n",
                   nlohmann::json(recovery_->lost).dump().c_str(), recovery_->cause.c_str(),
                   1000 * seconds_between(recovery_->failed, now), static_cast<long long>(gen),
                   members_.size(), static_cast<long long>(step), static_cast<long long>(redone),
                   redone == 1 ? "" : "s");
      recovery_.reset();
    }
    return;
  }
  if (worker.state != Worker::State::kMember) return;
  if (report == "failed" || report == "boundary") {
    worker.state = Worker::State::kReported;
    worker.held = message.value("step", std::int64_t{-1});
    worker.attempted = message.value("attempted", worker.held);
    worker.leaving = message.value("leaving", false);
    worker.leave_reason = message.value("reason", "preempted");
    attempted_step_ = std::max(attempted_step_, worker.attempted);
    if (report == "failed" && !generation_formed_ && message.contains("unreachable")) {
      note_unreachable(message.at("unreachable"));
    }
    if (report == "failed") {
      if (!first_failure_) first_failure_ = Clock::now();
      end_generation(message.value("cause", "failed"));
    } else {
      if (worker.leaving && !first_failure_) first_failure_ = Clock::now();
      end_generation(worker.leaving ? worker.leave_reason : "change");
    }
    return;
  }
  if (report == "done") {
    // Every member's result is the same (the evaluation is all-reduced).
    worker.state = Worker::State::kDone;
    outcome_.result = worker_result_from_json(message.at("result"));
  }
}

void Coordinator::roll_back(std::int64_t step, const std::string& loss, const std::string& by) {
  // The state before step `step` gave a non-finite loss, and the one before it may already be on
  // its way there: the checkpoints of steps >= step - 1 are set aside (renamed, kept for a look,
  // never resumed from), and the members, which report the generation failed holding no state,
  // start the next generation from the newest checkpoint left (or afresh) with the learning rate
  // halved from there on.
  rolled_back_generation_ = generation_;
  ++rollbacks_;
  lr_scale_ /= 2;
  std::vector<std::string> set_aside;
  try {
    CheckpointDirectory directory(records::JobFiles(job_.options.job_dir).checkpoints(),
                                  job_.options.keep);
    for (const auto& record : directory.set_aside_from(step - 1, "diverged-")) {
      set_aside.push_back(record.file);
    }
  } catch (const std::exception& error) {
    end_job(std::string("cannot roll back after the divergence at step ") + std::to_string(step) +
            ": " + error.what());
    return;
  }
  events_.append({{"event", "diverged"},
                  {"step", step},
                  {"loss", loss},
                  {"worker", by},
                  {"action", "rollback"},
                  {"rollbacks", rollbacks_},
                  {"lr_scale", lr_scale_},
                  {"set_aside", set_aside}});
  progress_->finish();
  std::fprintf(stderr,
               "transient: the training loss was %s at step %lld: rolling back to the newest "
               "checkpoint before step %lld with the learning rate x%g (rollback %d of %d)\n",
               loss.c_str(), static_cast<long long>(step), static_cast<long long>(step - 1),
               lr_scale_, rollbacks_, kMaxRollbacks);
  write_journal();
}

void Coordinator::handle_store(Worker& worker, const nlohmann::json& request) {
  // Only members of the running generation have anything to exchange; the store itself keeps
  // every key under that generation's prefix.
  const bool member = running_ && worker.state == Worker::State::kMember;
  std::optional<nlohmann::json> reply =
      member ? store_.handle(worker.id, request)
             : nlohmann::json{
                   {"store_reply", request.value("id", nlohmann::json(-1))},
                   {"error", "worker " + worker.id + " is not a member of the running generation"}};
  if (reply && worker.peer != nullptr) worker.peer->channel->send(*reply);
}

void Coordinator::handle_rows(Worker& worker, const nlohmann::json& message) {
  // The worker's rows of steps.csv, kept in a part file of its own on this server (a worker's
  // disk vanishes with it) and merged into steps.csv as before.
  const auto& rows = message.at("rows");
  if (!rows.is_array())
    throw nlohmann::json::type_error::create(302, "\"rows\" must be an array", &rows);
  std::string text;
  for (const auto& row : rows) {
    const std::string line = row.get<std::string>();
    if (line.size() > kMaxRowBytes || line.find('\n') != std::string::npos) {
      events_.append(
          {{"event", "garbage"}, {"worker", worker.id}, {"reason", "a malformed steps row"}});
      return;
    }
    text += line + "\n";
  }
  const std::string path = records::JobFiles(job_.options.job_dir).step_part(worker.id);
  std::FILE* out = std::fopen(path.c_str(), "ab");
  if (out == nullptr || std::fwrite(text.data(), 1, text.size(), out) != text.size()) {
    if (out != nullptr) std::fclose(out);
    end_job("cannot write the step records " + path + ": " + std::strerror(errno));
    return;
  }
  if (std::fclose(out) != 0) {
    end_job("cannot write the step records " + path + ": " + std::strerror(errno));
    return;
  }
  if (message.contains("last") && message.at("last").is_number_integer()) {
    worker.rows_written = std::max(worker.rows_written, message.at("last").get<std::int64_t>());
  }
}

void Coordinator::handle_checkpoint(Worker& worker, const nlohmann::json& message) {
  // A checkpoint comes in pieces (begin, chunks of base64, end) on the worker's connection, is
  // written to a temporary file as it comes, and is adopted into the job's checkpoint directory
  // (renamed into place, then listed in the manifest) once its size and checksum hold.
  const std::string part = message.at("checkpoint").get<std::string>();
  const std::int64_t id = message.at("id").get<std::int64_t>();
  // A failure is told in the reply to the end (the worker waits for that one); the chunks
  // still on their way are dropped.
  auto fail = [&](const std::string& why) {
    if (!worker.incoming || worker.incoming->id != id) {
      if (worker.peer != nullptr) worker.peer->channel->send({{"store_reply", id}, {"error", why}});
      return;
    }
    if (worker.incoming->fd >= 0) ::close(worker.incoming->fd);
    worker.incoming->fd = -1;
    std::error_code ignored;
    fs::remove(worker.incoming->path, ignored);
    worker.incoming->failure = why;
  };
  if (part == "begin") {
    discard_incoming(worker);
    Worker::Incoming incoming;
    incoming.id = id;
    incoming.record.step = message.at("step").get<std::int64_t>();
    incoming.record.bytes = message.at("bytes").get<std::int64_t>();
    incoming.record.file = checkpoint_name(incoming.record.step);
    incoming.started = Clock::now();
    incoming.path = checkpoints_->incoming_path(incoming.record.step, worker.id);
    incoming.crc32 = static_cast<std::uint32_t>(::crc32(0L, Z_NULL, 0));
    worker.incoming = std::move(incoming);
    if (worker.incoming->record.step < 0 || worker.incoming->record.bytes <= 0 ||
        worker.incoming->record.bytes > kMaxCheckpointBytes) {
      return fail("a checkpoint of step " + std::to_string(worker.incoming->record.step) + " and " +
                  std::to_string(worker.incoming->record.bytes) + " bytes is refused");
    }
    worker.incoming->fd =
        ::open(worker.incoming->path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (worker.incoming->fd < 0) {
      return fail("cannot write " + worker.incoming->path + ": " + std::strerror(errno));
    }
    return;
  }
  if (!worker.incoming || worker.incoming->id != id) return fail("no checkpoint is being sent");
  auto& incoming = *worker.incoming;
  if (!incoming.failure.empty()) {
    if (part == "end") {
      if (worker.peer != nullptr) {
        worker.peer->channel->send({{"store_reply", id}, {"error", incoming.failure}});
      }
      worker.incoming.reset();
    }
    return;
  }
  if (part == "chunk") {
    const std::string bytes = decode_store_value(message.at("data").get<std::string>());
    incoming.received += static_cast<std::int64_t>(bytes.size());
    if (incoming.received > incoming.record.bytes) return fail("more bytes than announced");
    for (std::size_t done = 0; done < bytes.size();) {
      const ssize_t n = ::write(incoming.fd, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        return fail("cannot write " + incoming.path + ": " + std::strerror(errno));
      }
      done += static_cast<std::size_t>(n);
    }
    incoming.crc32 = static_cast<std::uint32_t>(
        ::crc32(incoming.crc32, reinterpret_cast<const Bytef*>(bytes.data()),
                static_cast<uInt>(bytes.size())));
    return;
  }
  if (part != "end") return fail("unknown checkpoint part \"" + part.substr(0, 16) + "\"");
  auto answer_failure = [&](const std::string& why) {
    fail(why);
    if (worker.peer != nullptr) worker.peer->channel->send({{"store_reply", id}, {"error", why}});
    worker.incoming.reset();
  };
  incoming.record.crc32 = message.at("crc32").get<std::uint32_t>();
  if (incoming.received != incoming.record.bytes || incoming.crc32 != incoming.record.crc32) {
    return answer_failure("the checkpoint of step " + std::to_string(incoming.record.step) +
                          " arrived damaged (size or CRC-32 differs from what was sent)");
  }
  if (::fsync(incoming.fd) != 0) {
    return answer_failure("cannot write " + incoming.path + ": " + std::strerror(errno));
  }
  ::close(incoming.fd);
  incoming.fd = -1;
  try {
    checkpoints_->adopt(incoming.path, incoming.record);
  } catch (const InputError& error) {
    return answer_failure(error.what());
  }
  const double seconds = seconds_between(incoming.started, Clock::now());
  events_.append({{"event", "checkpoint"},
                  {"step", incoming.record.step},
                  {"bytes", incoming.record.bytes},
                  {"write_s", rounded_ms(seconds)},
                  {"file", incoming.record.file},
                  {"worker", worker.id}});
  if (worker.peer != nullptr) {
    worker.peer->channel->send({{"store_reply", id}, {"file", incoming.record.file}});
  }
  worker.incoming.reset();
}

void Coordinator::discard_incoming(Worker& worker) {
  if (!worker.incoming) return;
  if (worker.incoming->fd >= 0) ::close(worker.incoming->fd);
  std::error_code ignored;
  fs::remove(worker.incoming->path, ignored);
  worker.incoming.reset();
}

void Coordinator::send_checkpoint(Worker& worker, const nlohmann::json& request) {
  // A member that must start from a checkpoint gets it from here, in chunks, then a reply with
  // its size and checksum (it checks them again).
  const std::int64_t id = request.at("id").get<std::int64_t>();
  const std::string file = request.at("fetch_checkpoint").get<std::string>();
  if (worker.peer == nullptr) return;
  LineChannel& channel = *worker.peer->channel;
  try {
    for (const auto& record : checkpoints_->list()) {
      if (record.file != file) continue;
      const auto bytes = checkpoints_->read_verified(record);
      for (std::size_t at = 0; at < bytes.size(); at += kChunkBytes) {
        const std::size_t size = std::min(kChunkBytes, bytes.size() - at);
        if (!channel.send({{"chunk_of", id},
                           {"data", encode_store_value(std::string(bytes.data() + at, size))}})) {
          return;
        }
      }
      channel.send({{"store_reply", id}, {"bytes", record.bytes}, {"crc32", record.crc32}});
      return;
    }
    channel.send(
        {{"store_reply", id}, {"error", "the job has no checkpoint " + file.substr(0, 64)}});
  } catch (const InputError& error) {
    channel.send({{"store_reply", id}, {"error", error.what()}});
  }
}

std::optional<double> Coordinator::cost_usd() const {
  if (job_.options.price_usd_per_h <= 0) return std::nullopt;
  const auto end = ended_at_.value_or(Clock::now());
  double seconds = 0;
  for (const auto& [id, worker] : workers_) {
    const auto until = std::min(worker->released.value_or(end), end);
    if (until > worker->admitted) seconds += seconds_between(worker->admitted, until);
  }
  return cost_before_restart_usd_ + seconds * job_.options.price_usd_per_h / 3600;
}

void Coordinator::account_cost(bool now) {
  // A `cost` event every 10 s while the job runs, and one when it ends: the report draws the cost
  // over time by market from them.
  if (job_.options.price_usd_per_h <= 0 || accounts_closed_) return;
  if (outcome_.ended) {
    // The last event: billing stops with the job.
    if (!ended_at_) ended_at_ = Clock::now();
    accounts_closed_ = true;
    now = true;
  }
  if (!now && seconds_between(last_cost_event_, Clock::now()) < 10) return;
  const auto cost = cost_usd();
  last_cost_event_ = Clock::now();
  int billed = 0;
  for (const auto& [id, worker] : workers_) billed += !worker->released;
  events_.append({{"event", "cost"},
                  {"market", job_.options.market},
                  {"instance_type", job_.options.instance_type},
                  {"price_usd_per_h", job_.options.price_usd_per_h},
                  {"servers", outcome_.ended ? 0 : billed},
                  {"cost_usd", *cost}});
}

void Coordinator::note_unreachable(const nlohmann::json& members) {
  if (!members.is_array()) return;
  for (const auto& id : members) {
    if (id.is_string() &&
        std::find(members_.begin(), members_.end(), id.get<std::string>()) != members_.end()) {
      ++unreachable_votes_[id.get<std::string>()];
    }
  }
}

void Coordinator::drop_unreachable_member() {
  std::vector<std::string> members = members_;
  std::sort(members.begin(), members.end());
  if (members == unformed_members_) {
    ++unformed_count_;
  } else {
    unformed_members_ = members;
    unformed_count_ = 1;
  }
  if (unformed_count_ < 2 || unreachable_votes_.empty()) return;
  // The member the most others could not reach; a tie (a link cut both ways) names nobody.
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
  Worker* worker = find_worker(blamed);
  const std::string why =
      "its peers could not reach it at " + worker->address +
      " (twice); start it with --advertise ADDR or --interface IFNAME naming an address the "
      "other workers can reach";
  std::fprintf(stderr, "transient: worker %s dropped: %s\n", blamed.c_str(), why.c_str());
  events_.append({{"event", "worker_unreachable"},
                  {"worker", blamed},
                  {"address", worker->address},
                  {"gen", generation_}});
  if (worker->peer != nullptr) worker->peer->channel->send({{"left", "unreachable: " + why}});
  worker_gone(*worker, "unreachable");
  unformed_count_ = 0;
  unformed_members_.clear();
}

void Coordinator::update_progress(const ProgressReport& report) {
  if (report.step == last_step_ && first_step_time_) return;
  last_step_ = report.step;
  since_checkpoint_s_ = report.since_checkpoint_s;
  attempted_step_ = std::max(attempted_step_, report.step);
  last_step_time_ = Clock::now();
  if (!first_step_time_) {
    first_step_time_ = last_step_time_;
    first_step_ = report.step;
  }
  const double rate = samples_per_s();
  const double steps_per_s = rate / static_cast<double>(job_.options.global_batch);
  const double eta =
      steps_per_s > 0 ? static_cast<double>(job_.total_steps - report.step) / steps_per_s : -1;
  progress_->update(report.step, job_.total_steps, report.epoch, report.loss, rate, eta);
}

void Coordinator::worker_gone(Worker& worker, const std::string& reason) {
  if (worker.state == Worker::State::kGone) return;
  const auto previous = worker.state;
  worker.state = Worker::State::kGone;
  worker.leave_reason = reason;
  worker.released = Clock::now();
  store_.drop_client(worker.id);
  discard_incoming(worker);
  if (worker.peer != nullptr) {
    worker.peer->dead = true;
    worker.peer = nullptr;
  }
  pending_.erase(std::remove(pending_.begin(), pending_.end(), worker.id), pending_.end());
  if (outcome_.ended || previous == Worker::State::kDone) return;
  const bool member = std::find(members_.begin(), members_.end(), worker.id) != members_.end();
  if (reason != "stopped" && reason != "unreachable") ++revocations_;
  progress_->finish();
  std::fprintf(stderr, "transient: worker %s left (%s)%s\n", worker.id.c_str(), reason.c_str(),
               member && running_ ? "" : " before it trained");
  events_.append({{"event", "worker_left"},
                  {"worker", worker.id},
                  {"reason", reason},
                  {"gen", generation_},
                  {"step", last_step_}});
  if (member && running_ && previous == Worker::State::kMember) {
    if (!first_failure_) first_failure_ = Clock::now();
    end_generation(reason);
    // The others may not notice by themselves (a silent member that wakes up can still complete
    // collectives with them): they are told to leave the generation at their next step.
    for (const auto& id : members_) {
      Worker* other = find_worker(id);
      if (other->state == Worker::State::kMember && other->peer != nullptr) {
        other->peer->channel->send({{"signal", "abort"}, {"gen", generation_}});
      }
    }
  }
  if (member) lost_.push_back(worker.id);
  if (on_left) on_left(worker.id, reason);
}

void Coordinator::process_exited(const std::string& id, const std::string& status) {
  Worker* worker = find_worker(id);
  if (worker == nullptr || worker->state == Worker::State::kGone) return;
  if (worker->state == Worker::State::kDone) return;
  // What it said before it exited (a report, a bye) is read first: a preemption is not a failure.
  if (worker->peer != nullptr) read_peer(*worker->peer);
  if (worker->state == Worker::State::kGone || worker->state == Worker::State::kDone) return;
  const std::string reason =
      worker->peer != nullptr && !worker->peer->bye.empty() ? worker->peer->bye : "failed";
  events_.append({{"event", "worker_exited"}, {"worker", id}, {"status", status}});
  worker_gone(*worker, reason);
}

void Coordinator::check_heartbeats() {
  const auto now = Clock::now();
  for (auto& [id, worker] : workers_) {
    if (worker->state == Worker::State::kGone || worker->state == Worker::State::kDone) continue;
    if (seconds_between(worker->last_heard, now) <= job_.options.heartbeat_timeout_s) continue;
    if (worker->peer != nullptr) worker->peer->channel->send({{"left", "silent"}});
    // Its failure dates from its last sign of life.
    if (running_ && worker->state == Worker::State::kMember && !first_failure_) {
      first_failure_ = worker->last_heard;
    }
    worker_gone(*worker, "silent");
  }
}

bool Coordinator::planned_change(const std::string& cause) {
  return cause == "join" || cause == "change" || cause == "rebalance";
}

void Coordinator::end_generation(const std::string& cause) {
  // A loss outranks a planned change that ends the same generation (the members of a boundary
  // that a preempted member raised report "change" before the leaver says why).
  if (ending_ && !(planned_change(ending_cause_) && !planned_change(cause))) return;
  ending_ = true;
  ending_cause_ = cause;
}

void Coordinator::request_stop() {
  if (stop_requested_) return;
  stop_requested_ = true;
  stop_time_ = Clock::now();
  progress_->finish();
  events_.append({{"event", "stop_requested"}, {"step", last_step_}});
  if (!running_) {
    outcome_.ended = true;
    outcome_.result.step = last_step_;
    outcome_.result.stopped = true;
    return;
  }
  if (Worker* rank0 = find_worker(members_.front()); rank0 != nullptr && rank0->peer != nullptr) {
    rank0->peer->channel->send({{"signal", "stop"}, {"gen", generation_}});
  }
}

void Coordinator::maybe_signal_change() {
  if (!running_ || ending_ || stop_requested_) return;
  std::string cause;
  if (!pending_.empty()) {
    cause = "join";
  } else if (seconds_between(last_balance_check_, Clock::now()) >= kBalanceCheckS) {
    // Speeds drift (another tenant, thermal limits): re-split the batch when the members'
    // measured speeds call for shares that differ from the current ones by more than 10%.
    last_balance_check_ = Clock::now();
    std::vector<double> speeds;
    for (const auto& id : members_) speeds.push_back(find_worker(id)->speed);
    if (generation_speeds_.size() != speeds.size()) return;  // the split in force is unknown
    const auto now = member_shares(job_.options.global_batch, speeds);
    const auto current = member_shares(job_.options.global_batch, generation_speeds_);
    for (std::size_t i = 0; i < now.size() && i < current.size(); ++i) {
      const auto change = std::abs(now[i] - current[i]);
      if (change > std::max<std::int64_t>(1, current[i] / 10)) cause = "rebalance";
    }
  }
  if (cause.empty()) return;
  // Rank 0 raises the flag inside the next step's all-reduce, so that every member stops at the
  // same boundary.
  Worker* rank0 = find_worker(members_.front());
  if (rank0 == nullptr || rank0->peer == nullptr) return;
  rank0->peer->channel->send({{"signal", "change"}, {"gen", generation_}});
  ending_ = true;
  ending_cause_ = cause;
}

void Coordinator::maybe_form_generation() {
  const auto now = Clock::now();
  if (running_) {
    if (!ending_) return;
    // Wait until every member has reported or is gone.
    std::vector<std::string> survivors;
    for (const auto& id : members_) {
      const Worker* worker = find_worker(id);
      if (worker->state == Worker::State::kMember) return;
      if (worker->state == Worker::State::kDone) return;  // the job is finishing
      if (worker->state == Worker::State::kReported && !worker->leaving) survivors.push_back(id);
    }
    for (const auto& id : members_) {
      Worker* worker = find_worker(id);
      if (worker->state == Worker::State::kReported && worker->leaving) {
        worker_gone(*worker, worker->leave_reason);
      }
    }
    running_ = false;
    if (!generation_formed_) drop_unreachable_member();
    if (!planned_change(ending_cause_)) {
      // The cause is why the first lost member left (a survivor's failed collective is only the
      // symptom of a silent or preempted peer).
      std::string cause = ending_cause_;
      if (!lost_.empty()) cause = find_worker(lost_.front())->leave_reason;
      if (recovery_) {
        // Lost again before the previous recovery completed a step: one longer recovery.
        recovery_->generation = generation_ + 1;
        recovery_->decided = now;
        recovery_->formed.reset();
        recovery_->attempted_step = std::max(recovery_->attempted_step, attempted_step_);
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
                                     return find_worker(id)->state == Worker::State::kGone;
                                   }),
                    survivors.end());
    if (!survivors.empty() || !pending_.empty()) {
      form_generation(survivors, pending_);
      return;
    }
    members_.clear();
    write_journal();
  }
  if (stop_requested_) {
    // Paused while no generation runs: nothing is left to checkpoint, the job ends here.
    outcome_.ended = true;
    outcome_.result.step = last_step_;
    outcome_.result.stopped = true;
    return;
  }
  // No generation runs: form one from the pending workers.
  if (pending_.empty()) {
    if (generation_ >= 0 && !waiting_announced_) {
      waiting_announced_ = true;
      progress_->finish();
      std::fprintf(stderr,
                   "transient: no worker left; the job waits for one to join (transient worker "
                   "--coordinator %s --token-file <job>/token)\n",
                   address().c_str());
      events_.append({{"event", "waiting"}, {"step", last_step_}});
    }
    return;
  }
  if (generation_ < 0) {
    const bool enough = static_cast<int>(pending_.size()) >= options_.initial_workers;
    const bool waited_long =
        first_admission_ && seconds_between(*first_admission_, now) > options_.initial_wait_s;
    if (!enough && !waited_long) return;
  }
  form_generation({}, pending_);
}

void Coordinator::form_generation(std::vector<std::string> survivors,
                                  std::vector<std::string> joiners) {
  GenerationConfig config;
  config.generation = generation_ + 1;
  config.members = survivors;
  for (const auto& id : joiners) config.members.push_back(id);
  if (recovery_ && survivors.empty()) {
    // Time spent with no worker at all is part of the recovery, and said apart.
    recovery_->waited_s = seconds_between(recovery_->decided, Clock::now());
  }
  std::int64_t held = -1;
  for (const auto& id : survivors) held = std::max(held, find_worker(id)->held);
  if (held < 0) {
    // Nobody holds the state (no survivor, or survivors that never got one: they joined the
    // generation that failed while forming): everyone loads the latest valid checkpoint (or
    // starts afresh).
    if (generation_ >= 0) {
      CheckpointDirectory directory(records::JobFiles(job_.options.job_dir).checkpoints(),
                                    job_.options.keep);
      start_ = GenerationConfig{};
      if (auto chosen = choose_checkpoint(directory, job_.options, events_)) {
        start_.start_step = chosen->step;
        start_.checkpoint = chosen->record.file;
        start_.checkpoint_bytes = chosen->record.bytes;
        start_.checkpoint_crc32 = chosen->record.crc32;
      }
      // Rows of the steps after the checkpoint will be redone.
      merge_step_records(job_.options.job_dir, start_.start_step);
      if (recovery_) recovery_->attempted_step = std::max(recovery_->attempted_step, last_step_);
    }
    config.start_step = start_.start_step;
    config.checkpoint = start_.checkpoint;
    config.checkpoint_bytes = start_.checkpoint_bytes;
    config.checkpoint_crc32 = start_.checkpoint_crc32;
    last_step_ = start_.start_step;
  } else {
    config.start_step = held;
  }
  for (const auto& id : config.members) {
    config.speeds.push_back(find_worker(id)->speed);
    config.probes.push_back(find_worker(id)->probe);
  }
  // A generation that starts from a checkpoint starts the count afresh.
  config.since_checkpoint_s = config.checkpoint.empty() ? since_checkpoint_s_ : 0;
  config.lr_scale = lr_scale_;
  generation_speeds_ = config.speeds;
  last_balance_check_ = Clock::now();
  generation_ = config.generation;
  members_ = config.members;
  running_ = true;
  generation_formed_ = false;
  unreachable_votes_.clear();
  store_.set_generation_prefix(generation_prefix(generation_));
  ending_ = false;
  ending_cause_.clear();
  waiting_announced_ = false;
  attempted_step_ = config.start_step;
  pending_.clear();
  write_journal();  // before the members hear of it
  for (const auto& id : members_) {
    Worker* worker = find_worker(id);
    worker->state = Worker::State::kMember;
    worker->held = -1;
    worker->attempted = -1;
    worker->leaving = false;
    if (worker->peer != nullptr) worker->peer->channel->send({{"generation", to_json(config)}});
  }
  if (stop_requested_) {
    // Ctrl-C came while the previous generation was ending: this one stops at its first step.
    Worker* rank0 = find_worker(members_.front());
    if (rank0->peer != nullptr) {
      rank0->peer->channel->send({{"signal", "stop"}, {"gen", generation_}});
    }
  }
  events_.append({{"event", "generation"},
                  {"gen", config.generation},
                  {"members", config.members},
                  {"shares", member_shares(job_.options.global_batch, config.speeds)},
                  {"start_step", config.start_step},
                  {"checkpoint", config.checkpoint},
                  {"coordinator", address()}});
  if (config.generation == 0) {
    std::fprintf(stderr,
                 "transient: training %s on %s with %zu workers, %lld steps of %lld samples%s; "
                 "records in %s\n",
                 job_.options.model.c_str(), job_.options.dataset.c_str(), members_.size(),
                 static_cast<long long>(job_.total_steps),
                 static_cast<long long>(job_.options.global_batch),
                 config.checkpoint.empty()
                     ? ""
                     : (", resuming after step " + std::to_string(config.start_step)).c_str(),
                 job_.options.job_dir.c_str());
  } else if (!survivors.empty() || !config.checkpoint.empty() || recovery_) {
    progress_->finish();
    std::fprintf(stderr, "transient: generation %lld: %zu workers from step %lld%s\n",
                 static_cast<long long>(config.generation), members_.size(),
                 static_cast<long long>(config.start_step),
                 config.checkpoint.empty() ? "" : " (from the latest checkpoint)");
  }
}

void Coordinator::end_job(const std::string& failure) {
  if (outcome_.ended) return;
  running_ = false;
  outcome_.ended = true;
  outcome_.failure = failure;
  outcome_.result.step = last_step_;
  progress_->finish();
  for (auto& [id, worker] : workers_) {
    if (worker->peer != nullptr) worker->peer->channel->send({{"finished", true}});
  }
}

void Coordinator::fail(const std::string& cause) {
  events_.append({{"event", "job_failed"}, {"error", cause}});
  end_job(cause);
}

void Coordinator::finish_if_done() {
  if (!running_ || members_.empty()) return;
  bool any_done = false;
  for (const auto& id : members_) {
    const Worker* worker = find_worker(id);
    // A member that reported a failure while another finished (the last all-reduce completed on
    // one rank only) has nothing left to do either.
    if (worker->state == Worker::State::kMember) return;
    any_done = any_done || worker->state == Worker::State::kDone;
  }
  if (!any_done) return;
  running_ = false;
  outcome_.ended = true;
  progress_->finish();
  for (auto& [id, worker] : workers_) {
    if (worker->peer != nullptr) worker->peer->channel->send({{"finished", true}});
  }
  write_journal();
}

void Coordinator::take_back(const nlohmann::json& journal) {
  generation_ = journal.at("generation").get<std::int64_t>();
  next_worker_ = journal.at("next_worker").get<int>();
  members_ = journal.at("members").get<std::vector<std::string>>();
  for (const auto& id : members_) {
    // Each member has a heartbeat timeout to re-join; one that does not is taken for lost.
    auto worker = std::make_unique<Worker>();
    worker->id = id;
    worker->state = Worker::State::kMember;
    worker->last_heard = Clock::now();
    worker->admitted = worker->last_heard;
    workers_[id] = std::move(worker);
  }
  running_ = generation_ >= 0 && !members_.empty();
  cost_before_restart_usd_ = journal.value("cost_usd", 0.0);
  lr_scale_ = journal.value("lr_scale", 1.0);
  rollbacks_ = journal.value("rollbacks", 0);
  generation_formed_ = true;  // its members formed their group before the restart
  store_.set_generation_prefix(generation_prefix(generation_));
  // The split in force is not journaled: speeds are compared with it from the next generation.
  generation_speeds_.clear();
  last_balance_check_ = Clock::now();
  events_.append({{"event", "coordinator_restarted"},
                  {"gen", generation_},
                  {"members", members_},
                  {"coordinator", address()}});
  write_journal();
}

void Coordinator::write_journal() const {
  nlohmann::json journal = {
      {"front_door", address()},
      {"generation", generation_},
      {"members", members_},
      {"next_worker", next_worker_},
      {"cost_usd", cost_usd().value_or(0)},
      {"lr_scale", lr_scale_},
      {"rollbacks", rollbacks_},
      {"ended", outcome_.ended},
      {"paused", outcome_.ended && outcome_.result.stopped && outcome_.failure.empty()},
      {"pid", static_cast<long>(::getpid())},
      {"job", to_json(job_)}};
  if (dashboard_) journal["dashboard"] = dashboard_->address();
  write_file_atomically(records::JobFiles(job_.options.job_dir).coordinator(),
                        journal.dump(2) + "\n");
}

}  // namespace transient::train
