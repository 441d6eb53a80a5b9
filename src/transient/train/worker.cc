// The `transient worker` process: joins a job through the coordinator's front door, then trains
// generation after generation: each one a fresh ProcessGroupGloo whose members first agree on the
// state (the most advanced member broadcasts it) and then train their shards of every step until
// the generation ends: by a failed collective (a member died or went silent: the interrupted step
// is redone), at a step boundary (a member leaves after a preemption notice, a worker joins), or
// with the job. The worker process is never restarted and never reloads from disk unless no
// member holds the state.
#include <signal.h>
#include <unistd.h>

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <set>
#include <thread>

#include "transient/core/atomic_file.h"
#include "transient/core/error.h"
#include "transient/train/channel.h"
#include "transient/train/checkpoint.h"
#include "transient/train/coordinator_store.h"
#include "transient/train/datasets.h"
#include "transient/train/gradient_buckets.h"
#include "transient/train/image_folder.h"
#include "transient/train/models.h"
#include "transient/train/optimizer.h"
#include "transient/train/protocol.h"
#include "transient/train/rendezvous_store.h"
#include "transient/train/sharding.h"
#include "transient/train/token_proof.h"
#include "transient/train/trainer.h"

namespace transient::train {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Set by SIGTERM (the cloud's preemption notice) and, for a worker started by hand, SIGINT.
std::atomic<int> g_leave_signal{0};
// When it first came, on the steady clock (clock_gettime is async-signal-safe); 0: never.
std::atomic<std::chrono::steady_clock::rep> g_leave_signal_at{0};
void on_leave_signal(int signal) {
  g_leave_signal = signal;
  std::chrono::steady_clock::rep unset = 0;
  g_leave_signal_at.compare_exchange_strong(
      unset, std::chrono::steady_clock::now().time_since_epoch().count());
}

// A leave signal came over a second ago.
bool signalled_long_ago() {
  const auto at = g_leave_signal_at.load();
  return at != 0 &&
         std::chrono::steady_clock::now() -
                 std::chrono::steady_clock::time_point(std::chrono::steady_clock::duration(at)) >
             std::chrono::seconds(1);
}

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

  Connection(const Endpoint& coordinator, std::string token, std::string worker_id)
      : coordinator_(coordinator), token_(std::move(token)), id_(std::move(worker_id)) {
    // Tries for 30 s, a quarter of a second at a time, so that a preemption notice (or Ctrl-C)
    // in the meantime ends the worker at once rather than after the 30 s.
    std::shared_ptr<LineChannel> channel;
    const auto give_up = Clock::now() + std::chrono::seconds(30);
    while (!channel && Clock::now() < give_up) {
      if (g_leave_signal != 0) throw LeftBeforeJoining{};
      channel = LineChannel::connect(coordinator_, 0.25);
    }
    if (!channel) {
      throw InputError("--coordinator: nothing answers at " + coordinator_.text() +
                       " (is the coordinator running?)");
    }
    if (const auto answer = hello(*channel, nullptr); answer != Hello::kAdmitted) {
      throw InputError("the coordinator at " + coordinator_.text() +
                       (answer == Hello::kRefused    ? " refused this worker: "
                        : answer == Hello::kUnproven ? " was refused by this worker: "
                                                     : " did not admit this worker: ") +
                       refusal_);
    }
    local_host_ = channel->local_host();
    channel_ = std::move(channel);
    thread_ = std::thread([this] { run(); });
  }

  ~Connection() {
    stopping_ = true;
    std::shared_ptr<LineChannel> channel;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      channel = channel_;
    }
    if (channel) channel->shutdown();
    thread_.join();
  }

  const std::string& id() const { return id_; }
  const JobConfig& job() const { return job_; }
  const Endpoint& coordinator() const { return coordinator_; }
  // The local address of this worker's route to the coordinator: what it advertises to its peers
  // unless told otherwise.
  const std::string& local_host() const { return local_host_; }

  void set_phase(Phase phase) { phase_ = phase; }
  // The generation whose group is being formed: an "abort" for it ends the store's waits.
  void set_forming(std::int64_t generation) { forming_ = generation; }

  // StoreTransport: one request of the rendezvous store, answered on this connection.
  nlohmann::json store_call(nlohmann::json request, std::chrono::milliseconds timeout) override {
    return call(std::move(request), timeout).first;
  }

