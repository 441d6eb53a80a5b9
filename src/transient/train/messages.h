// The messages of the coordinator <-> worker protocol once a worker is admitted (protocol.h says
// when each is sent), each a struct with one encoder and one decoder, as leveldb's VersionEdit
// has one place that writes and reads its tags. On the wire a message is a JSON object, one per
// line, named by its first key ("hb", "report", "generation", ...) and carrying "v", the protocol
// version. A message of another version, or of a name the receiver does not know, or whose fields
// have the wrong types, is refused by name: decode() throws ProtocolError saying which message and
// what is accepted, and the receiver logs it and goes on.
//
// The handshake (hello, challenge, proof, admitted or refused) is protocol.h's and
// worker_connection.cc's; the rendezvous store's requests and replies keep the shapes of
// rendezvous_store.h and travel inside StoreRequest and StoreReply. Pure functions, safe to call
// from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "transient/train/protocol.h"

namespace transient::train::message {

class ProtocolError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// --- worker -> coordinator ---
// Data and model loaded: it can join a generation; peers reach it at `address`, its probe at
// `probe`.
struct Ready {
  std::string address;
  std::string probe;
  int threads = 0;  // its intra-op threads (0: not said, a peer of before)
};
struct Heartbeat {
  std::int64_t beat = 0;
  double speed_samples_per_s = 0;  // of forward+backward, as measured (0 = unknown)
};
// The worker's part in generation `gen`, or the job's state as it saw it.
struct Report {
  enum class Kind { kGrouped, kFormed, kStepped, kFailed, kBoundary, kDone, kFatal, kDiverged };
  Kind kind = Kind::kFailed;
  std::int64_t gen = -1;
  std::int64_t step = -1;       // held (failed, boundary), completed (formed, stepped, diverged)
  std::int64_t attempted = -1;  // the step it had started (failed, boundary; -1: = step)
  bool leaving = false;         // boundary: it goes
  std::string reason;           // why it goes (boundary, leaving)
  std::string cause;            // what ended its generation (failed)
  std::vector<std::string> unreachable;  // members whose probe it could not reach (failed)
  std::optional<WorkerResult> result;    // done
  std::string error;  // fatal: the job's error; failed: the collective's (e.g. Gloo's) words
  std::string loss;   // diverged: "nan", "inf", ...
};
struct Progress {
  ProgressReport report;
};
// A line for events.jsonl (an object with "event").
struct Event {
  nlohmann::json event;
};
// Before a planned exit: "preempted", "stopped"; or "misconfigured" with the error that kept
// this worker from starting (its own data or model file, which another worker may not share).
struct Bye {
  std::string reason;
  std::string error;
};
// Its rows of steps.csv since the last acknowledged, the last with sequence number `last`.
struct Rows {
  std::vector<std::string> rows;
  std::int64_t last = 0;
};
// A piece of a checkpoint it sends: "begin" (step, bytes), "chunk" (data, base64), "end" (crc32).
struct CheckpointPart {
  std::string part;
  std::int64_t id = 0;
  std::int64_t step = 0;
  std::int64_t bytes = 0;
  std::string data;
  std::uint32_t crc32 = 0;
};
struct FetchCheckpoint {
  std::string file;
  std::int64_t id = 0;
};
// A rendezvous store request in rendezvous_store.h's shape ({"store":OP,"id":n,...}).
struct StoreRequest {
  nlohmann::json request;
};
using ToCoordinator = std::variant<Ready, Heartbeat, Report, Progress, Event, Bye, Rows,
                                   CheckpointPart, FetchCheckpoint, StoreRequest>;

// --- coordinator -> worker ---
struct Generation {
  GenerationConfig config;
};
// "change" or "stop" (to rank 0: end the generation at the next boundary), "abort" (a member
// was lost: leave generation `gen`).
struct Signal {
  std::string what;
  std::int64_t gen = 0;
};
// The reply to store request or upload `id` ({"store_reply":n,...}: error, file, bytes, ...).
struct StoreReply {
  nlohmann::json reply;
};
struct RowsAck {
  std::int64_t last = 0;
};
// A piece of a checkpoint the worker fetches (data: base64).
struct ChunkOf {
  std::int64_t id = 0;
  std::string data;
};
// The worker was dropped (silent, unreachable: ...): it exits.
struct Left {
  std::string reason;
};
struct Finished {};
using ToWorker = std::variant<Generation, Signal, StoreReply, RowsAck, ChunkOf, Left, Finished>;

// A line a peer sent, as JSON, nested at most kMaxDepth deep. Throws ProtocolError for a deeper
// one (copying and writing such a value recurse once per level: a line of 400,000 brackets
// overflowed the coordinator's stack), nlohmann::json's parse_error for one that is no JSON. A
// checkpoint's chunk as to_line() (channel.h) writes it is read in one pass, to the same value.
inline constexpr int kMaxDepth = 32;
nlohmann::json parse_line(const std::string& line);

nlohmann::json encode(const ToCoordinator& message);
nlohmann::json encode(const ToWorker& message);
// Throws ProtocolError naming the message (or the names accepted) when it cannot be read.
ToCoordinator decode_to_coordinator(const nlohmann::json& message);
ToWorker decode_to_worker(const nlohmann::json& message);

// Row text per Rows message at most (a row is at most 512 bytes, so that even escaped as JSON
// at six bytes a character a message stays under the channel's 1 MiB line).
inline constexpr std::size_t kRowsBatchBytes = 128 * 1024;

// The steps.csv rows a worker keeps until its coordinator says it has written them, numbered
// from 1, back to back in one buffer. Kept as a string each (a row a step, for as long as the
// coordinator is away or cut off), they split the heap's free space between the step's tensors,
// and a worker whose coordinator's link was cut for 40 s grew by gigabytes.
class RowBacklog {
 public:
  explicit RowBacklog(std::size_t max_rows = 1000000) : max_rows_(max_rows) {}
  // Keeps `row` (the oldest is dropped beyond max_rows); returns its number.
  std::int64_t add(std::string_view row);
  // The coordinator has written the rows through number `through`.
  void acknowledge(std::int64_t through);
  bool empty() const { return first_ == entries_.size(); }
  std::size_t size() const { return entries_.size() - first_; }
  // The number of the newest row kept (0 if none). Rows kept have consecutive numbers.
  std::int64_t last() const { return empty() ? 0 : entries_.back().seq; }
  // The rows after number `after`, as Rows messages of at most `max_bytes` of row text each (a
  // longer row goes alone), in order: a worker's backlog (the rows it trained while its
  // coordinator was away) reaches the restarted coordinator in lines its channel takes, however
  // long the backlog grew.
  std::vector<Rows> batches_after(std::int64_t after,
                                  std::size_t max_bytes = kRowsBatchBytes) const;

 private:
  struct Entry {
    std::int64_t seq;
    std::size_t end;  // in text_
  };
  std::size_t begin_of(std::size_t i) const {
    return i == first_ ? text_begin_ : entries_[i - 1].end;
  }
  // Drops what was acknowledged from the front of the buffers, in place.
  void compact();

  std::size_t max_rows_;
  std::string text_;
  std::vector<Entry> entries_;
  std::size_t first_ = 0;       // the oldest row kept
  std::size_t text_begin_ = 0;  // ... where its text begins
  std::int64_t next_ = 1;
};

// "report", "hb", ...: the name of a message as it appears on the wire ("" if none is known).
std::string name_of(const nlohmann::json& message);

}  // namespace transient::train::message
