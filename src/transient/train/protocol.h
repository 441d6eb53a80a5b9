// The coordinator <-> worker protocol: JSON objects, one per line, over the worker's connection
// to the coordinator's front door (channel.h). The same connection carries the rendezvous of each
// generation's ProcessGroupGloo (keys under gen/<g>/pg, rendezvous_store.h): the job has one
// port, and nothing of it is reachable without the token.
//
// The handshake proves the job's token on both sides without sending it (token_proof.h):
//   worker -> {"hello":"transient-worker","version":3,"worker":ID or "","pid":P,"nonce":Nw}
//        (with "rejoin":{"gen":g,"reported":bool,"step":s,...} after the coordinator restarted)
//   coordinator -> {"challenge":Nc,"proof":HMAC(token, "coordinator:Nw:Nc")}
//   worker -> {"proof":HMAC(token, "worker:Nc:Nw")}, only if the coordinator's proof holds; else
//        {"bye":reason} and it closes (a stranger on the port learns nothing and is not believed)
//   coordinator -> {"admitted":...} or {"refused":reason}
// Before the worker's proof the coordinator reads at most 4 KiB a line from it; a hello of
// another version is dropped by name.
// Once a worker is admitted every message is one of messages.h's, with one encoder and one
// decoder each, and carries "v":3 besides the fields below; one of another version or name is
// refused by name and logged (`message_refused`).
// worker -> coordinator, once admitted
//   {"ready":true,"address":A,"probe":P}   data and model loaded: it can join a generation; its
//                                          peers reach it at A, and its probe port at P
//   {"store":OP,"id":n,...}                a rendezvous store request (rendezvous_store.h)
//   {"hb":n,"speed":samples/s}            heartbeat, every heartbeat timeout / 5
//   {"report":"failed"|"boundary","gen":g,"step":held,"attempted":a,"leaving":b,"reason":r,
//    "cause":c,"unreachable":[ids]}        the worker's part in generation g ended (held = -1:
//                                          it held no state yet; ids: the members whose probe it
//                                          could not reach, if the group could not form)
//   {"report":"grouped","gen":g}           rank 0: its process group exists
//   {"report":"formed"|"stepped","gen":g,"step":s}   rank 0: state agreed, first step done
//   {"report":"done","gen":g,"result":WorkerResult}  the job ended (finished or paused)
//   {"progress":ProgressReport}            rank 0, after every step
//   {"event":{...}}                        appended to events.jsonl (checkpoints, epochs)
//   {"bye":reason}                         before a planned exit (preempted, stopped)
// coordinator -> worker
//   {"admitted":ID,"job":JobConfig} or {"refused":reason}   the reply to the proof
//   {"generation":GenerationConfig}        the worker is a member of this generation
//   {"signal":"change"|"stop","gen":g}     to rank 0: end the generation at the next boundary
//   {"signal":"abort","gen":g}             to every member: a member was lost, leave generation g
//   {"store_reply":n,...}                  the reply to store request n
//   {"left":reason}                        the worker was dropped (silent, unreachable); it exits
//   {"finished":true}                      the job has ended
#pragma once

#include <algorithm>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "transient/train/trainer.h"

