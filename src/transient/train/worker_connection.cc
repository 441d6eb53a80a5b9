#include "transient/train/worker_connection.h"

#include <signal.h>

#include <cstdio>

#include "transient/core/duration.h"
#include "transient/core/error.h"
#include "transient/core/json_number.h"
#include "transient/train/progress_line.h"
#include "transient/train/rendezvous_store.h"
#include "transient/train/token_proof.h"

namespace transient::train {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::atomic<int> g_leave_signal{0};
// When it first came, on the steady clock (clock_gettime is async-signal-safe); 0: never.
std::atomic<std::chrono::steady_clock::rep> g_leave_signal_at{0};

}  // namespace

int leave_signal() { return g_leave_signal; }

void on_leave_signal(int signal) {
  g_leave_signal = signal;
  std::chrono::steady_clock::rep unset = 0;
  g_leave_signal_at.compare_exchange_strong(
      unset, std::chrono::steady_clock::now().time_since_epoch().count());
}

bool signalled_long_ago() {
  const auto at = g_leave_signal_at.load();
  return at != 0 &&
         std::chrono::steady_clock::now() -
                 std::chrono::steady_clock::time_point(std::chrono::steady_clock::duration(at)) >
             std::chrono::seconds(1);
}

Connection::Connection(const Endpoint& coordinator, std::string token, std::string worker_id)
    : coordinator_(coordinator), token_(std::move(token)), id_(std::move(worker_id)) {
  // Tries for 30 s, a quarter of a second at a time, so that a preemption notice (or Ctrl-C)
  // in the meantime ends the worker at once rather than after the 30 s.
  // After a second without an answer it says that it waits, and for how long: a coordinator not
  // started yet (or started on another port) is otherwise 30 s of silence.
  std::shared_ptr<LineChannel> channel;
  const auto start = Clock::now();
  const auto give_up = start + std::chrono::seconds(30);
  bool said_waiting = false;
  bool said_closed = false;
  for (;;) {
    while (!channel && Clock::now() < give_up) {
      if (g_leave_signal != 0) throw LeftBeforeJoining{};
      channel = LineChannel::connect(coordinator_, 0.25);
      if (!channel && !said_waiting && Clock::now() - start >= std::chrono::seconds(1)) {
        const bool known = resolves(coordinator_.host);
        print_line("transient worker: %s %s yet; trying for 30 s in all\n",
                   known ? "nothing answers at" : "cannot resolve",
                   known ? coordinator_.text().c_str() : coordinator_.host.c_str());
        said_waiting = true;
      }
    }
    if (!channel) {
      // A name nobody resolves was said to answer nothing, as though the coordinator were down.
      if (!resolves(coordinator_.host)) {
        throw InputError("--coordinator: cannot resolve \"" + coordinator_.host +
                         "\" (tried for 30 s); accepted: a host name this host resolves, or an "
                         "address");
      }
      throw InputError("--coordinator: nothing answers at " + coordinator_.text() +
                       " (is the coordinator running?)");
    }
    const auto answer = hello(*channel, nullptr);
    if (answer == Hello::kAdmitted) break;
    // Closed before an answer: a coordinator that many unproven connections reached at once
    // gives way to the newest (a flood cannot keep workers out for longer than it lasts), or
    // one that is restarting. Tried again within the 30 s; a refusal is final.
    if (answer == Hello::kClosed && Clock::now() < give_up) {
      if (!said_closed) {
        print_line(
            "transient worker: the coordinator at %s closed the connection before "
            "admitting this worker; trying again for 30 s in all\n",
            coordinator_.text().c_str());
        said_closed = true;
      }
      channel.reset();
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      continue;
    }
    throw InputError("the coordinator at " + coordinator_.text() +
                     (answer == Hello::kRefused    ? " refused this worker: "
                      : answer == Hello::kUnproven ? " was refused by this worker: "
                                                   : " did not admit this worker: ") +
                     refusal_);
  }
  local_host_ = channel->local_host();
  channel->set_user_timeout(link_silence_hold_s(job_.options.heartbeat_timeout_s));
  channel_ = std::move(channel);
  thread_ = std::thread([this] { run(); });
}

Connection::~Connection() {
  stopping_ = true;
  std::shared_ptr<LineChannel> channel;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    channel = channel_;
  }
  if (channel) channel->shutdown();
  thread_.join();
}

