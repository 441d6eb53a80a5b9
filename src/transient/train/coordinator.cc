#include "transient/train/coordinator.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <future>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <system_error>

#include "transient/core/atomic_file.h"
#include "transient/core/duration.h"
#include "transient/core/error.h"
#include "transient/core/json_number.h"
#include "transient/core/text.h"
#include "transient/launch/batch_split.h"
#include "transient/records/job_files.h"
#include "transient/records/step_reader.h"
#include "transient/report/live_dashboard.h"
#include "transient/train/channel.h"
#include "transient/train/checkpoint_choice.h"
#include "transient/train/checkpoint_directory.h"
#include "transient/train/checkpoint_upload.h"
#include "transient/train/coordinator_journal.h"
#include "transient/train/event_log.h"
#include "transient/train/messages.h"
#include "transient/train/progress_line.h"
#include "transient/train/sharding.h"
#include "transient/train/step_records.h"
#include "transient/train/token_proof.h"

namespace transient::train {

namespace fs = std::filesystem;

namespace {

constexpr double kHelloTimeoutS = 5;            // a connection must say hello within this
constexpr long kMaxStrangers = 64;              // connections not yet admitted
constexpr std::size_t kStrangerMaxLine = 4096;  // bytes of a line before the token is proven
constexpr long kMaxStrangersPerHost = 8;        // ... of them from one host
constexpr long kLoggedDropsPerWindow = 20;      // dropped connections logged one by one ...
constexpr double kDropWindowS = 10;             // ... in each window of this length
// Of a checkpoint sent to a worker: a control message to that worker is queued behind the chunk
// being written (LineChannel::queue), 87 KiB of base64, not the whole checkpoint.
constexpr std::size_t kChunkBytes = 64 << 10;
// Unread bytes queued for a worker (a chunk, then the control messages behind it) beyond which it
// is cut off: far more than it is sent while it reads.
constexpr std::size_t kMaxUnsentBytes = 4 << 20;
constexpr std::size_t kMaxRowBytes = 512;            // of a steps.csv row
constexpr std::int64_t kMaxSamples = 1'000'000'000;  // of a step's part: far above any batch

double seconds_between(std::chrono::steady_clock::time_point from,
                       std::chrono::steady_clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

double rounded_ms(double seconds) { return std::round(seconds * 1e6) / 1e6; }

// Seconds since 1970 (UTC): a time another process, or a restarted coordinator, can compare.
double utc_now_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

struct Coordinator::Peer {
  std::unique_ptr<LineChannel> channel;
  Clock::time_point opened;
  std::string worker;     // empty until admitted
  nlohmann::json hello;   // the hello, kept until the worker proves the token
  std::string challenge;  // the nonce this coordinator sent it ("" before the hello)
  std::string bye;        // the reason the worker gave before closing
  bool dead = false;      // to be removed at the end of the round
  // A checkpoint the worker fetches, queued a chunk at a time as its socket takes them
  // (send_queued()), so that a worker reading slowly holds none of the coordinator's time.
  struct Outgoing {
    std::int64_t id = -1;
    CheckpointRecord record;
    std::shared_ptr<const std::vector<char>> bytes;  // shared by the peers fetching it (served_)
    std::size_t at = 0;                              // bytes queued so far
  };
  std::optional<Outgoing> outgoing;
};

// What the shell holds for a worker the machine knows: its connection and what it is sending.
struct Coordinator::Worker {
  std::string id;
  Peer* peer = nullptr;
  std::int64_t rows_written = 0;       // the last steps row (its sequence number) written
  std::int64_t rows_acknowledged = 0;  // ... and told to the worker
  // A worker that re-joined after a restart: the last row it kept for this coordinator (-1 when
  // none is awaited); worker_rows_restored is logged once it is written.
  std::int64_t rows_awaited = -1;
  int threads = 0;  // intra-op threads it said it trains with (0: not said)
  // A checkpoint it is sending (rank 0), written to a temporary file as it comes.
  std::unique_ptr<CheckpointUpload> incoming;
};

// An upload received whole and checked, its file being synced on a thread of its own.
struct Coordinator::Syncing {
  std::string worker;  // its sender, told once it is stored (if still here)
  std::unique_ptr<CheckpointUpload> upload;
  std::future<int> synced;  // the sync's result: 0, or its errno
};

namespace {

// What `bind(port)` makes, or, when `or_another` and `port` is taken (InputError), what
// `bind(0)` makes (any free port), said on stderr: "the job's `what` PORT is taken; `instead`".
template <typename Bind>
auto at_or_another(std::uint16_t port, bool or_another, const char* what, const char* instead,
                   const Bind& bind) {
  try {
    return bind(port);
  } catch (const InputError&) {
    if (!or_another || port == 0) throw;
    std::fprintf(stderr, "transient: the job's %s %u is taken; %s\n", what, unsigned{port},
                 instead);
    std::fflush(stderr);
    return bind(0);
  }
}

elastic::MembershipOptions membership_options(const JobConfig& job,
                                              const CoordinatorOptions& options,
                                              const GenerationConfig& start) {
  elastic::MembershipOptions membership;
  membership.initial_workers = options.initial_workers;
  membership.initial_wait_s = options.initial_wait_s;
  membership.heartbeat_timeout_s = job.options.heartbeat_timeout_s;
  membership.global_batch = job.options.global_batch;
  membership.start = {start.start_step, start.checkpoint, start.checkpoint_bytes,
                      start.checkpoint_crc32};
  membership.first_generation = options.before.next_generation;
  membership.first_worker = options.before.next_worker;
  // Workers on other hosts, any of which a cut of the coordinator's own link silences at once:
  // held a minute (or twelve heartbeat timeouts) before each is dropped. A local fleet's are not.
  if (options.invite_workers) {
    membership.silence_hold_s = link_silence_hold_s(job.options.heartbeat_timeout_s);
  }
  return membership;
}

}  // namespace

Coordinator::Coordinator(JobConfig job, std::string token, CoordinatorOptions options,
                         EventLog& events, GenerationConfig start)
    : job_(std::move(job)),
      token_(std::move(token)),
      options_(std::move(options)),
      events_(events),
      membership_(membership_options(job_, options_, start), *this),
      progress_(std::make_unique<ProgressLine>()),
      last_step_time_(Clock::now()) {
  last_step_ = start.start_step;
  since_checkpoint_s_ = start.since_checkpoint_s;
  lr_scale_ = start.lr_scale;
  rollbacks_ = options_.before.rollbacks;
  cost_before_usd_ = options_.before.cost_usd;
  listener_ = at_or_another(
      options_.port, options_.port_or_another, "port",
      "listening on another (workers join at the address below)", [&](std::uint16_t port) {
        // A job taken back: its workers re-join at this port only, which an outgoing connection
        // of this host may hold as its own end a while after the coordinator before this one died.
        if (options_.taking_back && port != 0) {
          return listen_once_free(options_.bind, port, "--bind/--port", kTakenBackPortWaitS);
        }
        return std::make_unique<Listener>(options_.bind, port, "--bind/--port");
      });
  if (options_.dashboard != "off") {
    const auto at = report::parse_dashboard_address(options_.dashboard, "--dashboard");
    dashboard_ = at_or_another(static_cast<std::uint16_t>(at.port), options_.dashboard_or_another,
                               "dashboard port", "serving it on another (its address below)",
                               [&](std::uint16_t port) {
                                 return std::make_unique<report::LiveDashboard>(
                                     job_.options.job_dir, token_, at.host, port, "--dashboard");
                               });
    std::fprintf(stderr, "transient: dashboard on http://%s/\n", dashboard_->address().c_str());
    std::fflush(stderr);
  }
  checkpoints_ = std::make_unique<CheckpointDirectory>(
      records::JobFiles(job_.options.job_dir).checkpoints(), job_.options.keep);
  if (!options_.taking_back) write_journal();
}

Coordinator::~Coordinator() {
  for (auto& [id, worker] : workers_) worker->incoming.reset();
  // A sync under way is waited for (its thread uses the file), and its upload is then removed.
  for (auto& syncing : syncing_) syncing->synced.wait();
}

std::string Coordinator::joining_address() const {
  // Listening on every address, the front door's own (0.0.0.0) is none a worker can reach: the
  // join lines of the start name this host's.
  const bool wildcard = options_.bind == "0.0.0.0" || options_.bind == "::";
  if (!wildcard) return address();
  return "HOST:" + std::to_string(listener_->port()) +
         " (HOST: an address of this host, as the join lines said)";
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
  if (seconds <= 0) return 0;
  // A job config without its sample count (a journal of an earlier version): full steps.
  if (job_.train_samples <= 0) {
    return static_cast<double>((last_step_ - first_step_) * job_.options.global_batch) / seconds;
  }
  // The samples the steps held, not steps times the global batch: an epoch's last step takes
  // only what is left of it (with 200 samples in batches of 128, steps of 128 and 72 were counted
  // as 128 each, 28% too many).
  const auto before = [this](std::int64_t step) {
    return samples_before_step(step, job_.train_samples, job_.options.global_batch,
                               job_.options.drop_last);
  };
  return static_cast<double>(before(last_step_) - before(first_step_)) / seconds;
}

bool Coordinator::poll(double max_wait_s) {
  if (outcome_.ended) return false;
  try {
    serve_connections(max_wait_s);
    adopt_synced_uploads(false);
    for (auto& [client, reply] : store_.take_completed()) {
      // Waits that keys set in this round completed.
      send_to(client, message::StoreReply{reply});
    }
    membership_.tick();
    end_after_divergence();
  } catch (const InputError& error) {
    // The job directory could not give a generation its start (no valid checkpoint left, a
    // manifest or step records that cannot be read: start_point()): the job fails with that
    // error and its records, where the coordinator ended with neither summary nor job_failed.
    fail(error.what());
  }
  apply_actions();
  // An ended job keeps what was uploaded before its end (a pause while rank 0's checkpoint was
  // syncing resumes from that checkpoint, as when the sync ran here).
  if (outcome_.ended && !syncing_.empty()) {
    try {
      adopt_synced_uploads(true);
    } catch (const InputError& error) {
      say(error.what());
    }
  }
  drop_dead_peers();
  account_cost(false);
  return !outcome_.ended;
}

bool Coordinator::tell_the_absent(double max_wait_s) {
  if (!outcome_.ended || absent_.empty()) return false;
  serve_connections(max_wait_s);
  drop_dead_peers();
  return !absent_.empty();
}

void Coordinator::drop_dead_peers() {
  peers_.erase(std::remove_if(peers_.begin(), peers_.end(), [](const auto& p) { return p->dead; }),
               peers_.end());
}

void Coordinator::serve_connections(double max_wait_s) {
  std::vector<pollfd> fds;
  fds.push_back({listener_->fd(), POLLIN, 0});
  for (const auto& peer : peers_) {
    const bool sending = peer->outgoing || peer->channel->queued_bytes() > 0;
    fds.push_back({peer->channel->fd(), static_cast<short>(POLLIN | (sending ? POLLOUT : 0)), 0});
  }
  ::poll(fds.data(), fds.size(), static_cast<int>(std::max(0.0, max_wait_s) * 1000));
  // What the workers sent until now is read below, however long handling it takes: silence is
  // judged up to here (Env::listened_at). A worker read before another's upload was fsynced
  // for 3 s was judged silent after it, its heartbeats of those 3 s unread.
  listened_at_ = Clock::now();
  if (fds[0].revents != 0) accept_connections();
  // Every peer is read, not only those poll flagged: a line may wait in a buffer.
  for (std::size_t i = 0; i < peers_.size(); ++i) {
    if (!peers_[i]->dead) read_peer(*peers_[i]);
  }
  for (auto& peer : peers_) {
    if (!peer->dead) send_queued(*peer);
  }
  const auto now = Clock::now();
  for (auto& peer : peers_) {
    if (!peer->dead && peer->worker.empty() &&
        seconds_between(peer->opened, now) > kHelloTimeoutS) {
      drop_garbage(*peer, "no hello within " + format_duration(kHelloTimeoutS));
    }
  }
}

void Coordinator::apply_actions() {
  namespace action = elastic::action;
  for (auto& next : membership_.take_actions()) {
    if (const auto* start = std::get_if<action::StartGeneration>(&next)) {
      start_generation(start->generation);
    } else if (const auto* signal = std::get_if<action::Signal>(&next)) {
      send_to(signal->worker, message::Signal{signal->what, signal->gen});
    } else if (const auto* drop = std::get_if<action::Drop>(&next)) {
      send_to(drop->worker, message::Left{drop->reason});
    } else if (const auto* left = std::get_if<action::WorkerLeft>(&next)) {
      worker_left(*left);
    } else if (const auto* recovered = std::get_if<action::Recovered>(&next)) {
      record_recovery(*recovered);
    } else if (std::holds_alternative<action::WriteJournal>(next)) {
      write_journal();
    } else if (const auto* end = std::get_if<action::EndJob>(&next)) {
      end_job(*end);
    } else if (const auto* waiting = std::get_if<action::Waiting>(&next)) {
      say(options_.invite_workers
              ? "no worker left; the job waits for one to join (transient worker --coordinator " +
                    joining_address() + " --token-file " +
                    shell_word(records::JobFiles(job_.options.job_dir).token()) + ")"
              : "no worker left");
      events_.append({{"event", "waiting"}, {"step", waiting->step}});
    } else if (const auto* record = std::get_if<action::Record>(&next)) {
      if (!record->say.empty()) say(record->say);
      events_.append(record->event);
    }
  }
}

void Coordinator::send_to(const std::string& id, const message::ToWorker& message) {
  if (Worker* worker = find_worker(id)) send_to(*worker, message);
}

void Coordinator::send_to(Worker& worker, const message::ToWorker& message) {
  // Queued, never waited for (serve_connections writes the rest as the socket takes it): a
  // member that stopped reading, frozen or cut off while it fetched a checkpoint, held the
  // coordinator's one thread 5 s a message, and the others were dropped as silent meanwhile.
  // One that leaves more than kMaxUnsentBytes unread is cut off, as a lost connection.
  if (worker.peer == nullptr) return;
  LineChannel& channel = *worker.peer->channel;
  if (!channel.queue(message::encode(message)) || channel.queued_bytes() > kMaxUnsentBytes) {
    channel.shutdown();
  }
}

// A reply to store request or upload `id` of `worker`.
void Coordinator::reply_to(Worker& worker, std::int64_t id, nlohmann::json fields) {
  fields["store_reply"] = id;
  send_to(worker, message::StoreReply{std::move(fields)});
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
    // bound the oldest of them (of the host, or of all) gives way to the newest, whatever it is
    // doing: a worker says hello at once and proves the token in a round trip, so strangers must
    // open kMaxStrangers connections within that round trip to keep it out, however many hosts
    // they come from. (Connections in the middle of their handshake were spared for a second:
    // strangers saying hello and never proving anything held every place, and kept workers out.)
    const std::string host = host_of(peer_name);
    const auto now = Clock::now();
    long from_host = 0;
    long strangers = 0;
    Peer* oldest_of_host = nullptr;
    Peer* oldest = nullptr;
    for (const auto& p : peers_) {
      if (!p->worker.empty() || p->dead) continue;
      ++strangers;
      if (oldest == nullptr || p->opened < oldest->opened) oldest = p.get();
      if (host_of(p->channel->peer()) == host) {
        ++from_host;
        if (oldest_of_host == nullptr || p->opened < oldest_of_host->opened) {
          oldest_of_host = p.get();
        }
      }
    }
    Peer* evicted = from_host >= kMaxStrangersPerHost ? oldest_of_host
                    : strangers >= kMaxStrangers      ? oldest
                                                      : nullptr;
    if (evicted != nullptr) {
      drop_garbage(*evicted, evicted->challenge.empty()
                                 ? "idle without a hello while newer connections wait"
                                 : "the challenge unanswered while newer connections wait");
    }
    peer->opened = now;
    // Before it has proven the token a connection may send a few KiB, not a megabyte per line.
    peer->channel->set_max_line(kStrangerMaxLine);
    peers_.push_back(std::move(peer));
  }
}

void Coordinator::drop_garbage(Peer& peer, const std::string& reason) {
  peer.dead = true;
  if (!log_stranger_in_full()) return;
  say("dropped a connection from " + peer.channel->peer() + ": " + reason);
  events_.append({{"event", "connection_dropped"},
                  {"peer", peer.channel->peer()},
                  {"bytes", peer.channel->bytes_received()},
                  {"reason", reason}});
}

bool Coordinator::log_stranger_in_full() {
  const auto now = Clock::now();
  if (seconds_between(drop_window_start_, now) >= kDropWindowS) {
    if (drops_unlogged_ > 0) {
      say(fmt::format("dropped or refused {} more connections in {:.0f} s (not logged one by one)",
                      drops_unlogged_, kDropWindowS));
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
    return false;
  }
  return true;
}

void Coordinator::read_peer(Peer& peer) {
  std::vector<std::string> lines;
  const std::size_t received_before = peer.channel->bytes_received();
  const auto status = peer.channel->read_available(lines);
  Worker* worker = peer.worker.empty() ? nullptr : find_worker(peer.worker);
  for (const auto& line : lines) {
    if (peer.dead) break;
    nlohmann::json message;
    try {
      message = message::parse_line(line);
    } catch (const nlohmann::json::exception&) {
      message = nullptr;
    } catch (const message::ProtocolError&) {
      message = nullptr;  // nested too deep: garbage
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
      membership_.heard(worker->id);
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
  // What a worker sent says it lives once it has been handled, and so do the bytes of a line still
  // on its way: the time the coordinator took over it (a manifest's or the journal's fsync,
  // seconds on a loaded disk) and a 700 kB checkpoint chunk its heartbeats wait behind are not its
  // silence. CI dropped rank 0 as silent, with a 2 s heartbeat timeout, as the upload of its final
  // checkpoint ended: heard when the upload's end arrived, judged after the 3 s of its fsync (an
  // upload's fsync now runs off this thread: adopt_synced_uploads).
  if (worker != nullptr && worker->peer == &peer && !peer.dead &&
      peer.channel->bytes_received() > received_before) {
    membership_.heard(worker->id);
  }
  if (status == LineChannel::Status::kTooLong) {
    drop_garbage(peer, peer.worker.empty() ? "a line longer than 4 KiB before the token was proven"
                                           : "a line longer than 1 MiB");
  }
  if (status != LineChannel::Status::kOpen || peer.dead) {
    peer.dead = true;
    if (worker != nullptr && worker->peer == &peer) {
      worker->peer = nullptr;
      membership_.worker_lost(worker->id, peer.bye.empty() ? "failed" : peer.bye);
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
    // Read as the messages' versions are (messages.cc): 1e300 or 3.0 is no version 3.
    if (!message.contains("version") ||
        whole_number_in(message.at("version")) != kProtocolVersion) {
      drop_garbage(peer, "a hello of protocol version " +
                             message.value("version", nlohmann::json(0)).dump().substr(0, 32) +
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
  // `proven`: the peer proved the token (a worker of the job); a stranger's refusals are logged
  // within the budget of dropped connections, so that a flood of them cannot fill the disk.
  auto refuse = [&](const std::string& reason, bool proven = true) {
    peer.channel->send({{"refused", reason}});
    peer.dead = true;
    if (!proven && !log_stranger_in_full()) return;
    say("refused a worker from " + peer.channel->peer() + ": " + reason);
    events_.append({{"event", "worker_refused"},
                    {"peer", peer.channel->peer()},
                    {"worker", id.substr(0, 64)},  // a stranger's words, kept short
                    {"reason", reason}});
  };
  if (message.contains("bye")) {
    // It found this coordinator's proof wrong: it holds another token. What it says of it is
    // kept short: it comes from a peer that has proved nothing.
    return refuse("wrong job token (" + message.value("bye", std::string()).substr(0, 200) + ")",
                  false);
  }
  const std::string proof = message.value("proof", "");
  const std::string expected =
      token_proof(token_, "worker", peer.challenge, hello.value("nonce", std::string()));
  if (!proofs_equal(proof, expected)) {
    return refuse("wrong job token", false);
  }
  peer.channel->set_max_line(LineChannel::kMaxLine);  // a proven worker may send large lines
  if (membership_.ended()) {
    absent_.erase(id);
    return refuse("the job has ended");
  }
  if (token_.empty()) return refuse("the job has no token");
  const bool rejoin = hello.contains("rejoin") && hello.at("rejoin").is_object() &&
                      hello.at("rejoin").contains("gen");
  if (rejoin) {
    // A member of the journaled generation re-connecting after a coordinator restart.
    const auto& state = hello.at("rejoin");
    elastic::RejoinState rejoining;
    rejoining.gen = integer_or(state, "gen", -2);
    rejoining.reported = state.value("reported", false);
    rejoining.step = integer_or(state, "step", -1);
    rejoining.attempted = integer_or(state, "attempted", rejoining.step);
    rejoining.leaving = state.value("leaving", false);
    rejoining.cause = state.value("cause", "failed");
    const std::string refusal = membership_.rejoin(id, rejoining);
    if (!refusal.empty()) return refuse(refusal);
    Worker* worker = find_worker(id);
    if (worker->peer != nullptr) worker->peer->dead = true;
    worker->peer = &peer;
    peer.worker = id;
    peer.channel->send({{"admitted", id}, {"job", to_json(job_)}});
    apply_actions();  // worker_rejoined is logged before its rows are restored
    const auto rows_through = state.find("rows_through");
    worker->rows_awaited =
        rows_through != state.end()
            ? std::max<std::int64_t>(0, whole_number_in(*rows_through).value_or(0))
            : 0;
    note_rows_restored(*worker);
    return;
  }
  std::string refusal;
  const long pid = integer_or(hello, "pid", 0);
  const auto admitted = membership_.admit(id, pid, refusal);
  if (!admitted) return refuse(refusal);
  id = *admitted;
  auto fresh = std::make_unique<Worker>();
  fresh->id = id;
  fresh->peer = &peer;
  peer.worker = id;
  workers_[id] = std::move(fresh);
  peer.channel->send({{"admitted", id}, {"job", to_json(job_)}});
  events_.append(
      {{"event", "worker_joined"}, {"worker", id}, {"peer", peer.channel->peer()}, {"pid", pid}});
  if (on_admitted) on_admitted(id, pid);
}

Coordinator::Worker* Coordinator::find_worker(const std::string& id) {
  auto it = workers_.find(id);
  return it == workers_.end() ? nullptr : it->second.get();
}

void Coordinator::handle_message(Worker& worker, const nlohmann::json& line) {
  message::ToCoordinator received;
  try {
    received = message::decode_to_coordinator(line);
  } catch (const message::ProtocolError& error) {
    // Refused by name, logged, and the connection goes on (one odd message is no failure) ...
    say("refused a message from worker " + worker.id + ": " + error.what());
    events_.append({{"event", "message_refused"}, {"worker", worker.id}, {"reason", error.what()}});
    if (line.is_object() && line.contains("report")) {
      // ... but for a report: the generation waits for it, and waited for ever (a result of NaN
      // figures was one). The worker is dropped, and the others go on without it.
      const std::string reason = std::string("its report could not be read: ") + error.what();
      send_to(worker, message::Left{reason});
      membership_.worker_lost(worker.id, "failed");
    }
    return;
  }
  if (const auto* heartbeat = std::get_if<message::Heartbeat>(&received)) {
    membership_.heartbeat(worker.id, heartbeat->speed_samples_per_s);
    if (worker.rows_written > worker.rows_acknowledged) {
      // The worker may forget the rows written here (they are on this server's disk).
      send_to(worker, message::RowsAck{worker.rows_written});
      worker.rows_acknowledged = worker.rows_written;
    }
  } else if (const auto* request = std::get_if<message::StoreRequest>(&received)) {
    handle_store(worker, request->request);
  } else if (const auto* rows = std::get_if<message::Rows>(&received)) {
    handle_rows(worker, *rows);
  } else if (const auto* part = std::get_if<message::CheckpointPart>(&received)) {
    handle_checkpoint(worker, *part);
  } else if (const auto* fetch = std::get_if<message::FetchCheckpoint>(&received)) {
    send_checkpoint(worker, *fetch);
  } else if (const auto* ready = std::get_if<message::Ready>(&received)) {
    // Loaded its data and model: it can be a member from the next generation on.
    if (ready->threads > 0) worker.threads = ready->threads;
    membership_.ready(worker.id, ready->address, ready->probe);
  } else if (const auto* progress = std::get_if<message::Progress>(&received)) {
    update_progress(progress->report);
  } else if (const auto* event = std::get_if<message::Event>(&received)) {
    const std::string name = event->event.value("event", "");
    // Only the events workers send: a member cannot write a `done`, a `recovery` or a
    // `checkpoint` of its own into the job's records, nor speak for another (`worker` is the
    // coordinator's to say).
    static const std::set<std::string> kWorkerEvents = {
        "epoch",         "checkpoint_snapshot", "checkpoint_skipped",
        "image_skipped", "step_resumed",        "fp16_overflow"};
    if (kWorkerEvents.count(name) == 0 || event->event.contains("worker")) {
      events_.append({{"event", "garbage"},
                      {"worker", worker.id},
                      {"line", "an event \"" + printable(name.substr(0, 40)) +
                                   "\" of a kind workers do not send"}});
      return;
    }
    if (name == "step_resumed") {  // before the first step's report, on the same connection
      resumed_generation_ = integer_or(event->event, "gen", -1);
      recomputed_samples_ =
          whole_number(event->event.value("recomputed_samples", nlohmann::json(0)),
                       "recomputed_samples", 0, kMaxSamples);
      resumed_batch_ =
          recomputed_samples_ + whole_number(event->event.value("kept_samples", nlohmann::json(0)),
                                             "kept_samples", 0, kMaxSamples);
    }
    events_.append(event->event);
  } else if (const auto* bye = std::get_if<message::Bye>(&received)) {
    if (worker.peer != nullptr) worker.peer->bye = bye->reason;
    if (bye->reason == "misconfigured") {
      // Its own data or model file failed it before it was ready: not a loss of the job's (no
      // revocation), and what failed is said here, where the job's owner looks.
      const std::string error = bye->error.empty() ? "an unknown error" : bye->error;
      say(fmt::format("worker {} could not start: {}", worker.id, error));
      events_.append({{"event", "worker_misconfigured"}, {"worker", worker.id}, {"error", error}});
      membership_.worker_lost(worker.id, "misconfigured");
    }
  } else if (const auto* report = std::get_if<message::Report>(&received)) {
    handle_report(worker, *report);
  }
}

void Coordinator::handle_report(Worker& worker, const message::Report& report) {
  using Kind = message::Report::Kind;
  if (report.kind == Kind::kFatal) {
    // An error of the job, not of this worker's peers: the next member would meet it too (a
    // full disk, a read-only checkpoints/, a checkpoint that does not fit): the job stops here.
    const std::string error = report.error.empty() ? "an unknown error" : report.error;
    events_.append({{"event", "worker_failed"}, {"worker", worker.id}, {"error", error}});
    membership_.end_job("worker " + worker.id + " failed: " + error);
    return;
  }
  if (report.kind == Kind::kFailed && !report.error.empty()) {
    // What each member's collective said (Gloo's words: a peer reset, a time-out), for the
    // records: the membership rules need only the step it holds.
    nlohmann::json failed = {{"event", "generation_failed"},
                             {"worker", worker.id},
                             {"gen", report.gen},
                             {"step", report.step},
                             {"error", report.error}};
    if (!report.unreachable.empty()) failed["unreachable"] = report.unreachable;
    events_.append(failed);
  }
  if (report.kind == Kind::kDiverged) {
    // Every member reports it (the loss is all-reduced): the first report decides.
    const std::int64_t step = std::max<std::int64_t>(0, report.step);
    const std::int64_t generation = membership_.generation();
    if (membership_.ended() ||
        (report.gen == generation && rolled_back_generation_ == report.gen)) {
      return;
    }
    if (divergence_failure_) {  // the job stops: another member's last words
      diverged_members_.insert(worker.id);
      return;
    }
    const std::string& loss = report.loss;
    if (job_.options.on_divergence == OnDivergence::kRollback && report.gen == generation &&
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
    divergence_failure_ =
        "the training loss was " + loss + " at step " + std::to_string(step) +
        (rollbacks_ > 0 ? " after " + counted(rollbacks_, "rollback") + " with a learning rate x" +
                              nlohmann::json(lr_scale_).dump()
                        : std::string());
    diverged_members_.insert(worker.id);
    return;
  }
  elastic::Report event;
  switch (report.kind) {
    case Kind::kGrouped:
      event.kind = elastic::Report::Kind::kGrouped;
      break;
    case Kind::kFormed:
      event.kind = elastic::Report::Kind::kFormed;
      break;
    case Kind::kStepped:
      event.kind = elastic::Report::Kind::kStepped;
      break;
    case Kind::kFailed:
      event.kind = elastic::Report::Kind::kFailed;
      break;
    case Kind::kBoundary:
      event.kind = elastic::Report::Kind::kBoundary;
      break;
    default:
      event.kind = elastic::Report::Kind::kDone;
      break;
  }
  event.gen = report.gen;
  event.step = report.step;
  event.attempted = report.attempted;
  event.leaving = report.leaving;
  event.reason = report.reason;
  event.cause = report.cause;
  event.unreachable = report.unreachable;
  if (report.kind == Kind::kDone && report.result && report.gen == membership_.generation() &&
      membership_.running_member(worker.id)) {
    // Every member's result is the same (the evaluation is all-reduced).
    outcome_.result = *report.result;
  }
  membership_.report(worker.id, event);
}

void Coordinator::roll_back(std::int64_t step, const std::string& loss, const std::string& by) {
  // The state before step `step` gave a non-finite loss, and the one before it may already be on
  // its way there: the checkpoints of steps >= step - 1 are set aside (renamed, kept for a look,
  // never resumed from), and the members, which report the generation failed holding no state,
  // start the next generation from the newest checkpoint left (or afresh) with the learning rate
  // halved from there on.
  rolled_back_generation_ = membership_.generation();
  set_aside_from_step_ = step - 1;
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
    membership_.end_job(std::string("cannot roll back after the divergence at step ") +
                        std::to_string(step) + ": " + error.what());
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
  say(fmt::format(
      "the training loss was {} at step {}: rolling back to the newest checkpoint before step {} "
      "with the learning rate x{:g} (rollback {} of {})",
      loss, step, step - 1, lr_scale_, rollbacks_, kMaxRollbacks));
  write_journal();
}

void Coordinator::handle_store(Worker& worker, const nlohmann::json& request) {
  // Only members of the running generation have anything to exchange; the store itself keeps
  // every key under that generation's prefix.
  const bool member = membership_.running_member(worker.id);
  std::optional<nlohmann::json> reply =
      member ? store_.handle(worker.id, request)
             : nlohmann::json{
                   {"store_reply", request.value("id", nlohmann::json(-1))},
                   {"error", "worker " + worker.id + " is not a member of the running generation"}};
  if (reply) send_to(worker, message::StoreReply{*reply});
}

void Coordinator::handle_rows(Worker& worker, const message::Rows& message) {
  // The worker's rows of steps.csv, kept in a part file of its own on this server (a worker's
  // disk vanishes with it) and merged into steps.csv as before.
  std::string text;
  for (const auto& line : message.rows) {
    // A row of a generation still to come would replace every other row of its step when the
    // records are merged (the latest generation's rows of a step are kept): refused with the
    // malformed ones.
    const auto read = line.size() <= kMaxRowBytes && line.find('\n') == std::string::npos
                          ? records::parse_steps(line, "a steps row", false)
                          : records::StepsRead{};
    const records::StepRow* row = read.rows.size() == 1 ? &read.rows[0] : nullptr;
    if (row == nullptr || row->step < 1 || row->step > job_.total_steps || row->gen < 0 ||
        row->gen > membership_.generation()) {
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
    membership_.end_job("cannot write the step records " + path + ": " + std::strerror(errno));
    return;
  }
  if (std::fclose(out) != 0) {
    membership_.end_job("cannot write the step records " + path + ": " + std::strerror(errno));
    return;
  }
  worker.rows_written = std::max(worker.rows_written, message.last);
  note_rows_restored(worker);
}

void Coordinator::note_rows_restored(Worker& worker) {
  if (worker.rows_awaited < 0 || worker.rows_written < worker.rows_awaited) return;
  events_.append(
      {{"event", "worker_rows_restored"}, {"worker", worker.id}, {"rows", worker.rows_written}});
  worker.rows_awaited = -1;
}

void Coordinator::handle_checkpoint(Worker& worker, const message::CheckpointPart& message) {
  // A checkpoint comes in pieces (begin, chunks of base64, end) on the worker's connection
  // (checkpoint_upload.h). A failure is told in the reply to the end (the worker waits for that
  // one); the chunks still on their way are dropped.
  const std::string& part = message.part;
  const std::int64_t id = message.id;
  if (part == "begin") {
    worker.incoming.reset();  // one that never ended goes, its file with it
    // A temporary file of its own: the worker's previous upload of the same step may be syncing.
    worker.incoming = std::make_unique<CheckpointUpload>(
        id, message.step, message.bytes,
        checkpoints_->incoming_path(message.step,
                                    worker.id + "-" + std::to_string(++uploads_begun_)),
        job_.total_steps);
    return;
  }
  if (!worker.incoming || worker.incoming->id() != id) {
    reply_to(worker, id, {{"error", "no checkpoint is being sent"}});
    return;
  }
  CheckpointUpload& upload = *worker.incoming;
  if (!upload.failure().empty()) {
    if (part == "end") {
      reply_to(worker, id, {{"error", upload.failure()}});
      worker.incoming.reset();
    }
    return;
  }
  if (part == "chunk") return upload.add_chunk(message.data);
  if (part != "end") return upload.fail("unknown checkpoint part \"" + part.substr(0, 16) + "\"");
  if (const std::string why = upload.check(message.crc32); !why.empty()) {
    reply_to(worker, id, {{"error", why}});
    worker.incoming.reset();
    return;
  }
  auto syncing = std::make_unique<Syncing>();
  syncing->worker = worker.id;
  syncing->upload = std::move(worker.incoming);
  const int file = syncing->upload->file();
  const auto sync = [sync = options_.sync_file, file] {
    if (sync) return sync(file);
    return ::fsync(file) == 0 ? 0 : errno;
  };
  try {
    syncing->synced = std::async(std::launch::async, sync);
  } catch (const std::system_error&) {  // no thread to be had: synced here, as before
    std::promise<int> synced;
    synced.set_value(sync());
    syncing->synced = synced.get_future();
  }
  syncing_.push_back(std::move(syncing));
}

void Coordinator::adopt_synced_uploads(bool wait) {
  // In the order they came: a worker's later checkpoint is never listed before its earlier one.
  while (!syncing_.empty()) {
    if (!wait &&
        syncing_.front()->synced.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
      return;
    }
    // Taken off the list first: a set-aside that fails (thrown) leaves no upload synced twice.
    const std::unique_ptr<Syncing> done = std::move(syncing_.front());
    syncing_.erase(syncing_.begin());
    const int sync_error = done->synced.get();
    CheckpointUpload& upload = *done->upload;
    const std::int64_t id = upload.id();
    Worker* worker = find_worker(done->worker);
    if (const std::string why = upload.adopt(sync_error, *checkpoints_); !why.empty()) {
      if (worker != nullptr) reply_to(*worker, id, {{"error", why}});
    } else {
      events_.append({{"event", "checkpoint"},
                      {"step", upload.record().step},
                      {"bytes", upload.record().bytes},
                      {"write_s", rounded_ms(upload.seconds())},
                      {"file", upload.record().file},
                      {"worker", done->worker}});
      if (worker != nullptr) reply_to(*worker, id, {{"file", upload.record().file}});
      set_aside_if_overtaken(upload.record());
    }
  }
}

void Coordinator::set_aside_if_overtaken(const CheckpointRecord& record) {
  if (rolled_back_generation_ == membership_.generation() && record.step >= set_aside_from_step_) {
    // An upload the rollback overtook (rank 0's writer was sending it when another member
    // reported the divergence): set aside as the rollback set aside its steps, so that the next
    // generation does not start from it. Stored first, so that its writer hears no failure.
    try {
      checkpoints_->set_aside_from(set_aside_from_step_, "diverged-");
      events_.append({{"event", "checkpoint_set_aside"},
                      {"step", record.step},
                      {"file", record.file},
                      {"reason", "written while the job rolled back to before step " +
                                     std::to_string(set_aside_from_step_)}});
    } catch (const std::exception& error) {
      // The job fails with it (poll()): it would start again from a state that diverged.
      throw InputError("cannot set aside the checkpoint of step " + std::to_string(record.step) +
                       ": " + error.what());
    }
  }
}

void Coordinator::send_checkpoint(Worker& worker, const message::FetchCheckpoint& request) {
  // A member that must start from a checkpoint gets it from here, in chunks as its socket takes
  // them (send_queued()), then a reply with its size and checksum (it checks them again).
  const std::int64_t id = request.id;
  const std::string& file = request.file;
  if (worker.peer == nullptr) return;
  Peer& peer = *worker.peer;
  if (peer.outgoing) {
    reply_to(worker, id, {{"error", "a checkpoint is being sent to this worker already"}});
    return;
  }
  try {
    for (const auto& record : checkpoints_->list()) {
      if (record.file != file) continue;
      // One copy in memory however many fetch it (a generation's members fetch it at once).
      for (auto it = served_.begin(); it != served_.end();) {
        it = it->second.expired() ? served_.erase(it) : std::next(it);
      }
      auto& cached = served_[record.file + ":" + std::to_string(record.crc32)];
      auto bytes = cached.lock();
      if (!bytes) {
        bytes = std::make_shared<const std::vector<char>>(checkpoints_->read_verified(record));
        cached = bytes;
      }
      peer.outgoing = Peer::Outgoing{id, record, std::move(bytes)};
      send_queued(peer);
      return;
    }
    reply_to(worker, id, {{"error", "the job has no checkpoint " + file.substr(0, 64)}});
  } catch (const InputError& error) {
    reply_to(worker, id, {{"error", error.what()}});
  }
}

void Coordinator::send_queued(Peer& peer) {
  LineChannel& channel = *peer.channel;
  // The next chunk once the socket has taken the last one: as fast as the worker reads, and
  // never more than a chunk waiting here.
  while (peer.outgoing && channel.queued_bytes() == 0) {
    auto& out = *peer.outgoing;
    nlohmann::json line;
    if (out.at < out.bytes->size()) {
      const std::size_t size = std::min(kChunkBytes, out.bytes->size() - out.at);
      line = message::encode(message::ChunkOf{
          out.id, encode_store_value(std::string(out.bytes->data() + out.at, size))});
      out.at += size;
    } else {
      nlohmann::json reply = {
          {"store_reply", out.id}, {"bytes", out.record.bytes}, {"crc32", out.record.crc32}};
      line = message::encode(message::StoreReply{std::move(reply)});
      peer.outgoing.reset();
    }
    if (!channel.queue(line)) {
      peer.outgoing.reset();  // the connection broke: its reading finds it closed
      return;
    }
  }
  if (channel.queued_bytes() > 0) channel.flush();
}

std::optional<double> Coordinator::cost_usd() const {
  if (job_.options.price_usd_per_h <= 0) return std::nullopt;
  const auto end = ended_at_.value_or(Clock::now());
  double seconds = 0;
  for (const auto& [id, worker] : membership_.workers()) {
    const auto until = std::min(worker.released.value_or(end), end);
    if (until > worker.admitted) seconds += seconds_between(worker.admitted, until);
  }
  return cost_before_usd_ + seconds * job_.options.price_usd_per_h / 3600;
}
void Coordinator::account_cost(bool now) {
  // A `cost` event every 10 s while the job runs, and one when it ends, with this run's market and
  // in cost_usd the job's whole bill so far (the earlier runs', whatever their market, and this
  // run's): status and /metrics take the last one's, the report draws the bill over time and
  // what each event adds as spent at its market.
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
  for (const auto& [id, worker] : membership_.workers()) billed += !worker.released;
  events_.append({{"event", "cost"},
                  {"market", job_.options.market},
                  {"instance_type", job_.options.instance_type},
                  {"price_usd_per_h", job_.options.price_usd_per_h},
                  {"servers", outcome_.ended ? 0 : billed},
                  {"cost_usd", *cost}});
  // The journal keeps the bill too: a coordinator killed between journal writes (which come
  // with membership changes) took back, or resumed, the bill of its last change.
  if (!outcome_.ended) write_journal();
}

void Coordinator::update_progress(const ProgressReport& report) {
  if (report.step == last_step_ && first_step_time_) return;
  membership_.progress(report.step);
  last_step_ = report.step;
  since_checkpoint_s_ = report.since_checkpoint_s;
  last_step_time_ = Clock::now();
  if (!first_step_time_) {
    first_step_time_ = last_step_time_;
    first_step_ = report.step;
  }
  // The time left at the pace in steps (the samples per second over the global batch fell short
  // of it where epochs end in smaller steps).
  const double seconds = seconds_between(*first_step_time_, last_step_time_);
  const double steps_per_s =
      seconds > 0 ? static_cast<double>(last_step_ - first_step_) / seconds : 0;
  const double eta =
      steps_per_s > 0 ? static_cast<double>(job_.total_steps - report.step) / steps_per_s : -1;
  progress_->update(report.step, job_.total_steps, report.epoch, report.loss, samples_per_s(), eta);
}
void Coordinator::worker_left(const elastic::action::WorkerLeft& left) {
  store_.drop_client(left.worker);
  if (Worker* worker = find_worker(left.worker)) {
    worker->incoming.reset();
    if (worker->peer != nullptr) {
      worker->peer->dead = true;
      worker->peer = nullptr;
    }
  }
  if (!left.announce) return;
  say(fmt::format("worker {} left ({}){}", left.worker, left.reason,
                  left.trained ? "" : " before it trained"));
  events_.append({{"event", "worker_left"},
                  {"worker", left.worker},
                  {"reason", left.reason},
                  {"gen", left.gen},
                  {"step", left.step}});
  if (on_left) on_left(left.worker, left.reason);
}
void Coordinator::process_exited(const std::string& id, const std::string& status) {
  const auto known = [&] {
    const elastic::WorkerInfo* info = membership_.find(id);
    return info != nullptr && info->state != elastic::WorkerState::kGone &&
           info->state != elastic::WorkerState::kDone;
  };
  if (!known()) {
    // Gone already (left, dropped): how its process ended is still the records' (a worker
    // dropped while frozen exits with kExitDropped once woken, having learnt it left).
    if (membership_.find(id) != nullptr) {
      events_.append({{"event", "worker_exited"}, {"worker", id}, {"status", status}});
    }
    return;
  }
  Worker* worker = find_worker(id);
  if (worker->peer != nullptr) read_peer(*worker->peer);  // what it said before it went
  if (known()) {
    const std::string reason =
        worker->peer != nullptr && !worker->peer->bye.empty() ? worker->peer->bye : "failed";
    events_.append({{"event", "worker_exited"}, {"worker", id}, {"status", status}});
    membership_.worker_lost(id, reason);
  }
  apply_actions();
}
void Coordinator::say(const std::string& line) {
  progress_->clear();
  print_line("transient: %s\n", line.c_str());
}
void Coordinator::request_stop() {
  progress_->finish();
  // A take-back none of whose members has come back has nobody to pause at a boundary: it
  // paused only once they were dropped as silent, a heartbeat timeout after Ctrl-C.
  bool reachable = false;
  for (const auto& id : membership_.members()) {
    const Worker* worker = find_worker(id);
    reachable = reachable || (worker != nullptr && worker->peer != nullptr && !worker->peer->dead);
  }
  membership_.request_stop(reachable || membership_.members().empty());
  apply_actions();
}
elastic::StartPoint Coordinator::start_point() {
  // No member holds state: the newest valid checkpoint, with the step records trimmed to it.
  // Uploads still syncing are listed first: the newest may be among them (a rank 0 lost as its
  // checkpoint was being synced), and one listed after the generation chose an older one would
  // have pruned the file its members fetch.
  adopt_synced_uploads(true);
  CheckpointDirectory directory(records::JobFiles(job_.options.job_dir).checkpoints(),
                                job_.options.keep);
  elastic::StartPoint start;
  if (auto chosen =
          choose_checkpoint(directory, job_.options, events_, options_.identify_checkpoint)) {
    start = {chosen->step, chosen->record.file, chosen->record.bytes, chosen->record.crc32};
    set_aside_rejected(directory, *chosen);
  }
  merge_step_records(job_.options.job_dir, start.step);
  return start;
}

void Coordinator::start_generation(const elastic::Generation& generation) {
  GenerationConfig config;
  config.generation = generation.number;
  config.members = generation.members;
  config.start_step = generation.start_step;
  if (!generation.from_survivors) {
    config.checkpoint = generation.from.checkpoint;
    config.checkpoint_bytes = generation.from.bytes;
    config.checkpoint_crc32 = generation.from.crc32;
    last_step_ = generation.start_step;
  }
  config.speeds = generation.speeds;
  config.probes = generation.probes;
  // The threads of the workers that train: one that left before any generation took it said
  // how it would have trained, not how the job did.
  for (const auto& id : generation.members) {
    if (const Worker* member = find_worker(id); member != nullptr && member->threads > 0) {
      worker_threads_.insert(member->threads);
    }
  }
  config.since_checkpoint_s = config.checkpoint.empty() ? since_checkpoint_s_ : 0;
  config.lr_scale = lr_scale_;
  store_.set_generation_prefix(generation_prefix(config.generation));
  for (const auto& id : config.members) {
    // A member done that said goodbye is one again (rank 0 was lost before it stored the final
    // state): its loss from now on is a failure, not the end of its part.
    if (Worker* worker = find_worker(id); worker != nullptr && worker->peer != nullptr) {
      worker->peer->bye.clear();
    }
    send_to(id, message::Generation{config});
  }
  events_.append({{"event", "generation"},
                  {"gen", config.generation},
                  {"members", config.members},
                  {"shares", launch::member_shares(job_.options.global_batch, config.speeds)},
                  {"start_step", config.start_step},
                  {"checkpoint", config.checkpoint},
                  {"coordinator", address()}});
  if (config.generation == options_.before.next_generation) {  // the run's first
    // Fewer than it waits for (--workers, --min-workers): it waited initial_wait_s for them, and
    // goes on with those there, which is said (it went on silently).
    const bool short_of = static_cast<int>(config.members.size()) < options_.initial_workers;
    const std::string with =
        counted(static_cast<long long>(config.members.size()), "worker") +
        (short_of ? fmt::format(" (of the {} it waits for, after {:g} s)", options_.initial_workers,
                                options_.initial_wait_s)
                  : "");
    std::fprintf(stderr,
                 "transient: training %s on %s with %s, %lld steps of %lld samples%s; "
                 "records in %s\n",
                 job_.options.model.c_str(), job_.options.dataset.c_str(), with.c_str(),
                 static_cast<long long>(job_.total_steps),
                 static_cast<long long>(job_.options.global_batch),
                 config.checkpoint.empty()
                     ? ""
                     : (", resuming after step " + std::to_string(config.start_step)).c_str(),
                 job_.options.job_dir.c_str());
  } else if (generation.from_survivors || !config.checkpoint.empty() || generation.after_loss) {
    // Who came in since the last generation this coordinator formed (a replacement, a worker
    // started by hand; nobody is said to join the first one after a restart).
    std::vector<std::string> joined;
    for (const auto& id : config.members) {
      if (!previous_members_.empty() &&
          std::find(previous_members_.begin(), previous_members_.end(), id) ==
              previous_members_.end()) {
        joined.push_back(id);
      }
    }
    say(fmt::format("generation {}: {} from step {}{}{}", config.generation,
                    counted(static_cast<long long>(config.members.size()), "worker"),
                    config.start_step,
                    config.checkpoint.empty() ? "" : " (from the latest checkpoint)",
                    joined.empty() ? "" : fmt::format(" ({} joined)", fmt::join(joined, ", "))));
  }
  previous_members_ = config.members;
}

void Coordinator::record_recovery(const elastic::action::Recovered& recovered) {
  nlohmann::json event{{"event", "recovery"},
                       {"gen", recovered.gen},
                       {"cause", recovered.cause},
                       {"lost", recovered.lost},
                       {"detect_s", recovered.detect_s},
                       {"reform_s", recovered.reform_s},
                       {"duration_s", recovered.duration_s},
                       {"waited_s", recovered.waited_s},
                       {"redone_steps", recovered.redone_steps}};
  // The step redone was finished from the survivors' gradients: only the lost samples again.
  const bool resumed = resumed_generation_ == recovered.gen && recovered.redone_steps == 1;
  std::string redone = counted(recovered.redone_steps, "step") + " redone";
  if (resumed) {
    event["recomputed_samples"] = recomputed_samples_;
    redone = "1 step redone: " + std::to_string(recomputed_samples_) + " of its " +
             std::to_string(resumed_batch_) + " samples";
  }
  events_.append(event);
  // A rollback loses no worker: "recovered from the loss of  (diverged)" named nobody.
  const std::string what = recovered.lost.empty()
                               ? "recovered (" + recovered.cause + ")"
                               : fmt::format("recovered from the loss of {} ({})",
                                             fmt::join(recovered.lost, ", "), recovered.cause);
  say(fmt::format(
      "{} in {:.0f} ms: generation {} with {} {} step {} ({})", what, 1000 * recovered.duration_s,
      recovered.gen, counted(static_cast<long long>(recovered.members), "worker"),
      recovered.at_end ? "ends the job at its last" : "goes on at", recovered.step, redone));
}

void Coordinator::end_job(const elastic::action::EndJob& end) {
  outcome_.ended = true;
  outcome_.failure = end.failure;
  if (!end.finished) outcome_.result.step = end.step;
  // A stop asked for once the last step was done (during the final evaluation or checkpoint)
  // finds the job finished: it was recorded as paused, and --resume started workers only to
  // evaluate it again.
  const bool completed =
      end.finished && !outcome_.result.stopped && outcome_.result.step >= job_.total_steps;
  if (end.stopped && !completed) outcome_.result.stopped = true;
  progress_->finish();
  for (auto& [id, worker] : workers_) {
    send_to(*worker, message::Finished{});
  }
  for (const auto& id : membership_.members()) {
    const Worker* worker = find_worker(id);
    if (worker == nullptr || worker->peer == nullptr || worker->peer->dead) absent_.insert(id);
  }
}
void Coordinator::end_after_divergence() {
  if (!divergence_failure_ || membership_.ended()) return;
  // Rank 0 says its last words once the good states its writer holds are stored, and each
  // member's step rows come before its words on its connection: ended at the first member's,
  // the job cut off rank 0's checkpoint on its way and the others' last rows. A member away or
  // gone is not waited for (one away is told the job ended when it comes back).
  for (const auto& id : membership_.members()) {
    if (diverged_members_.count(id) > 0) continue;
    const elastic::WorkerInfo* info = membership_.find(id);
    if (info == nullptr || info->state == elastic::WorkerState::kGone) continue;
    const Worker* worker = find_worker(id);
    if (worker != nullptr && worker->peer != nullptr && !worker->peer->dead) return;
  }
  membership_.end_job(*divergence_failure_);
}

void Coordinator::fail(const std::string& cause) {
  events_.append({{"event", "job_failed"}, {"error", cause}});
  membership_.end_job(cause);
  apply_actions();
}
void Coordinator::take_back(const CoordinatorJournal& journal) {
  // The membership as journaled; whether it ended is not taken back (a journal of a job that
  // ended is refused before a coordinator is made for it).
  elastic::MembershipJournal taken;
  taken.generation = journal.membership.generation;
  taken.first_generation = journal.membership.first_generation;
  taken.next_worker = journal.membership.next_worker;
  taken.members = journal.membership.members;
  taken.recovery = journal.membership.recovery;
  for (const auto& id : taken.members) {
    auto worker = std::make_unique<Worker>();
    worker->id = id;
    workers_[id] = std::move(worker);
  }
  cost_before_usd_ = journal.cost_usd;
  lr_scale_ = journal.lr_scale;
  rollbacks_ = journal.rollbacks;
  // The members' servers ran on while no coordinator was: billed from the journal's bill, where
  // they were billed from now (the minutes between the crash and the restart were free).
  const double unbilled_s =
      journal.cost_at_s > 0 ? std::max(0.0, utc_now_s() - journal.cost_at_s) : 0.0;
  membership_.take_back(taken, unbilled_s);
  // How far the job had come: its step records (the journal is not rewritten at each step). A
  // take-back that ended before a member came back recorded step 0, and its merge of the step
  // records dropped every row after it.
  last_step_ = last_recorded_step(job_.options.job_dir);
  membership_.progress(last_step_);
  store_.set_generation_prefix(generation_prefix(taken.generation));
  events_.append({{"event", "coordinator_restarted"},
                  {"gen", taken.generation},
                  {"members", taken.members},
                  {"coordinator", address()},
                  {"step", last_step_},
                  {"unbilled_s", unbilled_s}});
  apply_actions();
}
void Coordinator::write_journal() const {
  CoordinatorJournal journal;
  journal.job = job_;
  journal.front_door = address();
  journal.membership = membership_.journal();
  // --stop-at pauses too, which only the members' result says
  journal.paused = outcome_.ended && outcome_.result.stopped && outcome_.failure.empty();
  journal.cost_usd = cost_usd().value_or(0);
  journal.cost_at_s = utc_now_s();
  journal.lr_scale = lr_scale_;
  journal.rollbacks = rollbacks_;
  journal.pid = static_cast<long>(::getpid());
  journal.dashboard = dashboard_address();
  journal.standalone = options_.invite_workers;
  write_file_atomically(records::JobFiles(job_.options.job_dir).coordinator(),
                        to_json(journal).dump(2) + "\n");
}
}  // namespace transient::train