namespace transient::train {

// Version 2: the token is proven by a challenge-response (token_proof.h), never sent.
// Version 3: every message after the handshake is typed (messages.h) and carries "v".
constexpr int kProtocolVersion = 3;

// The largest step or step-like count a message may hold (a job has at most 1e9 steps): larger
// numbers from a peer are refused where they are read, before any arithmetic on them.
constexpr std::int64_t kMaxWireStep = 1'000'000'000'000;

// How long the two ends bear with silence from the other side of a link that may be cut: a
// coordinator that hears none of its workers at once holds them as members this long (its own
// link is the likelier cause), and a worker whose heartbeats its coordinator's host has not
// acknowledged this long takes the connection for broken (TCP_USER_TIMEOUT: a host that vanished
// without closing it, as a revoked server does, was otherwise known only when TCP gave up, about
// 15 minutes on Linux's defaults).
inline double link_silence_hold_s(double heartbeat_timeout_s) {
  return std::max(60.0, 12 * heartbeat_timeout_s);
}

// The step at `key` of a message (-1 .. kMaxWireStep), or `absent` when there is no such key;
// anything else throws nlohmann's type_error naming the key and the range (core/json_number.h).
std::int64_t step_or(const nlohmann::json& message, const char* key, std::int64_t absent);
std::int64_t step_at(const nlohmann::json& message, const char* key);

// What the coordinator's launcher read of the data set, which each worker's copy must match: a
// worker whose folder held fewer images indexed past its list (a crash), one with a class fewer
// trained a model of other shape. Zeros: not said (a peer of before), nothing checked.
struct DataFacts {
  std::int64_t train_samples = 0;  // the whole training set, before --train-subset
  std::int64_t channels = 0;       // of one image as trained
  std::int64_t height = 0;
  std::int64_t width = 0;
  std::int64_t classes = 0;
  std::int64_t test_samples = 0;  // the whole test set, before --test-subset (0: not said)
};

// As the job config and job.json hold them, and back (absent fields 0; a field that is no whole
// number >= 0 throws nlohmann::json's type_error).
nlohmann::json to_json(const DataFacts& data);
DataFacts data_facts_from_json(const nlohmann::json& json);
bool operator==(const DataFacts& a, const DataFacts& b);
// "540 training samples of 1x8x8 in 12 classes, 60 to test" (the test set where it is said).
std::string to_text(const DataFacts& data);

struct JobConfig {
  TrainOptions options;            // as given, job_dir resolved, threads resolved (>= 1)
  DataFacts data;                  // the data set as the launcher read it
  std::int64_t train_samples = 0;  // training set size
  std::int64_t total_steps = 0;    // steps of the whole job (from --steps or --epochs)
  std::int64_t warmup_steps = 0;   // of the learning-rate schedule
};

struct GenerationConfig {
  std::int64_t generation = 0;
  std::vector<std::string> members;  // worker ids; the index is the rank
  std::int64_t start_step = 0;       // steps completed in the state the members start from
  std::string checkpoint;            // file to load when no member holds the state ("" = fresh)
  std::int64_t checkpoint_bytes = 0;
  std::uint32_t checkpoint_crc32 = 0;
  std::vector<double> speeds;  // members' measured samples/s, in rank order (0 = unknown)
  // Seconds of training since the job's last checkpoint was taken, whoever took it: a periodic
  // checkpoint by time counts training, so membership changes do not put it off.
  double since_checkpoint_s = 0;
  // Each member's reachability probe, HOST:PORT in rank order ("" = unknown): a plain TCP port
  // on the address it advertises, which its peers try when their group could not form, so that
  // the member nobody can reach is named.
  std::vector<std::string> probes;
  // The learning rate's factor from here on: 1, halved by each rollback after a divergence.
  double lr_scale = 1;
};

struct ProgressReport {
  std::int64_t step = 0;          // steps completed
  std::int64_t epoch = 0;         // epoch of the last step (0-based)
  double loss = 0;                // training loss of the last step (mean over its global batch)
  double lr = 0;                  // learning rate of the last step
  double since_checkpoint_s = 0;  // seconds of training since the last checkpoint was taken
};

struct WorkerResult {
  std::int64_t step = 0;      // steps completed
  double test_accuracy = -1;  // of the final evaluation (-1 if there was none)
  double test_loss = -1;
  bool stopped = false;  // paused by request or --stop-at, not finished
};

nlohmann::json to_json(const JobConfig& config);
// Throws nlohmann::json's error for a missing or mistyped field, std::invalid_argument for an
// option's name not in its table (option_names.h).
JobConfig job_config_from_json(const nlohmann::json& json);
nlohmann::json to_json(const GenerationConfig& config);
GenerationConfig generation_config_from_json(const nlohmann::json& json);
nlohmann::json to_json(const ProgressReport& report);
ProgressReport progress_report_from_json(const nlohmann::json& json);
nlohmann::json to_json(const WorkerResult& result);
WorkerResult worker_result_from_json(const nlohmann::json& json);

std::string generation_prefix(std::int64_t generation);  // "gen/<g>/"

// The job's token as given in `text` (its file, --token or $TRANSIENT_TOKEN), without the blanks
// and line ends around it: a token pasted with a space was a wrong token. Throws InputError
// naming `source` if nothing is left.
std::string job_token(const std::string& text, const std::string& source);
// The job's token from its file (job_token). Throws InputError naming the file if it cannot be
// read or holds no token.
std::string read_token_file(const std::string& path);
// The job's own token file, as its coordinator reads it: read_token_file's, refused (naming the
// file) where other users may read or change it (any group or other permission) or where the
// token is shorter than 16 characters; a token file put in a job directory before the job was
// taken as it was, mode 0666 and 'x' alike, and with it the coordinator's port and dashboard.
std::string read_job_token_file(const std::string& path);

}  // namespace transient::train