  // Sends the checkpoint of `step` (`bytes`) to the coordinator, which keeps the job's
  // checkpoints on its stable server, and returns its record once stored there. Returns nullopt
  // if the coordinator is away (the next checkpoint goes instead); throws InputError with its
  // reason if it could not store it (a full disk).
  std::optional<CheckpointRecord> send_checkpoint(std::int64_t step,
                                                  const std::vector<char>& bytes) {
    std::int64_t id = 0;
    std::shared_ptr<LineChannel> channel;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      id = next_call_++;
      channel = channel_;
    }
    CheckpointRecord record;
    record.step = step;
    record.bytes = static_cast<std::int64_t>(bytes.size());
    record.crc32 = crc32_of(bytes.data(), bytes.size());
    constexpr std::size_t kChunk = 512 << 10;
    bool sent = channel &&
                channel->send(
                    {{"checkpoint", "begin"}, {"id", id}, {"step", step}, {"bytes", record.bytes}});
    for (std::size_t at = 0; sent && at < bytes.size(); at += kChunk) {
      const std::size_t size = std::min(kChunk, bytes.size() - at);
      sent = channel->send({{"checkpoint", "chunk"},
                            {"id", id},
                            {"data", encode_store_value(std::string(bytes.data() + at, size))}});
    }
    if (!sent) return std::nullopt;
    try {
      const auto reply = call({{"checkpoint", "end"}, {"crc32", record.crc32}},
                              std::chrono::minutes(10), id, channel)
                             .first;
      record.file = reply.at("file").get<std::string>();
      return record;
    } catch (const Refused& refused) {
      throw InputError(refused.what());
    } catch (const std::runtime_error&) {
      return std::nullopt;  // the coordinator went away meanwhile
    }
  }

  // The bytes of the job's checkpoint `record`, from the coordinator, checked against the size
  // and checksum the generation named. Throws InputError if they cannot be had.
  std::vector<char> fetch_checkpoint(const CheckpointRecord& record) {
    try {
      auto [reply, data] = call({{"fetch_checkpoint", record.file}}, std::chrono::minutes(10));
      if (static_cast<std::int64_t>(data.size()) != record.bytes ||
          crc32_of(data.data(), data.size()) != record.crc32) {
        throw InputError(record.file, 0,
                         "the checkpoint came from the coordinator damaged (size or CRC-32 "
                         "differs from the manifest's)");
      }
      return std::vector<char>(data.begin(), data.end());
    } catch (const std::runtime_error& error) {
      throw InputError(record.file, 0, std::string("cannot fetch the checkpoint: ") + error.what());
    }
  }

  // A row of steps.csv for the coordinator's records. Each row is kept until the coordinator
  // says it has written it (it acknowledges on heartbeats), and rows not acknowledged are sent
  // again after a re-connection: none is lost to a coordinator that dies or restarts (a row
  // written twice is merged away).
  void record_row(std::string row) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (unacked_rows_.size() >= kMaxUnackedRows) unacked_rows_.pop_front();
    unacked_rows_.emplace_back(next_row_++, std::move(row));
    send_rows_locked();
  }

 private:
  static constexpr std::size_t kMaxUnackedRows = 1000000;

  // Sends the rows not sent on the current connection yet.
  void send_rows_locked() {
    if (!channel_ || unacked_rows_.empty() || unacked_rows_.back().first <= rows_sent_through_) {
      return;
    }
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& [seq, text] : unacked_rows_) {
      if (seq > rows_sent_through_) rows.push_back(text);
    }
    const std::int64_t last = unacked_rows_.back().first;
    if (channel_->send({{"rows", rows}, {"last", last}})) rows_sent_through_ = last;
  }

  // A request the coordinator answered with an error.
  struct Refused : std::runtime_error {
    using std::runtime_error::runtime_error;
  };

  // Sends `request` with a new id (or `id`, on `on_channel`) and waits for the reply to it: the
  // reply and the bytes of the chunks that came before it.
  std::pair<nlohmann::json, std::string> call(nlohmann::json request,
                                              std::chrono::milliseconds timeout,
                                              std::int64_t id = -1,
                                              std::shared_ptr<LineChannel> on_channel = nullptr) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (id < 0) id = next_call_++;
    const std::int64_t epoch = channel_epoch_;
    request["id"] = id;
    std::shared_ptr<LineChannel> channel = on_channel ? on_channel : channel_;
    calls_[id];
    lock.unlock();
    const bool sent = channel && channel->send(request);
    lock.lock();
    const auto deadline = Clock::now() + timeout;
    // Only the rendezvous gives way to a leave signal or an abort: a checkpoint on its way to
    // or from the coordinator is finished.
    const bool rendezvous = request.contains("store");
    std::string failure;
    for (;;) {
      auto it = calls_.find(id);
      if (it->second.reply) break;
      if (!sent || channel_epoch_ != epoch) {
        failure = "the connection to the coordinator at " + coordinator_.text() + " was lost";
      } else if (!left_.empty()) {
        failure = left_;
      } else if (rendezvous && signalled_long_ago()) {
        // A group that forms at all forms within the second (and the state moves to the
        // others); one that has not is stuck on a peer that does not answer.
        failure = "interrupted by a preemption notice";
      } else if (rendezvous && abort_gen_ >= 0 && abort_gen_ == forming_) {
        failure = "the coordinator ended generation " + std::to_string(forming_.load());
      } else if (Clock::now() >= deadline) {
        failure = "no answer within " +
                  std::to_string(std::chrono::duration<double>(timeout).count()) + " s to " +
                  request.value("store", std::string("a request")) + " of " +
                  request.value("keys", nlohmann::json::array()).dump() +
                  " (a member of the generation did not publish its address)";
      }
      if (!failure.empty()) {
        calls_.erase(it);
        throw std::runtime_error(failure);
      }
      changed_.wait_for(lock, std::chrono::milliseconds(100));
    }
    auto node = calls_.extract(id);
    const nlohmann::json reply = std::move(*node.mapped().reply);
    if (reply.contains("error")) {
      const std::string what =
          request.contains("store")
              ? "the coordinator refused " + request.value("store", std::string()) + ": "
              : std::string();
      throw Refused(what + reply.value("error", std::string()));
    }
    return {reply, std::move(node.mapped().data)};
  }

 public:
  // Sends `message` if connected; while the coordinator is away messages are dropped.
  void send(const nlohmann::json& message) {
    std::shared_ptr<LineChannel> channel;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      channel = channel_;
    }
    if (channel) channel->send(message);
  }

  // What to tell a restarted coordinator about this worker's part in the current generation.
  void set_state(nlohmann::json state) {
    std::lock_guard<std::mutex> lock(mutex_);
    state_ = std::move(state);
  }

  void set_speed(double samples_per_s) { speed_ = samples_per_s; }

  // Data and model are loaded: the worker can be a member from the next generation on. `address`
  // is the one it advertises to its peers (for messages about peers that cannot be reached).
  void mark_ready(const std::string& address, const std::string& probe) {
    ready_address_ = address;
    ready_probe_ = probe;
    ready_ = true;
    send({{"ready", true}, {"address", address}, {"probe", probe}});
  }

  // Opens the reachability probe (protocol.h) on `address` and returns its HOST:PORT; the
  // heartbeat thread accepts and closes connections to it. Throws InputError naming `what` if
  // the address cannot be listened on (not an address of this host).
  std::string open_probe(const std::string& address, const std::string& what) {
    probe_listener_ = std::make_unique<Listener>(address, 0, what);
    probe_ = probe_listener_.get();
    return Endpoint{address, probe_listener_->port()}.text();
  }

  // Says goodbye: the coordinator will close the connection, which is then not re-opened.
  void leave(const std::string& reason) {
    leaving_ = true;
    send({{"bye", reason}});
  }

  // The next generation after `after` that this worker is told about, or nullopt once it has
  // been dropped or the job has ended (`why` says which).
  std::optional<GenerationConfig> next_generation(std::int64_t after, std::string& why) {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      while (!generations_.empty() && generations_.front().generation <= after) {
        generations_.pop_front();
      }
      if (!generations_.empty()) {
        auto config = generations_.front();
        generations_.pop_front();
        return config;
      }
      if (!left_.empty()) {
        why = left_;
        return std::nullopt;
      }
      if (signalled_long_ago()) {
        // No generation came within a second of the signal (one that comes sooner is joined,
        // so that a member holding the state hands it on before it leaves at the boundary).
        why = "signalled";
        return std::nullopt;
      }
      changed_.wait_for(lock, std::chrono::milliseconds(200));
    }
  }

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
  enum class Hello { kAdmitted, kRefused, kUnproven, kNoAnswer };

  // Reads one line from a peer that has not proven itself, a quarter of a second at a time so
  // that a preemption notice ends a first connection at once; nullopt after 30 s or a close.
  std::optional<nlohmann::json> read_reply(LineChannel& channel, bool first) {
    std::optional<std::string> line;
    for (int i = 0; i < 120 && !line && !channel.closed(); ++i) {
      if (first && g_leave_signal != 0) throw LeftBeforeJoining{};
      line = channel.read_line(0.25);
    }
    if (!line) {
      refusal_ = "no answer";
      return std::nullopt;
    }
    try {
      auto reply = nlohmann::json::parse(*line);
      if (reply.is_object()) return reply;
    } catch (const nlohmann::json::exception&) {
    }
    refusal_ = "it answered something else than a coordinator's reply";
    return std::nullopt;
  }

  // Says hello (with `rejoin` after a reconnection), checks the coordinator's proof of the token
  // (token_proof.h), proves it in turn, and reads the admission. The token itself is never sent.
  // The id and the job are taken from the first admission only: the training thread reads them.
  Hello hello(LineChannel& channel, const nlohmann::json* rejoin) {
    const std::string nonce = new_nonce();
    nlohmann::json message = {{"hello", "transient-worker"},
                              {"version", kProtocolVersion},
                              {"worker", id_},
                              {"pid", static_cast<long>(::getpid())},
                              {"nonce", nonce}};
    if (rejoin != nullptr) message["rejoin"] = *rejoin;
    if (!channel.send(message)) {
      refusal_ = "the connection broke";
      return Hello::kNoAnswer;
    }
    const auto challenge = read_reply(channel, rejoin == nullptr);
    if (!challenge) return Hello::kNoAnswer;
    const std::string theirs = challenge->value("challenge", "");
    if (!is_nonce(theirs) || !proofs_equal(challenge->value("proof", ""),
                                           token_proof(token_, "coordinator", nonce, theirs))) {
      // Either this worker holds another job's token, or what answers is not the job's
      // coordinator (a stranger that bound its port): nothing it says is believed.
      refusal_ =
          "it did not prove that it holds this worker's job token (a wrong token, or not the "
          "job's coordinator)";
      channel.send({{"bye", "the coordinator's proof does not match this worker's token"}});
      return Hello::kUnproven;
    }
    if (!channel.send({{"proof", token_proof(token_, "worker", theirs, nonce)}})) {
      refusal_ = "the connection broke";
      return Hello::kNoAnswer;
    }
    const auto reply = read_reply(channel, rejoin == nullptr);
    if (!reply) return Hello::kNoAnswer;
    if (reply->contains("refused")) {
      refusal_ = reply->value("refused", "no reason given");
      return Hello::kRefused;
    }
    if (!reply->contains("admitted")) {
      refusal_ = "it answered something else than a coordinator's reply";
      return Hello::kNoAnswer;
    }
    // A reply of the wrong shape is no admission, never an exception: on the heartbeat thread
    // one would end the process.
    try {
      if (rejoin == nullptr) {
        const auto id = reply->at("admitted").get<std::string>();
        job_ = job_config_from_json(reply->at("job"));
        id_ = id;
      }
    } catch (const std::exception& error) {
      refusal_ = std::string("it sent a malformed admission (") + error.what() + ")";
      return Hello::kNoAnswer;
    }
    return Hello::kAdmitted;
  }

  void handle(const nlohmann::json& message) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (message.contains("store_reply")) {
      const auto& id = message.at("store_reply");
      if (id.is_number_integer()) {
        if (auto it = calls_.find(id.get<std::int64_t>()); it != calls_.end()) {
          it->second.reply = message;
        }
      }
    } else if (message.contains("rows_ack")) {
      const auto& ack = message.at("rows_ack");
      if (ack.is_number_integer()) {
        while (!unacked_rows_.empty() && unacked_rows_.front().first <= ack.get<std::int64_t>()) {
          unacked_rows_.pop_front();
        }
      }
    } else if (message.contains("chunk_of")) {
      const auto& id = message.at("chunk_of");
      if (id.is_number_integer()) {
        if (auto it = calls_.find(id.get<std::int64_t>()); it != calls_.end()) {
          try {
            it->second.data += decode_store_value(message.value("data", std::string()));
          } catch (const std::invalid_argument&) {
            it->second.reply = nlohmann::json{{"error", "a chunk that is not base64"}};
          }
        }
      }
    } else if (message.contains("generation")) {
      generations_.push_back(generation_config_from_json(message.at("generation")));
    } else if (message.contains("signal")) {
      const auto gen = message.value("gen", std::int64_t{-1});
      if (message.at("signal") == "stop") {
        stop_gen_ = gen;
      } else if (message.at("signal") == "abort") {
        abort_gen_ = gen;
      } else {
        change_gen_ = gen;
      }
    } else if (message.contains("left")) {
      left_ = "the coordinator dropped this worker (" + message.value("left", "") + ")";
    } else if (message.contains("finished")) {
      left_ = "the job has ended";
    }
    changed_.notify_all();
  }

  void run() {
    const double interval = std::max(0.05, job_.options.heartbeat_timeout_s / 5);
    auto last_beat = Clock::now() - std::chrono::hours(1);
    std::int64_t beats = 0;
    while (!stopping_) {
      if (phase_ == Phase::kForming && signalled_long_ago()) {
        // A preemption notice while the group forms (peers that do not answer hold Gloo's
        // connect for up to its timeout): the worker holds nothing its peers do not, so it says
        // goodbye and goes now rather than when Gloo gives up.
        std::fprintf(stderr, "transient worker %s: left the job while its group formed (%s)\n",
                     id_.c_str(), g_leave_signal == SIGINT ? "stopped" : "preempted");
        channel_->send({{"bye", g_leave_signal == SIGINT ? "stopped" : "preempted"}});
        std::_Exit(0);
      }
      if (Listener* probe = probe_.load(); probe != nullptr) {
        std::string prober;
        for (int fd; (fd = probe->accept(prober)) >= 0;) ::close(fd);
      }
      if (seconds_since(last_beat) >= interval) {
        channel_->send({{"hb", ++beats}, {"speed", speed_.load()}});
        last_beat = Clock::now();
      }
      const auto line = channel_->read_line(interval / 2);
      if (line) {
        try {
          const auto message = nlohmann::json::parse(*line);
          if (message.is_object()) handle(message);
        } catch (const nlohmann::json::exception&) {
          std::fprintf(stderr, "transient worker: ignored a line the coordinator sent\n");
        }
        continue;
      }
      if (!channel_->closed() || stopping_) continue;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        ++channel_epoch_;  // store requests in flight on it fail now
        changed_.notify_all();
        if (leaving_ && left_.empty()) left_ = "the job has ended";  // after its goodbye
        if (!left_.empty()) {
          changed_.notify_all();
          return;
        }
      }
      reconnect();
    }
  }

  // The coordinator went away: try again every 250 ms until it is back (training goes on).
  void reconnect() {
    std::fprintf(stderr,
                 "transient worker %s: lost the coordinator; training goes on, "
                 "re-connecting\n",
                 id_.c_str());
    while (!stopping_) {
      std::shared_ptr<LineChannel> channel = LineChannel::connect(coordinator_, 0.25);
      if (channel) {
        nlohmann::json state;
        {
          std::lock_guard<std::mutex> lock(mutex_);
          state = state_;
        }
        const auto answer = hello(*channel, &state);
        if (answer == Hello::kAdmitted) {
          // Installed only once admitted, so that no report goes out before the hello.
          std::lock_guard<std::mutex> lock(mutex_);
          channel_ = std::move(channel);
          // One that was waiting for its first generation says again that it is ready.
          if (state_.is_null() && ready_) {
            channel_->send({{"ready", true}, {"address", ready_address_}, {"probe", ready_probe_}});
          }
          rows_sent_through_ = 0;  // whatever was not acknowledged goes again
          send_rows_locked();
          std::fprintf(stderr, "transient worker %s: re-joined the coordinator\n", id_.c_str());
          return;
        }
        if (answer == Hello::kRefused) {
          std::lock_guard<std::mutex> lock(mutex_);
          left_ = "the restarted coordinator refused this worker: " + refusal_;
          changed_.notify_all();
          return;
        }
        // No answer: a dying coordinator's backlog, or a connection to ourselves; try again.
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
  }
  Endpoint coordinator_;
  std::string token_;
  std::string id_;
  std::shared_ptr<LineChannel> channel_;  // replaced (under mutex_) on a reconnection
  JobConfig job_;
  std::string local_host_;
  std::string ready_address_;
  std::string ready_probe_;
  std::unique_ptr<Listener> probe_listener_;  // outlives thread_ (declared before it)
  std::atomic<Listener*> probe_{nullptr};
  std::string refusal_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<GenerationConfig> generations_;  // GUARDED_BY(mutex_)
  std::string left_;                          // GUARDED_BY(mutex_)
  nlohmann::json state_;                      // GUARDED_BY(mutex_)
  // Requests in flight by id: their replies once they came, and the chunks before them.
  struct Call {
    std::optional<nlohmann::json> reply;
    std::string data;
  };
  std::map<std::int64_t, Call> calls_;  // GUARDED_BY(mutex_)
  // Rows of steps.csv by sequence number, until the coordinator acknowledges them.
  std::deque<std::pair<std::int64_t, std::string>> unacked_rows_;  // GUARDED_BY(mutex_)
  std::int64_t next_row_ = 1;                                      // GUARDED_BY(mutex_)
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

// This worker's rows of steps.csv (step_records.h), sent to the coordinator, which keeps them
// with the job's other records on its server.
std::string step_row(std::int64_t step, int rank, std::int64_t batch, double data_s,
                     double compute_s, double allreduce_s, double optimizer_s, double loss,
                     std::int64_t generation, std::int64_t sample_begin) {
  char line[256];
  std::snprintf(line, sizeof(line), "%lld,%d,%lld,%.6f,%.6f,%.6f,%.6f,%.6f,%lld,%lld",
                static_cast<long long>(step), rank, static_cast<long long>(batch), data_s,
                compute_s, allreduce_s, optimizer_s, loss, static_cast<long long>(generation),
                static_cast<long long>(sample_begin));
  return line;
}

// Tensors of one dtype as one flat tensor, and back into their shapes.
torch::Tensor flatten(const std::vector<torch::Tensor>& tensors) {
  std::vector<torch::Tensor> flat;
  for (const auto& tensor : tensors) flat.push_back(tensor.reshape(-1));
  return torch::cat(flat);
}

std::vector<torch::Tensor> unflatten(const torch::Tensor& flat,
                                     const std::vector<torch::Tensor>& like) {
  std::vector<torch::Tensor> parts;
  std::int64_t offset = 0;
  for (const auto& tensor : like) {
    parts.push_back(flat.narrow(0, offset, tensor.numel()).view(tensor.sizes()));
    offset += tensor.numel();
  }
  return parts;
}

OptimizerSettings optimizer_settings(const TrainOptions& options) {
  OptimizerSettings settings;
  settings.name = options.optimizer;
  settings.lr = options.lr;
  settings.momentum = options.momentum;
  settings.nesterov = options.nesterov;
  settings.weight_decay = options.weight_decay;
  settings.beta1 = options.beta1;
  settings.beta2 = options.beta2;
  settings.eps = options.eps;
  return settings;
}

// How a generation ended for this worker.
enum class Ending { kFinished, kStopped, kBoundary, kDiverged };

class Worker {
 public:
  // The worker's Gloo device listens on `interface` if given, else on the address `advertise`.
  // It reads the data set from `data_dir` ("" = the job's path).
  Worker(Connection& connection, int threads, std::string advertise, std::string interface,
         const std::string& data_dir)
      : connection_(connection),
        advertise_(std::move(advertise)),
        interface_(std::move(interface)),
        job_(connection.job()),
        options_(job_.options) {
    if (!data_dir.empty()) job_.options.data_dir = data_dir;
    torch::set_num_threads(std::max(1, threads > 0 ? threads : options_.threads));
    torch::manual_seed(options_.seed);
    data_ = load_dataset(options_.dataset, options_.data_dir,
                         DataOptions{options_.image_size, options_.val_data});
    if (data_.from_files()) {
      data_.transform.seed = options_.seed;
      data_.transform.augment = parse_augment(options_.augment).value_or(Augment::kCrop);
      loader_ = std::make_unique<ImageLoader>(data_.transform, options_.loader_threads);
    } else {
      data_.train.images = data_.train.images.narrow(0, 0, job_.train_samples);
      data_.train.labels = data_.train.labels.narrow(0, 0, job_.train_samples);
    }
    if (options_.test_subset > 0 && options_.test_subset < data_.test_size()) {
      test_samples_ = options_.test_subset;
    } else {
      test_samples_ = data_.test_size();
    }
    if (!data_.from_files() && test_samples_ < data_.test.labels.size(0)) {
      data_.test.images = data_.test.images.narrow(0, 0, test_samples_);
      data_.test.labels = data_.test.labels.narrow(0, 0, test_samples_);
    }
    if (!options_.model_sha256.empty()) {
      const std::string mine = file_sha256(options_.model);
      if (mine != options_.model_sha256) {
        throw InputError(options_.model, 0,
                         "--model: this worker's copy differs from the coordinator's (SHA-256 " +
                             mine + " here, " + options_.model_sha256 +
                             " there); every worker needs the same model file at this path");
      }
    }
    model_ = make_model(options_.model, data_.shape);
    model_->train();
    for (const auto& item : model_->named_parameters()) {
      parameter_names_.push_back(item.key());
      parameters_.push_back(item.value());
    }
    optimizer_ = std::make_unique<Optimizer>(optimizer_settings(options_), parameters_);
    buckets_ = std::make_unique<GradientBuckets>(
        parameters_, options_.bucket_bytes,
        parse_compression(options_.compress).value_or(Compression::kNone));
  }

  // Trains until the job ends or this worker leaves. Returns the process exit code.
  int run() {
    std::int64_t last_generation = -1;
    for (;;) {
      std::string why;
      connection_.set_phase(Connection::Phase::kWaiting);
      const auto config = connection_.next_generation(last_generation, why);
      if (!config) {
        finish_writer();
        if (why == "the job has ended") return 0;
        if (why == "signalled") {
          // A preemption notice (or Ctrl-C) between generations: nothing to finish.
          const std::string reason = g_leave_signal == SIGINT ? "stopped" : "preempted";
          connection_.leave(reason);
          std::fprintf(stderr, "transient worker %s: left the job between generations (%s)\n",
                       connection_.id().c_str(), reason.c_str());
          return 0;
        }
        std::fprintf(stderr, "transient worker %s: %s; exiting\n", connection_.id().c_str(),
                     why.c_str());
        return kExitDropped;
      }
      last_generation = config->generation;
      const auto member =
          std::find(config->members.begin(), config->members.end(), connection_.id());
      if (member == config->members.end()) continue;  // not ours; the next one may be
      config_ = *config;
      rank_ = static_cast<int>(member - config->members.begin());
      world_size_ = static_cast<int>(config->members.size());
      connection_.set_state({{"gen", config_.generation}, {"reported", false}});
      std::int64_t attempted = step_;
      bool formed = false;
      try {
        connection_.set_phase(Connection::Phase::kForming);
        form_group();
        formed = true;
        // The group exists (its members reached each other); agreeing on the state may take a
        // while yet (a broadcast, a checkpoint fetched), and a pause now waits for its boundary.
        if (rank_ == 0) connection_.send({{"report", "grouped"}, {"gen", config_.generation}});
        connection_.set_phase(Connection::Phase::kAgreeing);
        agree_on_state();
        connection_.set_phase(Connection::Phase::kTraining);
        attempted = step_;
        if (rank_ == 0) {
          connection_.send({{"report", "formed"}, {"gen", config_.generation}, {"step", step_}});
        }
        const Ending ending = train_generation(attempted);
        if (ending == Ending::kDiverged) {
          finish_writer();  // the good states handed to the writer are kept
          const std::string loss = std::isnan(diverged_loss_) ? "nan"
                                   : diverged_loss_ > 0       ? "inf"
                                                              : "-inf";
          connection_.send({{"report", "diverged"},
                            {"gen", config_.generation},
                            {"step", step_ + 1},
                            {"loss", loss}});
          if (options_.on_divergence == "rollback") {
            // The coordinator rolls the job back to a checkpoint (or ends it after the last
            // rollback): this worker's state is not one to go on from.
            group_.reset();
            holds_state_ = false;
            rolled_back_ = true;
            report("failed", -1, step_ + 1, false, "diverged");
            continue;
          }
          connection_.leave("stopped");
          group_.reset();
          std::string ignored;
          connection_.next_generation(config_.generation, ignored);
          return kExitDiverged;
        }
        if (ending == Ending::kBoundary) {
          const bool leaving = g_leave_signal != 0;
          const std::string reason = g_leave_signal == SIGINT ? "stopped" : "preempted";
          if (leaving && everyone_leaves_ && writer_) {
            // The last workers leave: the state goes to disk before they exit.
            writer_->submit(snapshot());
          }
          finish_writer();
          report("boundary", step_, step_, leaving, reason);
          if (leaving) {
            connection_.leave(reason);
            std::fprintf(stderr, "transient worker %s: left the job after step %lld (%s)\n",
                         connection_.id().c_str(), static_cast<long long>(step_), reason.c_str());
            return 0;
          }
          group_.reset();
          continue;
        }
        finish_writer();
        connection_.send(
            {{"report", "done"}, {"gen", config_.generation}, {"result", to_json(result_)}});
        connection_.leave("stopped");
        group_.reset();
        // Wait for the coordinator to see every member done (or to drop this worker).
        std::string ignored;
        connection_.next_generation(config_.generation, ignored);
        return 0;
      } catch (const CollectiveFailure& failure) {
        // A peer died or went silent (or its group broke first): tear the group down, which
        // closes this worker's connections so that peers still waiting on it fail at once too,
        // and report the step held.
        group_.reset();
        if (connection_.dropped()) {
          abandon_writer();  // the new rank 0 writes from now on
        } else {
          finish_writer_quietly();
        }
        const bool leaving = g_leave_signal != 0;
        const std::string reason = !leaving                   ? "failed"
                                   : g_leave_signal == SIGINT ? "stopped"
                                                              : "preempted";
        // A group that could not form: which peers can this worker not reach at all?
        const auto unreachable = formed ? std::vector<std::string>{} : unreachable_members();
        std::string named;
        for (const auto& id : unreachable) {
          named += (named.empty() ? "; it cannot reach " : ", ") + id + " at " + probe_of(id);
        }
        report("failed", holds_state_ ? step_ : -1, std::max(attempted, step_), leaving, reason,
               unreachable);
        std::fprintf(stderr, "transient worker %s: generation %lld failed (%s%s)\n",
                     connection_.id().c_str(), static_cast<long long>(config_.generation),
                     failure.what(), named.c_str());
        if (leaving) {
          connection_.leave(reason);
          return 0;
        }
      } catch (const std::exception& error) {
        // Not a lost peer: an error of the job itself (a checkpoint that cannot be written or
        // read, a state that does not fit the model), which the next member would meet in turn.
        // The coordinator stops the job with it instead of re-forming around this worker.
        abandon_writer_quietly();
        connection_.send(
            {{"report", "fatal"}, {"gen", config_.generation}, {"error", error.what()}});
        connection_.leave("failed");
        group_.reset();
        std::fprintf(stderr, "transient worker %s: %s; the job stops\n", connection_.id().c_str(),
                     error.what());
        std::string ignored;
        connection_.next_generation(config_.generation, ignored);
        return kExitFailed;
      }
    }
  }

 private:
  void report(const std::string& what, std::int64_t held, std::int64_t attempted, bool leaving,
              const std::string& reason, const std::vector<std::string>& unreachable = {}) {
    nlohmann::json message = {{"report", what},     {"gen", config_.generation},
                              {"step", held},       {"attempted", attempted},
                              {"leaving", leaving}, {"reason", reason},
                              {"cause", reason}};
    if (!unreachable.empty()) message["unreachable"] = unreachable;
    connection_.set_state({{"gen", config_.generation},
                           {"reported", true},
                           {"step", held},
                           {"attempted", attempted},
                           {"leaving", leaving},
                           {"cause", reason}});
    connection_.send(message);
  }

  void form_group() {
    connection_.set_forming(config_.generation);
    try {
      // The rendezvous keys travel on this worker's authenticated connection to the coordinator
      // (coordinator_store.h); there is no open store port.
      const auto timeout = std::chrono::milliseconds(
          static_cast<std::int64_t>(1000 * std::max(10.0, 2 * options_.heartbeat_timeout_s)));
      auto store = c10::make_intrusive<CoordinatorStore>(connection_, timeout);
      auto prefixed = c10::make_intrusive<c10d::PrefixStore>(
          generation_prefix(config_.generation) + "pg", store);
      // Collectives time out after the heartbeat timeout: a silent member makes its peers' step
      // fail in that time, as the coordinator drops it.
      auto pg_options = c10d::ProcessGroupGloo::Options::create(std::chrono::milliseconds(
          static_cast<std::int64_t>(1000 * options_.heartbeat_timeout_s)));
      pg_options->devices.push_back(
          interface_.empty() ? c10d::ProcessGroupGloo::createDeviceForHostname(advertise_)
                             : c10d::ProcessGroupGloo::createDeviceForInterface(interface_));
      group_ =
          c10::make_intrusive<c10d::ProcessGroupGloo>(prefixed, rank_, world_size_, pg_options);
    } catch (const std::exception& error) {
      std::string what = error.what();
      what = what.substr(0, what.find('\n'));
      throw CollectiveFailure(
          "forming generation " + std::to_string(config_.generation) + ": " + what +
          "; this worker listens for its peers on " +
          (interface_.empty() ? advertise_ : "interface " + interface_) +
          " (a peer that cannot be reached should name a reachable address of its own with "
          "--advertise ADDR or --interface IFNAME)");
    }
  }

  // The members whose reachability probe this worker cannot connect to (one second each).
  std::vector<std::string> unreachable_members() const {
    std::vector<std::string> unreachable;
    for (std::size_t r = 0; r < config_.members.size() && r < config_.probes.size(); ++r) {
      if (static_cast<int>(r) == rank_ || config_.probes[r].empty()) continue;
      try {
        if (!LineChannel::connect(parse_endpoint(config_.probes[r], "probe"), 1.0)) {
          unreachable.push_back(config_.members[r]);
        }
      } catch (const InputError&) {
      }
    }
    return unreachable;
  }

  std::string probe_of(const std::string& id) const {
    for (std::size_t r = 0; r < config_.members.size() && r < config_.probes.size(); ++r) {
      if (config_.members[r] == id) return config_.probes[r];
    }
    return "?";
  }

  void broadcast(std::vector<torch::Tensor> tensors, int source) {
    c10d::BroadcastOptions options;
    options.rootRank = source;
    std::vector<c10::intrusive_ptr<c10d::Work>> works{group_->broadcast(tensors, options)};
    wait_all(works);
  }

  // The members agree on the step they hold; if they differ, the most advanced (lowest rank
  // among them) broadcasts its whole state. If no member holds a state, all load the generation's
  // checkpoint (or take the job's seeded initial state).
  void agree_on_state() {
    std::vector<std::vector<torch::Tensor>> gathered(1);
    for (int r = 0; r < world_size_; ++r) gathered[0].push_back(torch::zeros({1}, torch::kInt64));
    std::vector<torch::Tensor> mine{torch::full({1}, holds_state_ ? step_ : -1, torch::kInt64)};
    std::vector<c10::intrusive_ptr<c10d::Work>> works{group_->allgather(gathered, mine)};
    wait_all(works);
    std::vector<std::int64_t> steps;
    for (const auto& t : gathered[0]) steps.push_back(t.item<std::int64_t>());
    const std::int64_t most = *std::max_element(steps.begin(), steps.end());
    if (most < 0) {
      if (!config_.checkpoint.empty()) {
        load_checkpoint();
      } else if (rolled_back_) {
        initial_state();  // a rollback with no checkpoint before the divergence
      }
      rolled_back_ = false;
      step_ = config_.start_step < 0 ? 0 : config_.start_step;
      holds_state_ = true;
      return;
    }
    const bool all_equal =
        std::all_of(steps.begin(), steps.end(), [&](auto s) { return s == most; });
    if (all_equal) return;
    const int source =
        static_cast<int>(std::find(steps.begin(), steps.end(), most) - steps.begin());
    torch::NoGradGuard no_grad;
    // Everything is received into temporaries and committed only once the last broadcast has
    // succeeded: a source lost half-way leaves this member's state and step as they were.
    auto flat = flatten(parameters_);
    broadcast({flat}, source);
    auto slots = optimizer_->state();
    for (auto& slot : slots) {  // one flat tensor per slot: AdamW's step counts are integers
      auto flat_slot = flatten(slot.tensors);
      broadcast({flat_slot}, source);
      slot.tensors = unflatten(flat_slot, slot.tensors);
    }
    std::vector<torch::Tensor> buffers;
    for (auto& item : model_->named_buffers()) buffers.push_back(item.value().clone());
    for (auto& buffer : buffers) broadcast({buffer}, source);
    auto generator = at::detail::getDefaultCPUGenerator();
    torch::Tensor rng;
    {
      std::lock_guard<std::mutex> lock(generator.mutex());
      rng = generator.get_state().clone();
    }
    broadcast({rng}, source);
    if (rank_ != source) {
      const auto received = unflatten(flat, parameters_);
      for (std::size_t p = 0; p < parameters_.size(); ++p) parameters_[p].copy_(received[p]);
      optimizer_->set_state(slots);  // the same layout on every member: it fits
      std::size_t i = 0;
      for (auto& item : model_->named_buffers()) item.value().copy_(buffers[i++]);
      std::lock_guard<std::mutex> lock(generator.mutex());
      generator.set_state(rng);
    }
    step_ = most;
    holds_state_ = true;
  }

  // Trains steps until the generation ends. `attempted` is set to the step being worked on, so
  // that a failure reports what was interrupted.
  Ending train_generation(std::int64_t& attempted) {
    if (rank_ == 0 && !writer_) {
      // Checkpoints go to the coordinator's job directory (its server is the stable one), which
      // records them when they are stored.
      writer_ = std::make_unique<CheckpointWriter>(
          [this](const CheckpointState& state) {
            const auto stored =
                connection_.send_checkpoint(state.step, serialize_checkpoint(state));
            if (!stored) {
              std::fprintf(stderr,
                           "transient worker %s: the checkpoint of step %lld was not stored (the "
                           "coordinator is away)\n",
                           connection_.id().c_str(), static_cast<long long>(state.step));
            }
            return stored.value_or(CheckpointRecord{});
          },
          nullptr);
      last_checkpoint_step_ = step_;
      since_checkpoint_s_ = config_.since_checkpoint_s;
    }
    if (rank_ != 0) finish_writer();
    bool first_step = true;
    while (step_ < job_.total_steps) {
      if (connection_.dropped() || connection_.abort_signalled(config_.generation)) {
        throw CollectiveFailure("the coordinator ended generation " +
                                std::to_string(config_.generation));
      }
      attempted = step_ + 1;
      const auto position = position_of_step(step_, job_.train_samples, options_.global_batch);
      auto phase_start = Clock::now();
      const Shard shard = shard_of_step(position);
      torch::Tensor images;
      torch::Tensor labels;
      if (shard.count > 0 && loader_) {
        auto batch = take_batch(position.epoch, shard);
        images = std::move(batch.images);
        labels = std::move(batch.labels);
        report_skipped(batch.skipped);
      } else if (shard.count > 0) {
        auto index = torch::tensor(shard_indices(position.epoch, shard), torch::kInt64);
        images = normalise(data_, data_.train.images.index_select(0, index));
        labels = data_.train.labels.index_select(0, index);
      }
      if (loader_ && step_ + 1 < job_.total_steps) {
        // The next step's samples are decoded while this one computes (the members and their
        // shares stay unless the generation ends, and then the guess is dropped).
        const auto next = position_of_step(step_ + 1, job_.train_samples, options_.global_batch);
        const Shard next_shard = shard_of_step(next);
        if (next_shard.count > 0) prefetch(next.epoch, next_shard);
      }
      const double data_s = seconds_since(phase_start);

      // Backward all-reduces each bucket of gradients as soon as it is complete
      // (gradient_buckets.h); what is left of the all-reduce after backward is `allreduce_s`.
      phase_start = Clock::now();
      buckets_->begin(group_);
      const bool stop_requested = rank_ == 0 && connection_.stop_signalled(config_.generation);
      const bool leave = g_leave_signal != 0;
      const bool change = rank_ == 0 && connection_.change_signalled(config_.generation);
      buckets_->control()[1] = stop_requested ? 1.0 : 0.0;
      buckets_->control()[2] = change ? 1.0 : 0.0;
      buckets_->control()[3] = leave ? 1.0 : 0.0;
      double local_loss = 0;
      if (shard.count > 0 && labels.size(0) > 0) {
        auto scores = model_->forward(images);
        // Summed over the shard and divided by the global batch: the all-reduced sum is then
        // exactly the mean gradient of the global batch, whatever the split.
        auto loss = summed_loss(scores, labels) / static_cast<double>(position.batch);
        local_loss = loss.item<double>();
        buckets_->control()[0] = local_loss;  // before backward: it goes with the first bucket
        loss.backward();
      } else {
        buckets_->control()[0] = 0.0;
      }
      const double compute_s = seconds_since(phase_start);
      if (shard.count > 0 && compute_s > 0) {
        const double speed = static_cast<double>(shard.count) / compute_s;
        speed_ = speed_ > 0 ? 0.8 * speed_ + 0.2 * speed : speed;
        connection_.set_speed(speed_);
      }

      phase_start = Clock::now();
      buckets_->finish();
      const double allreduce_s = seconds_since(phase_start);
      // The loss is all-reduced: every member sees the same value and stops at the same step,
      // before a NaN or infinite gradient reaches the parameters.
      if (const double summed = buckets_->control()[0].item<double>(); !std::isfinite(summed)) {
        diverged_loss_ = summed;
        attempted = step_;
        return Ending::kDiverged;
      }

      phase_start = Clock::now();
      if (options_.clip_grad_norm > 0) {
        // The summed gradient is the same on every member: so is its norm, and the clipping.
        torch::nn::utils::clip_grad_norm_(parameters_, options_.clip_grad_norm);
      }
      const double lr = learning_rate_at(
          step_, job_.total_steps, job_.warmup_steps, options_.lr * config_.lr_scale,
          parse_lr_schedule(options_.schedule).value_or(LrSchedule::kCosine));
      optimizer_->step(lr);
      const double optimizer_s = seconds_since(phase_start);

      ++step_;
      since_checkpoint_s_ += data_s + compute_s + allreduce_s + optimizer_s;
      const double loss = buckets_->control()[0].item<double>();
      connection_.record_row(step_row(step_, rank_, shard.count, data_s, compute_s, allreduce_s,
                                      optimizer_s, loss, config_.generation, shard.begin));
      const bool stop = buckets_->control()[1].item<double>() > 0 ||
                        (options_.stop_at_step > 0 && step_ >= options_.stop_at_step);
      const double leaving = buckets_->control()[3].item<double>();
      const bool boundary = buckets_->control()[2].item<double>() > 0 || leaving > 0;
      everyone_leaves_ = leaving >= world_size_;
      attempted = step_;
      if (rank_ == 0 && first_step) {
        connection_.send({{"report", "stepped"}, {"gen", config_.generation}, {"step", step_}});
      }
      first_step = false;

      const bool epoch_end = position.cursor + position.batch >= job_.train_samples;
      if (epoch_end) {
        std::tie(result_.test_accuracy, result_.test_loss) = evaluate();
        evaluated_at_ = step_;
        if (rank_ == 0) {
          connection_.send({{"event",
                             {{"event", "epoch"},
                              {"epoch", position.epoch + 1},
                              {"step", step_},
                              {"train_loss", loss},
                              {"test_accuracy", result_.test_accuracy},
                              {"test_loss", result_.test_loss},
                              {"members_agree", members_agree_}}}});
        }
      }
      if (writer_) {
        const bool due_by_steps =
            options_.checkpoint_every_steps > 0 && step_ % options_.checkpoint_every_steps == 0;
        // By time: seconds of training since the job's last checkpoint, carried from generation
        // to generation, so that frequent membership changes cannot put checkpoints off.
        const bool due_by_time =
            options_.checkpoint_every_s > 0 && since_checkpoint_s_ >= options_.checkpoint_every_s;
        if (due_by_steps || due_by_time) {
          writer_->submit(snapshot());
          last_checkpoint_step_ = step_;
          since_checkpoint_s_ = 0;
        }
      }
      if (rank_ == 0) {
        // After the checkpoint decision, so that the training time since the last checkpoint
        // it carries is the one the next generation starts counting from.
        connection_.send({{"progress", to_json(ProgressReport{step_, position.epoch, loss, lr,
                                                              since_checkpoint_s_})}});
      }
      if (stop) break;
      if (boundary && step_ < job_.total_steps) return Ending::kBoundary;
    }
    result_.step = step_;
    result_.stopped = step_ < job_.total_steps;
    if (!result_.stopped && evaluated_at_ != step_) {
      std::tie(result_.test_accuracy, result_.test_loss) = evaluate();
      evaluated_at_ = step_;
    }
    if (writer_ && (last_checkpoint_step_ != step_ || step_ == 0)) {
      // The last state is always kept, so a finished or paused job can be continued or read.
      writer_->submit(snapshot());
      last_checkpoint_step_ = step_;
    }
    return result_.stopped ? Ending::kStopped : Ending::kFinished;
  }

  // Only one member writes checkpoints at a time: a writer that stops being rank 0 (or whose
  // generation ended) finishes what it was given first.
  void finish_writer() {
    if (!writer_) return;
    writer_->wait();
    writer_.reset();
  }

  // Drops what was handed to the writer but not started (a write in progress completes).
  void abandon_writer() {
    if (!writer_) return;
    writer_->abandon();
    writer_.reset();
  }

  void abandon_writer_quietly() {
    try {
      abandon_writer();
    } catch (const std::exception&) {
      writer_.reset();
    }
  }

  void finish_writer_quietly() {
    try {
      finish_writer();
    } catch (const std::exception& error) {
      std::fprintf(stderr, "transient worker %s: a checkpoint write failed: %s\n",
                   connection_.id().c_str(), error.what());
      writer_.reset();
    }
  }

  // The job's loss (`--loss`) summed over the samples: cross-entropy of the scores, or the squared
  // error between the scores and the labels' one-hot vectors, averaged over the classes (divided
  // by the batch, it is PyTorch's mse_loss with its default mean).
  torch::Tensor summed_loss(const torch::Tensor& scores, const torch::Tensor& labels) const {
    if (options_.loss == "mse") {
      const auto targets = torch::one_hot(labels, scores.size(1)).to(scores.scalar_type());
      return torch::nn::functional::mse_loss(
                 scores, targets,
                 torch::nn::functional::MSELossFuncOptions().reduction(torch::kSum)) /
             static_cast<double>(scores.size(1));
    }
    return torch::nn::functional::cross_entropy(
        scores, labels, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum));
  }

  // The job's seeded initial state, as the constructor made it: the model built again from the
  // seed, zero momentum, and the generator where building the model left it.
  void initial_state() {
    torch::manual_seed(options_.seed);
    const auto fresh = make_model(options_.model, data_.shape);
    torch::NoGradGuard no_grad;
    auto fresh_parameters = fresh->named_parameters();
    for (const auto& item : model_->named_parameters()) {
      item.value().copy_(fresh_parameters[item.key()]);
    }
    auto fresh_buffers = fresh->named_buffers();
    for (const auto& item : model_->named_buffers()) item.value().copy_(fresh_buffers[item.key()]);
    optimizer_->reset();
  }

  void load_checkpoint() {
    CheckpointRecord record;
    record.file = config_.checkpoint;
    record.bytes = config_.checkpoint_bytes;
    record.crc32 = config_.checkpoint_crc32;
    const std::string path =
        (std::filesystem::path(options_.job_dir) / "checkpoints" / record.file).string();
    const auto state = deserialize_checkpoint(connection_.fetch_checkpoint(record), path);
    if (state.model != options_.model || state.global_batch != options_.global_batch) {
      throw InputError(path, 0, "checkpoint of another job (model " + state.model + ")");
    }
    if (state.optimizer != optimizer_->name()) {
      throw InputError(path, 0,
                       "checkpoint of the optimiser " + state.optimizer + ", this job's is " +
                           optimizer_->name());
    }
    torch::NoGradGuard no_grad;
    // The state dict holds every parameter and buffer of the model under its name, nothing else.
    auto parameters = model_->named_parameters();
    auto buffers = model_->named_buffers();
    if (state.model_state.size() != parameters.size() + buffers.size()) {
      throw InputError(path, 0,
                       "checkpoint holds " + std::to_string(state.model_state.size()) +
                           " tensors, the model " + options_.model + " has " +
                           std::to_string(parameters.size() + buffers.size()));
    }
    std::vector<std::pair<torch::Tensor*, const torch::Tensor*>> copies;
    for (const auto& [name, tensor] : state.model_state) {
      auto* target = parameters.find(name);
      if (target == nullptr) target = buffers.find(name);
      if (target == nullptr || !target->sizes().equals(tensor.sizes())) {
        throw InputError(path, 0,
                         "checkpoint's \"" + name + "\" does not fit the model " + options_.model);
      }
      copies.emplace_back(target, &tensor);
    }
    // The optimiser's state by parameter name, in the order of the model's parameters.
    std::vector<OptimizerSlot> slots;
    for (const auto& [slot, by_name] : state.optimizer_state) {
      OptimizerSlot ordered{slot, {}};
      for (const auto& name : parameter_names_) {
        auto it = std::find_if(by_name.begin(), by_name.end(),
                               [&](const auto& entry) { return entry.first == name; });
        if (it == by_name.end()) {
          throw InputError(path, 0,
                           "checkpoint's optimiser state \"" + slot + "\" lacks parameter " + name);
        }
        ordered.tensors.push_back(it->second);
      }
      slots.push_back(std::move(ordered));
    }
    if (const auto why = optimizer_->set_state(slots)) throw InputError(path, 0, *why);
    for (auto& [target, tensor] : copies) target->copy_(*tensor);
    auto generator = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(generator.mutex());
    generator.set_state(state.rng_state);
  }

  CheckpointState snapshot() {
    CheckpointState state;
    state.model = options_.model;
    state.global_batch = options_.global_batch;
    state.seed = options_.seed;
    state.step = step_;
    const auto next = position_of_step(step_, job_.train_samples, options_.global_batch);
    state.epoch = next.epoch;
    state.cursor = next.cursor;
    for (std::size_t i = 0; i < parameters_.size(); ++i) {
      state.model_state.emplace_back(parameter_names_[i], parameters_[i].detach().clone());
    }
    for (const auto& item : model_->named_buffers()) {
      state.model_state.emplace_back(item.key(), item.value().clone());
    }
    state.optimizer = optimizer_->name();
    for (auto& slot : optimizer_->state()) {
      NamedTensors by_name;
      for (std::size_t i = 0; i < parameters_.size(); ++i) {
        by_name.emplace_back(parameter_names_[i], std::move(slot.tensors[i]));
      }
      state.optimizer_state.emplace_back(slot.name, std::move(by_name));
    }
    auto generator = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(generator.mutex());
    state.rng_state = generator.get_state();
    return state;
  }

  // Rank 0's batch-norm statistics become everyone's (each worker saw only its shards), then the
  // test set is split among the workers and the counts all-reduced.
  std::pair<double, double> evaluate() {
    torch::NoGradGuard no_grad;
    members_agree_ = compare_states();
    for (auto& item : model_->named_buffers()) broadcast({item.value()}, 0);
    model_->eval();
    const std::int64_t samples = test_samples_;
    const auto sizes = split_batch(samples, world_size_);
    std::int64_t begin = 0;
    for (int r = 0; r < rank_; ++r) begin += sizes[static_cast<std::size_t>(r)];
    const std::int64_t end = begin + sizes[static_cast<std::size_t>(rank_)];
    double correct = 0;
    double loss_sum = 0;
    for (std::int64_t at = begin; at < end; at += 1000) {
      const std::int64_t count = std::min<std::int64_t>(1000, end - at);
      torch::Tensor images;
      torch::Tensor labels;
      if (loader_) {
        std::vector<std::int64_t> indices(static_cast<std::size_t>(count));
        std::iota(indices.begin(), indices.end(), at);
        auto batch = loader_->load(*data_.test_files, std::move(indices), 0, false).get();
        images = std::move(batch.images);
        labels = std::move(batch.labels);
        report_skipped(batch.skipped);
        skipped_in_test_ += static_cast<std::int64_t>(batch.skipped.size());
        if (labels.size(0) == 0) continue;
      } else {
        images = normalise(data_, data_.test.images.narrow(0, at, count));
        labels = data_.test.labels.narrow(0, at, count);
      }
      auto scores = model_->forward(images);
      loss_sum += summed_loss(scores, labels).item<double>();
      correct += scores.argmax(1).eq(labels).sum().item<double>();
    }
    model_->train();
    std::vector<torch::Tensor> totals{torch::tensor(
        {correct, loss_sum, static_cast<double>(end - begin - skipped_in_test_)}, torch::kFloat64)};
    skipped_in_test_ = 0;
    std::vector<c10::intrusive_ptr<c10d::Work>> works{group_->allreduce(totals)};
    wait_all(works);
    const double count = totals[0][2].item<double>();
    return {totals[0][0].item<double>() / count, totals[0][1].item<double>() / count};
  }

  // This member's samples of a step at `position`: its share of the global batch, after those
  // of the ranks before it.
  Shard shard_of_step(const StepPosition& position) const {
    const auto shares = member_shares(position.batch, config_.speeds);
    Shard shard;
    shard.begin = position.cursor;
    for (int r = 0; r < rank_; ++r) shard.begin += shares[static_cast<std::size_t>(r)];
    shard.count = shares[static_cast<std::size_t>(rank_)];
    return shard;
  }

  // The order of the samples in `epoch`: this one's, or the next one's for a prefetch (the two
  // last asked for are kept).
  const std::vector<std::int64_t>& permutation(std::int64_t epoch) {
    for (const auto& [kept, order] : permutations_) {
      if (kept == epoch) return order;
    }
    if (permutations_.size() == 2) permutations_.pop_front();
    permutations_.emplace_back(epoch, epoch_permutation(job_.train_samples, options_.seed, epoch));
    return permutations_.back().second;
  }

  std::vector<std::int64_t> shard_indices(std::int64_t epoch, const Shard& shard) {
    const auto& order = permutation(epoch);
    return {order.begin() + shard.begin, order.begin() + shard.begin + shard.count};
  }

  void prefetch(std::int64_t epoch, const Shard& shard) {
    prefetched_ =
        Prefetched{config_.generation, epoch, shard,
                   loader_->load(*data_.train_files, shard_indices(epoch, shard), epoch, true)};
  }

  // The batch of `shard` in `epoch`: the one decoded ahead if it is that one, else decoded now.
  ImageBatch take_batch(std::int64_t epoch, const Shard& shard) {
    std::optional<Prefetched> ahead;
    ahead.swap(prefetched_);
    if (ahead && ahead->generation == config_.generation && ahead->epoch == epoch &&
        ahead->shard.begin == shard.begin && ahead->shard.count == shard.count) {
      return ahead->batch.get();
    }
    if (ahead) ahead->batch.wait();  // its threads are done with it before it is dropped
    return loader_->load(*data_.train_files, shard_indices(epoch, shard), epoch, true).get();
  }

  // Images that did not decode are left out of their batch; each file is reported once (an
  // `image_skipped` event and a line on stderr).
  void report_skipped(const std::vector<std::pair<std::string, std::string>>& skipped) {
    for (const auto& [path, why] : skipped) {
      if (!skipped_files_.insert(path).second) continue;
      std::fprintf(stderr, "transient worker %s: skipped %s: %s\n", connection_.id().c_str(),
                   path.c_str(), why.c_str());
      connection_.send(
          {{"event", {{"event", "image_skipped"}, {"file", path}, {"why", why}, {"step", step_}}}});
    }
  }

  // Whether every member holds the same parameters and optimiser state, bit for bit, as they
  // must: each applies the same all-reduced gradient to the same state. A fingerprint of each
  // member's (sums in double precision) is gathered and compared; a difference (a member's faulty
  // hardware, a state that did not reach a joiner) is said on stderr and in the epoch event.
  bool compare_states() {
    std::vector<torch::Tensor> sums;
    for (const auto& parameter : parameters_) sums.push_back(parameter.sum(torch::kFloat64));
    for (const auto& slot : optimizer_->state()) {
      for (const auto& tensor : slot.tensors) sums.push_back(tensor.sum(torch::kFloat64));
    }
    std::vector<torch::Tensor> mine{torch::stack(sums)};
    std::vector<std::vector<torch::Tensor>> gathered(1);
    for (int r = 0; r < world_size_; ++r) gathered[0].push_back(torch::empty_like(mine[0]));
    std::vector<c10::intrusive_ptr<c10d::Work>> works{group_->allgather(gathered, mine)};
    wait_all(works);
    for (int r = 1; r < world_size_; ++r) {
      if (!torch::equal(gathered[0][static_cast<std::size_t>(r)], gathered[0][0])) {
        if (rank_ == 0) {
          std::fprintf(stderr,
                       "transient worker %s: at step %lld the state of rank %d differs from rank "
                       "0's (checkpoints are rank 0's)\n",
                       connection_.id().c_str(), static_cast<long long>(step_), r);
        }
        return false;
      }
    }
    return true;
  }

  Connection& connection_;
  std::string advertise_;  // the address this worker's Gloo device listens on
  std::string interface_;  // ... or the interface whose address it takes ("" = advertise_)
  JobConfig job_;
  const TrainOptions& options_;
  Dataset data_;
  std::shared_ptr<Model> model_;
  std::vector<std::string> parameter_names_;
  std::vector<torch::Tensor> parameters_;
  std::unique_ptr<Optimizer> optimizer_;
  bool members_agree_ = true;  // at the last evaluation
  std::unique_ptr<GradientBuckets> buckets_;
  std::unique_ptr<CheckpointWriter> writer_;  // while this worker is rank 0

  GenerationConfig config_;  // of the current generation
  int rank_ = 0;
  int world_size_ = 1;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group_;

  bool holds_state_ = false;  // false until the first generation has given it a state
  bool rolled_back_ = false;  // its state diverged: it takes a checkpoint's or the initial one
  std::int64_t step_ = 0;     // steps completed in the state held
  std::deque<std::pair<std::int64_t, std::vector<std::int64_t>>> permutations_;  // by epoch
  std::int64_t test_samples_ = 0;  // evaluated: the test set, or its first --test-subset
  // Image folders: the loader threads, the next step's batch decoded ahead, and the files that
  // did not decode (each reported once).
  std::unique_ptr<ImageLoader> loader_;
  struct Prefetched {
    std::int64_t generation = -1;
    std::int64_t epoch = -1;
    Shard shard;
    std::shared_future<ImageBatch> batch;
  };
  std::optional<Prefetched> prefetched_;
  std::set<std::string> skipped_files_;
  std::int64_t skipped_in_test_ = 0;
  std::int64_t evaluated_at_ = -1;
  std::int64_t last_checkpoint_step_ = -1;
  double since_checkpoint_s_ = 0;  // seconds of training steps since the last checkpoint
  double speed_ = 0;               // samples/s of forward + backward, smoothed
  bool everyone_leaves_ = false;   // every member leaves at this boundary
  double diverged_loss_ = 0;       // the non-finite loss that ended training
  WorkerResult result_;
};

}  // namespace