std::optional<CheckpointRecord> Connection::send_checkpoint(std::int64_t step,
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
  message::CheckpointPart part;
  part.id = id;
  part.part = "begin";
  part.step = step;
  part.bytes = record.bytes;
  bool sent = channel && channel->send(message::encode(part));
  part.part = "chunk";
  for (std::size_t at = 0; sent && at < bytes.size(); at += kChunk) {
    const std::size_t size = std::min(kChunk, bytes.size() - at);
    part.data = encode_store_value(std::string(bytes.data() + at, size));
    sent = channel->send(message::encode(part));
  }
  if (!sent) return std::nullopt;
  part.part = "end";
  part.data.clear();
  part.crc32 = record.crc32;
  try {
    const auto reply = call(part, std::chrono::minutes(10), id, channel).first;
    record.file = reply.at("file").get<std::string>();
    return record;
  } catch (const Refused& refused) {
    throw InputError(refused.what());
  } catch (const std::runtime_error&) {
    return std::nullopt;  // the coordinator went away meanwhile
  }
}

std::vector<char> Connection::fetch_checkpoint(const CheckpointRecord& record) {
  try {
    auto [reply, data] = call(message::FetchCheckpoint{record.file, 0}, std::chrono::minutes(10));
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

void Connection::record_row(std::string row) {
  std::lock_guard<std::mutex> lock(mutex_);
  unacked_rows_.add(row);
  send_rows_locked();
}

void Connection::send_rows_locked() {
  if (!channel_ || unacked_rows_.last() <= rows_sent_through_) return;
  // In batches: the backlog of a coordinator's absence, sent as one line, passed the 1 MiB a
  // line may have and had the worker dropped as garbage.
  for (const auto& rows : unacked_rows_.batches_after(rows_sent_through_)) {
    if (!channel_->queue(message::encode(rows))) return;
    rows_sent_through_ = rows.last;
  }
}

std::pair<nlohmann::json, std::string> Connection::call(const message::ToCoordinator& message,
                                                        std::chrono::milliseconds timeout,
                                                        std::int64_t id,
                                                        std::shared_ptr<LineChannel> on_channel) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (id < 0) id = next_call_++;
  const std::int64_t epoch = channel_epoch_;
  nlohmann::json request = message::encode(message);
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

void Connection::send(const message::ToCoordinator& message) {
  const nlohmann::json line = message::encode(message);
  std::lock_guard<std::mutex> lock(mutex_);
  // Queued, never waited for: the training thread sends these, and one that waited for a
  // coordinator cut off (its socket full) held up its peers' collectives until they timed out.
  // The heartbeat thread's next heartbeat writes what the socket did not take.
  if (channel_ && channel_->queue(line)) return;
  // An event (an epoch's evaluation, ...) is the records' and goes after the re-join; progress
  // and heartbeats are of the moment.
  if (std::holds_alternative<message::Event>(message) && unsent_events_.size() < kMaxUnsentEvents) {
    unsent_events_.push_back(line);
  }
}

void Connection::report(const message::Report& report, nlohmann::json state) {
  std::lock_guard<std::mutex> lock(mutex_);
  state_ = std::move(state);
  last_report_ = message::encode(report);
  if (channel_) channel_->queue(last_report_);
}

void Connection::finish(const message::Report& last, const std::string& reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  last_words_ = {message::encode(last), message::encode(message::Bye{reason, ""})};
  bool sent = channel_ != nullptr;
  for (const auto& line : last_words_) sent = sent && channel_->send(line);
  // The coordinator's word that the job ended then ends this worker. Words that did not go out
  // (the coordinator is away) go after the re-join instead, and so do words that went out to a
  // coordinator that died before that word (the connection closed without it).
  if (sent) leaving_ = true;
}

void Connection::unfinish() {
  std::lock_guard<std::mutex> lock(mutex_);
  last_words_.clear();
  leaving_ = false;
}

void Connection::mark_ready(const std::string& address, const std::string& probe, int threads) {
  ready_address_ = address;
  ready_probe_ = probe;
  ready_threads_ = threads;
  ready_ = true;
  send(message::Ready{address, probe, threads});
}

std::string Connection::open_probe(const std::string& address, const std::string& what) {
  probe_listener_ = std::make_unique<Listener>(address, 0, what);
  probe_ = probe_listener_.get();
  return Endpoint{address, probe_listener_->port()}.text();
}

std::optional<GenerationConfig> Connection::next_generation(std::int64_t after, std::string& why) {
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

std::optional<nlohmann::json> Connection::read_reply(LineChannel& channel, bool first) {
  std::optional<std::string> line;
  for (int i = 0; i < 120 && !line && !channel.closed(); ++i) {
    line = channel.read_line(0.25);
    // A notice that came as the reply did is for the admitted worker to honour (it says
    // goodbye, "preempted"): leaving here, with its admission unread, it was a worker lost
    // ("failed") to the coordinator, which had admitted it.
    if (!line && first && g_leave_signal != 0) throw LeftBeforeJoining{};
  }
  if (!line) {
    refusal_ = channel.closed() ? "it closed the connection before answering" : "no answer";
    return std::nullopt;
  }
  try {
    auto reply = message::parse_line(*line);
    if (reply.is_object()) return reply;
  } catch (const nlohmann::json::exception&) {
  } catch (const message::ProtocolError&) {
  }
  if (line->rfind("HTTP/", 0) == 0) {
    // The job's dashboard is the other port a coordinator prints: a likely mix-up.
    std::string status = line->substr(0, 60);
    while (!status.empty() && (status.back() == '\r' || status.back() == ' ')) status.pop_back();
    refusal_ = "it answered as a web server (\"" + status +
               "\"), such as the job's dashboard, not as its coordinator, whose address is on "
               "the coordinator's \"listening on\" line and in JOB/coordinator.json "
               "(\"front_door\")";
    return std::nullopt;
  }
  refusal_ = "it answered something else than a coordinator's reply";
  return std::nullopt;
}

Connection::Hello Connection::hello(LineChannel& channel, const nlohmann::json* rejoin) {
  const std::string nonce = new_nonce();
  nlohmann::json message = {{"hello", "transient-worker"},
                            {"version", kProtocolVersion},
                            {"worker", id_},
                            {"pid", static_cast<long>(::getpid())},
                            {"nonce", nonce}};
  if (rejoin != nullptr) message["rejoin"] = *rejoin;
  if (!channel.send(message)) {
    refusal_ = "the connection broke";
    return Hello::kClosed;
  }
  const auto challenge = read_reply(channel, rejoin == nullptr);
  if (!challenge) return channel.closed() ? Hello::kClosed : Hello::kNoAnswer;
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
    return Hello::kClosed;
  }
  const auto reply = read_reply(channel, rejoin == nullptr);
  if (!reply) return channel.closed() ? Hello::kClosed : Hello::kNoAnswer;
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

void Connection::handle(const message::ToWorker& received) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (const auto* reply = std::get_if<message::StoreReply>(&received)) {
    const auto& id = reply->reply.at("store_reply");
    if (const auto number = whole_number_in(id)) {
      if (auto it = calls_.find(*number); it != calls_.end()) it->second.reply = reply->reply;
    }
  } else if (const auto* ack = std::get_if<message::RowsAck>(&received)) {
    unacked_rows_.acknowledge(ack->last);
  } else if (const auto* chunk = std::get_if<message::ChunkOf>(&received)) {
    if (auto it = calls_.find(chunk->id); it != calls_.end()) {
      try {
        it->second.data += decode_store_value(chunk->data);
      } catch (const std::invalid_argument&) {
        it->second.reply = nlohmann::json{{"error", "a chunk that is not base64"}};
      }
    }
  } else if (const auto* generation = std::get_if<message::Generation>(&received)) {
    generations_.push_back(generation->config);
  } else if (const auto* signal = std::get_if<message::Signal>(&received)) {
    if (signal->what == "stop") {
      stop_gen_ = signal->gen;
    } else if (signal->what == "abort") {
      abort_gen_ = signal->gen;
    } else {
      change_gen_ = signal->gen;
    }
  } else if (const auto* left = std::get_if<message::Left>(&received)) {
    left_ = "the coordinator dropped this worker (" + left->reason + ")";
  } else if (std::holds_alternative<message::Finished>(received)) {
    left_ = "the job has ended";
  }
  changed_.notify_all();
}

void Connection::run() {
  const double interval = std::max(0.05, job_.options.heartbeat_timeout_s / 5);
  auto last_beat = Clock::now() - std::chrono::hours(1);
  std::int64_t beats = 0;
  while (!stopping_) {
    if (phase_ == Phase::kForming && signalled_long_ago()) {
      // A preemption notice while the group forms (peers that do not answer hold Gloo's
      // connect for up to its timeout): the worker holds nothing its peers do not, so it says
      // goodbye and goes now rather than when Gloo gives up.
      if (!quiet_) {
        print_line("transient worker %s: left the job while its group formed (%s)\n", id_.c_str(),
                   g_leave_signal == SIGINT ? "stopped" : "preempted");
      }
      channel_->send(
          message::encode(message::Bye{g_leave_signal == SIGINT ? "stopped" : "preempted", ""}));
      std::_Exit(0);
    }
    if (Listener* probe = probe_.load(); probe != nullptr) {
      std::string prober;
      for (int fd; (fd = probe->accept(prober)) >= 0;) ::close(fd);
    }
    if (seconds_since(last_beat) >= interval) {
      channel_->send(message::encode(message::Heartbeat{++beats, speed_.load()}));
      last_beat = Clock::now();
    }
    const auto line = channel_->read_line(interval / 2);
    if (line) {
      try {
        handle(message::decode_to_worker(message::parse_line(*line)));
      } catch (const nlohmann::json::exception&) {
        print_line("transient worker: ignored a line the coordinator sent\n");
      } catch (const message::ProtocolError& error) {
        print_line("transient worker %s: refused a message from the coordinator: %s\n", id_.c_str(),
                   error.what());
      }
      continue;
    }
    if (!channel_->closed() || stopping_) continue;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++channel_epoch_;  // store requests in flight on it fail now
      changed_.notify_all();
      // After its goodbye the close is the coordinator's (it closes the connection of a worker
      // that left), unless the goodbye was a done worker's last words: the coordinator tells
      // those that the job ended before it closes, so a close without that word is a coordinator
      // that died, perhaps before it read them. They are said again to a restarted one (a
      // worker took the close for the job's end, exited 0 saying the job had finished, and the
      // restarted coordinator waited for it).
      if (leaving_ && last_words_.empty() && left_.empty()) left_ = "the job has ended";
      if (!left_.empty()) {
        changed_.notify_all();
        return;
      }
    }
    reconnect();
  }
}

void Connection::reconnect() {
  const double wait_s = coordinator_wait_s_;
  const std::string wait_text = format_duration(wait_s);
  print_line(
      "transient worker %s: lost the coordinator; training goes on, "
      "re-connecting%s%s%s\n",
      id_.c_str(), wait_s > 0 ? " for up to " : "", wait_s > 0 ? wait_text.c_str() : "",
      wait_s > 0 ? " (--coordinator-wait)" : "");
  const auto lost = Clock::now();
  while (!stopping_) {
    if (wait_s > 0 && seconds_since(lost) >= wait_s) {
      std::lock_guard<std::mutex> lock(mutex_);
      left_ = "no coordinator at " + coordinator_.text() + " for " + wait_text +
              " (--coordinator-wait)";
      gave_up_ = true;
      changed_.notify_all();
      return;
    }
    std::shared_ptr<LineChannel> channel = LineChannel::connect(coordinator_, 0.25);
    if (channel) {
      nlohmann::json said;  // this worker's state as the hello tells it
      nlohmann::json state;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        said = state_;
        state = state_;
        // The last steps row it holds for the coordinator (sent again once admitted): the
        // coordinator logs when its records have caught up with it.
        if (state.is_object()) {
          state["rows_through"] = unacked_rows_.last();
        }
      }
      const auto answer = hello(*channel, &state);
      if (answer == Hello::kAdmitted) {
        // Installed only once admitted, so that no report goes out before the hello.
        channel->set_user_timeout(link_silence_hold_s(job_.options.heartbeat_timeout_s));
        std::lock_guard<std::mutex> lock(mutex_);
        channel_ = std::move(channel);
        // One that was waiting for its first generation says again that it is ready.
        if (state_.is_null() && ready_) {
          channel_->send(
              message::encode(message::Ready{ready_address_, ready_probe_, ready_threads_}));
        }
        rows_sent_through_ = 0;  // whatever was not acknowledged goes again
        send_rows_locked();
        for (const auto& event : unsent_events_) channel_->send(event);
        unsent_events_.clear();
        // The generation ended for this worker while the hello was under way: its report went
        // nowhere, and the hello said the state from before it.
        if (state_ != said && !last_report_.is_null()) channel_->send(last_report_);
        if (!last_words_.empty()) {  // it finished while the coordinator was away
          for (const auto& line : last_words_) channel_->send(line);
          leaving_ = true;
        }
        print_line("transient worker %s: re-joined the coordinator\n", id_.c_str());
        return;
      }
      if (answer == Hello::kRefused) {
        std::lock_guard<std::mutex> lock(mutex_);
        // Restarted or not (the link to it may only have been cut): the worker cannot tell.
        left_ = "the coordinator refused this worker's re-join: " + refusal_;
        changed_.notify_all();
        return;
      }
      // No answer: a dying coordinator's backlog, or a connection to ourselves; try again.
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
}

}  // namespace transient::train