int run_worker(const WorkerOptions& options) {
  // SIGTERM is the cloud's preemption notice: leave at the next step boundary. A worker started
  // by hand leaves the same way on Ctrl-C; one started by `transient train` ignores SIGINT (the
  // launcher turns Ctrl-C into a pause of the whole job).
  // A write to a peer that is gone must be an error, not the end of the process: Gloo writes
  // to its pairs without MSG_NOSIGNAL, and a worker woken after a stop (its peers long gone)
  // died of SIGPIPE.
  ::signal(SIGPIPE, SIG_IGN);
  struct sigaction action {};
  action.sa_handler = on_leave_signal;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGTERM, &action, nullptr);
  struct sigaction previous {};
  ::sigaction(SIGINT, nullptr, &previous);
  if (previous.sa_handler != SIG_IGN) ::sigaction(SIGINT, &action, nullptr);

  const Endpoint endpoint = parse_endpoint(options.coordinator, "--coordinator");
  if (options.worker_id.find_first_of("/ \"") != std::string::npos) {
    throw InputError("--worker-id: \"" + options.worker_id +
                     "\" must be a name without '/', ' ' or '\"'");
  }
  if (options.token.empty() == options.token_file.empty()) {
    throw InputError("give the job's token with exactly one of --token-file FILE or --token T");
  }
  const std::string token =
      options.token.empty() ? read_token_file(options.token_file) : options.token;

  std::optional<Connection> connection;
  try {
    connection.emplace(endpoint, token, options.worker_id);
  } catch (const LeftBeforeJoining&) {
    std::fprintf(stderr, "transient worker: %s before it joined the job; exiting\n",
                 g_leave_signal == SIGINT ? "interrupted" : "preempted");
    return 0;
  }
  // Peers reach this worker at the local address of its route to the coordinator, unless the
  // worker is told another (an interface, as GLOO_SOCKET_IFNAME names one, or an address).
  const std::string advertise = !options.advertise.empty() ? options.advertise
                                : !options.interface.empty()
                                    ? interface_address(options.interface, "--interface")
                                    : connection->local_host();
  // The probe listens where Gloo will: a peer that cannot reach it cannot reach Gloo either.
  const std::string probe =
      connection->open_probe(advertise, options.advertise.empty() ? "--interface" : "--advertise");
  Worker worker(*connection, options.threads, advertise, options.interface, options.data_dir);
  connection->mark_ready(advertise, probe);
  return worker.run();
}

}  // namespace transient::train
