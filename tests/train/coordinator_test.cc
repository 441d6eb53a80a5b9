// The coordinator in this process, on real sockets, against the real worker connection
// (worker_connection.h) and a hand-made peer: what needs its timing, not a job's training.
#include "transient/train/coordinator.h"

#include <poll.h>

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/small_tmpfs.h"
#include "transient/core/error.h"
#include "transient/records/job_files.h"
#include "transient/train/channel.h"
#include "transient/train/checkpoint_directory.h"
#include "transient/train/checkpoint_record.h"
#include "transient/train/coordinator_journal.h"
#include "transient/train/event_log.h"
#include "transient/train/messages.h"
#include "transient/train/rendezvous_store.h"
#include "transient/train/token_proof.h"
#include "transient/train/worker_connection.h"

namespace transient::train {
namespace {

namespace fs = std::filesystem;

// A coordinator serving on a thread of its own (it is used by one thread) until destroyed.
class ServedCoordinator {
 public:
  // `workers`: generation 0's (more than come: none forms).
  // `sync_file`: how an uploaded checkpoint is synced (fsync when empty).
  ServedCoordinator(const std::string& dir, const std::string& token, int workers = 3,
                    double heartbeat_timeout_s = 300, std::function<int(int)> sync_file = {})
      : events_(dir + "/events.jsonl"),
        coordinator_(job(dir, heartbeat_timeout_s), token, options(workers, std::move(sync_file)),
                     events_, {}) {
    serving_ = std::thread([this] {
      while (!stop_) {
        if (paused_) {
          parked_ = true;
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
          continue;
        }
        parked_ = false;
        if (stop_requested_.exchange(false)) coordinator_.request_stop();
        if (!coordinator_.poll(0.005)) ended_ = true;
      }
    });
  }
  ~ServedCoordinator() {
    stop_ = true;
    if (serving_.joinable()) serving_.join();
  }
  std::string address() const { return coordinator_.address(); }
  // While paused it accepts and reads nothing: connections wait in its listener's queue. Pausing
  // returns once the serving thread is out of its poll: a connection made during a poll under
  // way was accepted after pause() had returned (a test expecting it queued waited 60 s for it).
  // Resuming returns once it has left its parking, so that a pause after it waits for a fresh one.
  void pause(bool paused) {
    paused_ = paused;
    while (parked_ != paused && !ended_) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  // Ctrl-C, as the launcher passes it on: on the serving thread, at its next poll.
  void request_stop() { stop_requested_ = true; }
  // How the job ended, once it has (its serving stops); nullopt if it does not within 30 s.
  std::optional<JobOutcome> outcome() {
    for (int i = 0; i < 3000 && !ended_; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (!ended_) return std::nullopt;
    stop_ = true;
    if (serving_.joinable()) serving_.join();
    return coordinator_.outcome();
  }

 private:
  static JobConfig job(const std::string& dir, double heartbeat_timeout_s) {
    JobConfig job;
    job.options.job_dir = dir;
    job.options.heartbeat_timeout_s = heartbeat_timeout_s;  // 300: hand-made peers send none
    job.train_samples = 100;
    job.total_steps = 10;
    return job;
  }
  static CoordinatorOptions options(int workers, std::function<int(int)> sync_file) {
    CoordinatorOptions options;
    options.sync_file = std::move(sync_file);
    options.dashboard = "off";
    options.initial_workers = workers;
    options.initial_wait_s = 300;
    options.identify_checkpoint = [](const std::vector<char>&, const std::string&) {
      return CheckpointIdentity{};
    };
    return options;
  }

  EventLog events_;
  Coordinator coordinator_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> paused_{false};
  std::atomic<bool> parked_{false};  // the serving thread has seen paused_ and polls no more
  std::atomic<bool> stop_requested_{false};
  std::atomic<bool> ended_{false};
  std::thread serving_;
};

// An empty directory for a job, `name` under the test's temporary directory.
std::string fresh_job_dir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/" + name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// Admits a hand-made worker on `channel`: the hello, the token's proof, the admission.
void admit(LineChannel& channel, const std::string& token) {
  const std::string nonce = new_nonce();
  ASSERT_TRUE(channel.send({{"hello", "transient-worker"},
                            {"version", kProtocolVersion},
                            {"worker", ""},
                            {"pid", 1},
                            {"nonce", nonce}}));
  const auto challenge = channel.read_line(30);
  ASSERT_TRUE(challenge.has_value());
  const auto theirs = nlohmann::json::parse(*challenge).at("challenge").get<std::string>();
  ASSERT_TRUE(channel.send({{"proof", token_proof(token, "worker", theirs, nonce)}}));
  const auto admitted = channel.read_line(30);
  ASSERT_TRUE(admitted.has_value());
  ASSERT_TRUE(nlohmann::json::parse(*admitted).contains("admitted")) << *admitted;
}

// A checkpoint of step 5 in the job in `dir`, random bytes, far more than the sockets' buffers
// hold (a few MiB on loopback), so that a peer's unread bytes stop the sending.
std::vector<char> write_large_checkpoint(const std::string& dir, std::uint32_t seed,
                                         CheckpointRecord& record) {
  fs::create_directories(records::JobFiles(dir).checkpoints());
  std::vector<char> bytes(24 << 20);
  std::mt19937 draw(seed);
  for (char& byte : bytes) byte = static_cast<char>(draw());
  record = CheckpointDirectory(records::JobFiles(dir).checkpoints(), 3)
               .write(5, std::string_view(bytes.data(), bytes.size()));
  return bytes;
}

// A hand-made worker admitted at `endpoint` that has asked for checkpoint `file` (as request 1)
// and received its first bytes; nullptr (and a failure) if it could not.
std::unique_ptr<LineChannel> fetching(const Endpoint& endpoint, const std::string& token,
                                      const std::string& file) {
  auto peer = LineChannel::connect(endpoint, 30);
  if (peer == nullptr) {
    ADD_FAILURE() << "cannot connect to the coordinator";
    return nullptr;
  }
  admit(*peer, token);
  if (!peer->send(message::encode(message::FetchCheckpoint{file, 1}))) {
    ADD_FAILURE() << "cannot ask for the checkpoint";
    return nullptr;
  }
  pollfd sending{peer->fd(), POLLIN, 0};
  if (::poll(&sending, 1, 30000) != 1) {
    ADD_FAILURE() << "the coordinator sent nothing of the checkpoint";
    return nullptr;
  }
  return peer;
}

// A worker that fetches a checkpoint and reads it slowly (here: not at all until another worker
// has fetched the same checkpoint) holds none of the coordinator's time: the other is admitted
// and served meanwhile, and the slow one then receives the whole checkpoint intact. The
// coordinator sent a checkpoint in one go on its one thread, and gave up on a peer that read
// nothing for 5 s, cutting its stream in the middle of a line (the slow one never got its reply).
TEST(CoordinatorCheckpoints, AWorkerReadingSlowlyHoldsNoneOfTheCoordinatorsTime) {
  const std::string dir = fresh_job_dir("coordinator_slow_fetch");
  CheckpointRecord record;
  const auto bytes = write_large_checkpoint(dir, 7, record);
  const std::string token = new_job_token();
  ServedCoordinator coordinator(dir, token);
  const auto endpoint = parse_endpoint(coordinator.address(), "the coordinator");
  auto slow = fetching(endpoint, token, record.file);
  ASSERT_NE(slow, nullptr);

  {
    Connection other(endpoint, token, "");
    const auto fetched = other.fetch_checkpoint(record);
    EXPECT_TRUE(fetched == bytes) << "the other worker's copy differs";
  }

  std::string received;
  nlohmann::json reply;
  while (reply.is_null()) {
    const auto line = slow->read_line(15);
    ASSERT_TRUE(line.has_value()) << "the slow worker's fetch ended after " << received.size()
                                  << " of " << bytes.size() << " bytes without a reply";
    const auto message = message::decode_to_worker(nlohmann::json::parse(*line));
    if (const auto* chunk = std::get_if<message::ChunkOf>(&message)) {
      ASSERT_EQ(chunk->id, 1);
      received += decode_store_value(chunk->data);
    } else if (const auto* answer = std::get_if<message::StoreReply>(&message)) {
      reply = answer->reply;
    }
  }
  EXPECT_EQ(reply.at("store_reply"), 1);
  EXPECT_EQ(reply.at("bytes"), record.bytes);
  EXPECT_EQ(reply.at("crc32"), record.crc32);
  EXPECT_TRUE(received == std::string(bytes.data(), bytes.size()))
      << "the slow worker's copy differs";
}

// A member that stops reading in the middle of a checkpoint it fetches (frozen, or its host cut
// off) holds none of the coordinator's time: what the coordinator says to it is queued behind the
// chunk, not waited for. Each reply to it held the coordinator's one thread 5 s, here 30 s in
// all, and every other worker waited (and was dropped as silent when heartbeats were due).
TEST(CoordinatorCheckpoints, AMemberThatStopsReadingMidFetchHoldsNoneOfTheCoordinatorsTime) {
  const std::string dir = fresh_job_dir("coordinator_stops_reading");
  CheckpointRecord record;
  write_large_checkpoint(dir, 11, record);
  const std::string token = new_job_token();
  ServedCoordinator coordinator(dir, token);
  const auto endpoint = parse_endpoint(coordinator.address(), "the coordinator");
  auto frozen = fetching(endpoint, token, record.file);
  ASSERT_NE(frozen, nullptr);
  // It reads no more, and asks for six replies.
  for (int id = 2; id < 8; ++id) {
    ASSERT_TRUE(frozen->send({{"store", "num_keys"}, {"id", id}, {"v", kProtocolVersion}}));
  }
  // Another worker is answered (refused: no generation runs), not kept waiting.
  Connection other(endpoint, token, "");
  try {
    other.store_call({{"store", "num_keys"}}, std::chrono::seconds(15));
  } catch (const std::exception& error) {
    EXPECT_NE(std::string(error.what()).find("the coordinator refused num_keys"), std::string::npos)
        << "the coordinator was held by the member that stopped reading: " << error.what();
  }
}

// An upload before any generation has formed sets nothing aside (a job with no rollback yet was
// taken for one rolled back from generation -1, and every checkpoint was renamed diverged-), and
// one of a step past the job's last is refused.
TEST(CoordinatorCheckpoints, AnUploadBeforeAnyGenerationSetsNothingAsideAndOnePastTheJobIsRefused) {
  const std::string dir = fresh_job_dir("coordinator_early_upload");
  fs::create_directories(records::JobFiles(dir).checkpoints());
  const std::vector<char> bytes(1000, 'x');
  CheckpointDirectory(records::JobFiles(dir).checkpoints(), 3)
      .write(5, std::string_view(bytes.data(), bytes.size()));
  const std::string token = new_job_token();
  ServedCoordinator coordinator(dir, token);  // a job of 10 steps; no generation forms
  Connection worker(parse_endpoint(coordinator.address(), "the coordinator"), token, "");
  const auto stored = worker.send_checkpoint(3, bytes);
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ(stored->file, "step-00000003.pt");
  try {
    worker.send_checkpoint(11, bytes);
    ADD_FAILURE() << "a checkpoint of step 11 of a job of 10 steps was stored";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("a checkpoint of step 11"), std::string::npos)
        << error.what();
  }
  // Listed after the second upload's answer, so after all the coordinator did on the first.
  const auto kept = CheckpointDirectory(records::JobFiles(dir).checkpoints(), 3).list();
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_EQ(kept.back().step, 5);
  EXPECT_TRUE(fs::exists(records::JobFiles(dir).checkpoints() + "/step-00000005.pt"));
}

// An uploaded checkpoint is synced to disk off the coordinator's one thread: while the sync of
// one worker's upload takes its time (held here until another worker has been answered; a
// large checkpoint's takes seconds on a busy disk), another worker is admitted and answered, and
// the uploader hears that its checkpoint is stored only once it has been synced and listed. The
// coordinator synced on its thread, and every worker waited for the disk.
TEST(CoordinatorCheckpoints, ASlowSyncOfAnUploadHoldsNoneOfTheCoordinatorsTime) {
  const std::string dir = fresh_job_dir("coordinator_slow_sync");
  fs::create_directories(records::JobFiles(dir).checkpoints());
  std::atomic<bool> syncing{false};
  std::atomic<bool> released{false};
  const auto held_sync = [&](int fd) {
    syncing = true;
    // Released by the test, or after 20 s whatever happens (a coordinator that waits for the
    // sync on its thread answers the other worker only then, after the upload's answer).
    for (int i = 0; i < 2000 && !released; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return ::fsync(fd) == 0 ? 0 : errno;
  };
  const std::string token = new_job_token();
  ServedCoordinator coordinator(dir, token, 3, 300, held_sync);
  const auto endpoint = parse_endpoint(coordinator.address(), "the coordinator");
  const std::vector<char> bytes(100000, 'y');
  Connection uploader(endpoint, token, "");
  std::atomic<bool> answered{false};
  std::optional<CheckpointRecord> stored;
  std::string refused;
  std::thread upload([&] {
    try {
      stored = uploader.send_checkpoint(4, bytes);
    } catch (const std::exception& error) {
      refused = error.what();
    }
    answered = true;
  });
  for (int i = 0; i < 3000 && !syncing; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(syncing) << "the upload was never synced";
  {
    Connection other(endpoint, token, "");
    try {
      other.store_call({{"store", "num_keys"}}, std::chrono::seconds(15));
    } catch (const std::exception& error) {
      EXPECT_NE(std::string(error.what()).find("the coordinator refused num_keys"),
                std::string::npos)
          << error.what();
    }
    EXPECT_FALSE(answered) << "the coordinator answered the other worker only after the sync";
    EXPECT_FALSE(fs::exists(records::JobFiles(dir).checkpoints() + "/step-00000004.pt"))
        << "listed before it was synced";
  }
  released = true;
  upload.join();
  ASSERT_TRUE(stored.has_value()) << refused;
  EXPECT_EQ(stored->file, "step-00000004.pt");
  const auto kept = CheckpointDirectory(records::JobFiles(dir).checkpoints(), 3).list();
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0].step, 4);
  EXPECT_EQ(kept[0].bytes, 100000);
}

// A hand-made member of the generation that forms at the coordinator at `endpoint`: admitted,
// ready, told of generation 0. Null (and a failure) if it was not.
std::unique_ptr<LineChannel> member(const Endpoint& endpoint, const std::string& token) {
  auto peer = LineChannel::connect(endpoint, 30);
  if (peer == nullptr) {
    ADD_FAILURE() << "cannot connect to the coordinator";
    return nullptr;
  }
  admit(*peer, token);
  peer->send(message::encode(message::Ready{"127.0.0.1:1", ""}));
  return peer;
}

// The next message to `peer` that has `key`; null if none came before the job's end.
nlohmann::json next_with(LineChannel& peer, const std::string& key) {
  while (const auto line = peer.read_line(30)) {
    auto message = nlohmann::json::parse(*line);
    if (message.contains(key)) return message;
    if (message.contains("finished")) break;
  }
  return nullptr;
}

// --on-divergence stop: the job stops once each member has said its last words. Rank 0 says
// them after the good states its writer holds are stored; the job ended at the first member's
// words, and rank 0's checkpoint on its way was cut off (its worker said "the coordinator is
// away").
TEST(CoordinatorCheckpoints, ADivergenceStopsTheJobAfterRankZerosCheckpointOnItsWay) {
  const std::string dir = fresh_job_dir("coordinator_divergence_stop");
  fs::create_directories(records::JobFiles(dir).checkpoints());
  const std::string token = new_job_token();
  ServedCoordinator coordinator(dir, token, 2);
  const auto endpoint = parse_endpoint(coordinator.address(), "the coordinator");
  auto rank0 = member(endpoint, token);
  auto rank1 = member(endpoint, token);
  ASSERT_TRUE(rank0 && rank1);
  const auto generation = next_with(*rank0, "generation");
  ASSERT_FALSE(generation.is_null());
  ASSERT_EQ(generation.at("generation").at("members"), nlohmann::json({"w0", "w1"}))
      << "the first admitted (and ready) is rank 0";
  ASSERT_FALSE(next_with(*rank1, "generation").is_null());
  message::Report diverged;
  diverged.kind = message::Report::Kind::kDiverged;
  diverged.gen = 0;
  diverged.step = 4;
  diverged.loss = "nan";
  ASSERT_TRUE(rank1->send(message::encode(diverged)));
  ASSERT_TRUE(rank1->send(message::encode(message::Bye{"stopped", ""})));
  // Rank 0's writer stores the state of step 3, then it says its words.
  const std::string bytes(1000, 'x');
  message::CheckpointPart part;
  part.id = 1;
  part.part = "begin";
  part.step = 3;
  part.bytes = static_cast<std::int64_t>(bytes.size());
  ASSERT_TRUE(rank0->send(message::encode(part)));
  part.part = "chunk";
  part.data = encode_store_value(bytes);
  ASSERT_TRUE(rank0->send(message::encode(part)));
  part.part = "end";
  part.data.clear();
  part.crc32 = crc32_of(bytes.data(), bytes.size());
  ASSERT_TRUE(rank0->send(message::encode(part)));
  const auto reply = next_with(*rank0, "store_reply");
  ASSERT_FALSE(reply.is_null()) << "the job ended before rank 0's checkpoint was stored";
  EXPECT_EQ(reply.value("file", ""), "step-00000003.pt") << reply.dump();
  ASSERT_TRUE(rank0->send(message::encode(diverged)));
  EXPECT_FALSE(next_with(*rank0, "finished").is_null());
  EXPECT_FALSE(next_with(*rank1, "finished").is_null());
  const auto kept = CheckpointDirectory(records::JobFiles(dir).checkpoints(), 3).list();
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept.back().step, 3);
}

// Ctrl-C once the job's last step is done (its final evaluation and checkpoint under way) finds
// it finished: the members' result says so, and the job was recorded as paused (exit 5, "continue
// with --resume"), whose resume started workers only to evaluate it again (review).
TEST(CoordinatorStop, AStopAskedForAfterTheLastStepLeavesTheJobFinished) {
  const std::string dir = fresh_job_dir("coordinator_stop_after_last");
  const std::string token = new_job_token();
  ServedCoordinator coordinator(dir, token, 1);
  const auto endpoint = parse_endpoint(coordinator.address(), "the coordinator");
  auto rank0 = member(endpoint, token);
  ASSERT_TRUE(rank0);
  ASSERT_FALSE(next_with(*rank0, "generation").is_null());
  message::Report formed;
  formed.kind = message::Report::Kind::kFormed;
  formed.gen = 0;
  formed.step = 0;
  ASSERT_TRUE(rank0->send(message::encode(formed)));
  coordinator.request_stop();
  ASSERT_FALSE(next_with(*rank0, "signal").is_null()) << "rank 0 was not told to stop";
  message::Report done;
  done.kind = message::Report::Kind::kDone;
  done.gen = 0;
  done.step = 10;  // the job's last
  done.result = WorkerResult{10, 0.75, 0.5, false};
  ASSERT_TRUE(rank0->send(message::encode(done)));
  const auto outcome = coordinator.outcome();
  ASSERT_TRUE(outcome.has_value()) << "the job did not end";
  EXPECT_EQ(outcome->failure, "");
  EXPECT_EQ(outcome->result.step, 10);
  EXPECT_FALSE(outcome->result.stopped);
  EXPECT_DOUBLE_EQ(outcome->result.test_accuracy, 0.75);
}

// The connections waiting to be accepted by the listening socket on `port`; -1 if there is none.
int accept_queue(std::uint16_t port) {
  const auto sockets = listening_sockets(port);
  return sockets.empty() ? -1 : sockets.front().accept_queue;
}

// A worker whose first connection the coordinator drops unanswered (it gives way to newer
// unproven connections when more than 8 come from one host at once) connects again and is
// admitted. It gave up, "did not admit this worker: no answer", and the job ran without it (a
// test sending garbage to the front door as two workers started saw it).
TEST(CoordinatorPeers, AWorkerDroppedUnansweredAmongManyConnectionsTriesAgainAndIsAdmitted) {
  const std::string dir = fresh_job_dir("coordinator_worker_evicted");
  const std::string token = new_job_token();
  ServedCoordinator coordinator(dir, token);
  const auto endpoint = parse_endpoint(coordinator.address(), "the coordinator");
  coordinator.pause(true);
  std::string admitted_as;
  std::string error;
  std::thread worker([&] {
    try {
      Connection connection(endpoint, token, "");
      admitted_as = connection.id();
    } catch (const std::exception& e) {
      error = e.what();
    }
  });
  // The worker's connection first in the queue, then eight more from the same host: accepted in
  // that order, the ninth gives way to the oldest unproven one, the worker's.
  const auto waiting = [&](int n) {
    for (int i = 0; i < 3000 && accept_queue(endpoint.port) < n; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return accept_queue(endpoint.port) >= n;
  };
  EXPECT_TRUE(waiting(1)) << "the worker did not connect";
  std::vector<std::unique_ptr<LineChannel>> idle;
  for (int i = 0; i < 8; ++i) idle.push_back(LineChannel::connect(endpoint, 30));
  EXPECT_TRUE(waiting(9));
  coordinator.pause(false);
  worker.join();
  EXPECT_EQ(error, "");
  EXPECT_EQ(admitted_as, "w0");
  std::ifstream events(dir + "/events.jsonl");
  const std::string logged((std::istreambuf_iterator<char>(events)),
                           std::istreambuf_iterator<char>());
  EXPECT_NE(logged.find("idle without a hello while newer connections wait"), std::string::npos)
      << "no connection gave way: the worker's was not tried again\n"
      << logged;
}

// On a full disk an event is appended whole or not at all: the part the disk took was left, and
// the file ended in half a line (the job's counts left it out, and the next event was glued to
// it). The disk is a 16 KiB tmpfs (root only).
// A worker whose line is still on its way (a checkpoint's chunk of 700 kB on a loaded machine;
// its heartbeats wait behind it) is heard from by its bytes: not dropped as silent while they
// keep coming. CI dropped rank 0 as silent, with a 2 s heartbeat timeout, as the upload of its
// final checkpoint ended.
TEST(CoordinatorPeers, AWorkerWhoseLongLineIsStillArrivingIsNotSilent) {
  const std::string dir = fresh_job_dir("coordinator_long_line");
  const std::string token(64, 'c');
  ServedCoordinator coordinator(dir, token, 2, 1.0);  // no generation forms: 2 are awaited
  auto peer = LineChannel::connect(parse_endpoint(coordinator.address(), "address"), 30);
  ASSERT_NE(peer, nullptr);
  admit(*peer, token);
  // A heartbeat with a long pad, sent in pieces for 2.5 heartbeat timeouts.
  const std::string head = R"({"heartbeat":1,"pad":")";
  ASSERT_EQ(::send(peer->fd(), head.data(), head.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(head.size()));
  const std::string piece(512, 'x');
  for (int i = 0; i < 25; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ASSERT_EQ(::send(peer->fd(), piece.data(), piece.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(piece.size()));
  }
  const std::string tail = "\"}\n";
  ASSERT_EQ(::send(peer->fd(), tail.data(), tail.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(tail.size()));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  std::ifstream in(dir + "/events.jsonl");
  const std::string events((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(events.find("worker_left"), std::string::npos) << events;
}

TEST(EventLog, AnEventTheDiskCannotHoldIsNotLeftHalfWritten) {
  const std::string dir = fresh_job_dir("event_log_full");
  const transient::testing::SmallTmpfs disk(dir, "16k");
  if (!disk.why_not().empty()) GTEST_SKIP() << disk.why_not();
  const std::string path = dir + "/events.jsonl";
  std::string error;
  {
    EventLog events(path);
    try {
      for (int i = 0; i < 10000; ++i) {
        events.append({{"event", "epoch"}, {"step", i}, {"note", std::string(100 + i % 37, 'x')}});
      }
    } catch (const InputError& full) {
      error = full.what();
    }
  }
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(error, path + ": cannot append: No space left on device");
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n');
  std::istringstream lines(text);
  int count = 0;
  for (std::string line; std::getline(lines, line); ++count) {
    EXPECT_NO_THROW(nlohmann::json::parse(line)) << line;
  }
  EXPECT_GT(count, 50);
}

// A log whose last line was cut short (a crash, a full disk) is ended before the next event: the
// event was appended to the cut line, and both were lost to its readers.
TEST(EventLog, ACutShortLastLineIsEndedBeforeTheNextEvent) {
  const std::string dir = fresh_job_dir("event_log_cut");
  const std::string path = dir + "/events.jsonl";
  std::ofstream(path) << "{\"t\":1.0,\"event\":\"epoch\"}\n{\"t\":9.1,\"time\":\"2026-11-30T13:5";
  {
    EventLog events(path);
    events.append({{"event", "coordinator_restarted"}});
  }
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[1], "{\"t\":9.1,\"time\":\"2026-11-30T13:5");
  EXPECT_EQ(nlohmann::json::parse(lines[2]).at("event"), "coordinator_restarted");
  {
    EventLog events(path);  // ended already: nothing added
    events.append({{"event", "epoch"}});
  }
  std::ifstream again(path);
  int count = 0;
  for (std::string line; std::getline(again, line);) ++count;
  EXPECT_EQ(count, 4);
}

// What an admitted worker may not say is garbage, logged and ignored, and the coordinator goes on:
// a line nested 100,000 deep (copying and writing it recursed once per level: 400,000 levels
// overflowed the coordinator's stack); an event of a kind workers do not send (a `done` with the
// accuracy it likes went into the records), or one naming another worker; and an event's own `t`
// and `time` do not replace the log's.
TEST(CoordinatorPeers, AWorkersNonsenseIsGarbageAndTheCoordinatorGoesOn) {
  const std::string dir = fresh_job_dir("coordinator_deep_line");
  const std::string token = new_job_token();
  ServedCoordinator coordinator(dir, token);
  auto peer = LineChannel::connect(parse_endpoint(coordinator.address(), "the coordinator"), 30);
  ASSERT_NE(peer, nullptr);
  admit(*peer, token);
  const int depth = 100000;
  const std::string deep = "{\"event\":{\"event\":\"epoch\",\"x\":" + std::string(depth, '[') +
                           std::string(depth, ']') + "},\"v\":" + std::to_string(kProtocolVersion) +
                           "}";
  const std::string bytes = deep + "\n";
  for (std::size_t sent = 0; sent < bytes.size();) {
    const ssize_t n = ::send(peer->fd(), bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    ASSERT_GT(n, 0) << "the coordinator stopped reading";
    sent += static_cast<std::size_t>(n);
  }
  ASSERT_TRUE(peer->send(
      {{"event", {{"event", "done"}, {"test_accuracy", 0.999}}}, {"v", kProtocolVersion}}));
  ASSERT_TRUE(
      peer->send({{"event", {{"event", "epoch"}, {"worker", "w9"}}}, {"v", kProtocolVersion}}));
  ASSERT_TRUE(
      peer->send({{"event", {{"event", "epoch"}, {"epoch", 1}, {"t", -1}, {"time", "1999"}}},
                  {"v", kProtocolVersion}}));
  // A steps row of a generation still to come (merged, it replaced every row of its step).
  ASSERT_TRUE(
      peer->send(message::encode(message::Rows{{"5,0,100,0.1,0.1,0.1,0.1,1.0,999999999,0"}, 1})));
  // It still answers the same worker.
  ASSERT_TRUE(peer->send({{"store", "num_keys"}, {"id", 7}, {"v", kProtocolVersion}}));
  std::optional<std::string> line;
  while ((line = peer->read_line(30))) {
    const auto reply = nlohmann::json::parse(*line);
    if (reply.contains("store_reply")) break;
  }
  ASSERT_TRUE(line.has_value()) << "the coordinator did not answer after the deep line";
  EXPECT_EQ(nlohmann::json::parse(*line).at("store_reply"), 7);
  std::ifstream events(dir + "/events.jsonl");
  const std::string logged((std::istreambuf_iterator<char>(events)),
                           std::istreambuf_iterator<char>());
  int garbage = 0;
  std::istringstream lines(logged);
  for (std::string line; std::getline(lines, line);) {
    const auto event = nlohmann::json::parse(line);
    garbage += event.at("event") == "garbage";
    EXPECT_NE(event.at("event"), "done") << line;
    EXPECT_FALSE(event.contains("worker") && event.at("worker") == "w9") << line;
    if (event.at("event") == "epoch") {
      EXPECT_GE(event.at("t").get<double>(), 0) << line;
      EXPECT_NE(event.at("time"), "1999") << line;
    }
  }
  EXPECT_EQ(garbage, 4) << logged;
  EXPECT_FALSE(fs::exists(records::JobFiles(dir).step_part("w0")));
}

// A report the coordinator cannot read drops its worker, where the generation waited for the
// report for ever (a worker's result of NaN figures, written as null, was refused as malformed).
TEST(CoordinatorPeers, AReportThatCannotBeReadDropsItsWorker) {
  const std::string dir = fresh_job_dir("coordinator_bad_report");
  const std::string token = new_job_token();
  ServedCoordinator coordinator(dir, token);
  auto peer = LineChannel::connect(parse_endpoint(coordinator.address(), "the coordinator"), 30);
  ASSERT_NE(peer, nullptr);
  admit(*peer, token);
  ASSERT_TRUE(peer->send(
      {{"report", "done"}, {"gen", 0}, {"result", {{"step", "many"}}}, {"v", kProtocolVersion}}));
  std::optional<std::string> line;
  std::string left;
  while ((line = peer->read_line(30))) {
    const auto said = nlohmann::json::parse(*line);
    if (said.contains("left")) {
      left = said.at("left").get<std::string>();
      break;
    }
  }
  EXPECT_EQ(left.rfind("its report could not be read: ", 0), 0u) << left;
  // Its leaving is logged once the coordinator's loop has acted on it (after the reply).
  std::string logged;
  for (int tries = 0; tries < 1000 && logged.find("\"worker_left\"") == std::string::npos;
       ++tries) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::ifstream events(dir + "/events.jsonl");
    logged.assign(std::istreambuf_iterator<char>(events), std::istreambuf_iterator<char>());
  }
  EXPECT_NE(logged.find("\"message_refused\""), std::string::npos) << logged;
  EXPECT_NE(logged.find("\"worker_left\""), std::string::npos) << logged;
}

// Strangers on ten hosts that say hello as fast as they can and never prove the token keep no
// worker out: the coordinator spared connections in the middle of their handshake for a second,
// so that they held every place and each new one, the worker's first, was the one that gave way
// (every worker that tried was refused "no answer").
TEST(CoordinatorPeers, StrangersThatSayHelloAndProveNothingKeepNoWorkerOut) {
  const std::string dir = fresh_job_dir("coordinator_hello_flood");
  const std::string token = new_job_token();
  ServedCoordinator coordinator(dir, token);
  const auto endpoint = parse_endpoint(coordinator.address(), "the coordinator");
  std::atomic<bool> flooding{true};
  std::atomic<int> opened{0};
  std::thread flood([&] {
    std::vector<int> held;
    for (int n = 0; flooding; ++n) {
      const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in from{};
      from.sin_family = AF_INET;
      from.sin_addr.s_addr = htonl(INADDR_LOOPBACK + 1 + n % 10);  // 127.0.0.2 .. 127.0.0.11
      sockaddr_in to{};
      to.sin_family = AF_INET;
      to.sin_port = htons(endpoint.port);
      to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      if (::bind(fd, reinterpret_cast<const sockaddr*>(&from), sizeof from) != 0 ||
          ::connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof to) != 0) {
        ::close(fd);
        continue;
      }
      const std::string hello = nlohmann::json{{"hello", "transient-worker"},
                                               {"version", kProtocolVersion},
                                               {"worker", ""},
                                               {"pid", 1},
                                               {"nonce", new_nonce()}}
                                    .dump() +
                                "\n";
      ::send(fd, hello.data(), hello.size(), MSG_NOSIGNAL);
      held.push_back(fd);
      ++opened;
      if (held.size() > 200) {
        ::close(held.front());
        held.erase(held.begin());
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    for (const int fd : held) ::close(fd);
  });
  while (opened < 100) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  int admitted = 0;
  for (int attempt = 0; attempt < 3; ++attempt) {
    try {
      Connection worker(endpoint, token, "");
      ++admitted;
    } catch (const std::exception& error) {
      ADD_FAILURE() << "a worker was kept out: " << error.what();
    }
  }
  flooding = false;
  flood.join();
  EXPECT_EQ(admitted, 3);
}

// A resumed job's ports are its journal's, found free when the job was prepared; another
// program (a test's, a browser's) may take one before the coordinator listens. Such a port gives
// way to any free port; one the user gave is refused as taken.
TEST(CoordinatorPorts, AJournalsPortTakenMeanwhileGivesWayAndAGivenOneIsRefused) {
  const std::string dir = fresh_job_dir("ports-taken");
  Listener front_door("127.0.0.1", 0, "the test's front door");
  Listener dashboard("127.0.0.1", 0, "the test's dashboard");
  JobConfig job;
  job.options.job_dir = dir;
  job.train_samples = 100;
  job.total_steps = 10;
  CoordinatorOptions options;
  options.port = front_door.port();
  options.dashboard = "127.0.0.1:" + std::to_string(dashboard.port());
  options.identify_checkpoint = [](const std::vector<char>&, const std::string&) {
    return CheckpointIdentity{};
  };
  EventLog events(dir + "/events.jsonl");
  const auto refusal = [&](const CoordinatorOptions& given) {
    try {
      Coordinator coordinator(job, new_job_token(), given, events, {});
      return std::string("none: listening on " + coordinator.address());
    } catch (const InputError& error) {
      return std::string(error.what());
    }
  };
  EXPECT_NE(refusal(options).find("--bind/--port"), std::string::npos) << refusal(options);
  auto only_the_dashboard = options;
  only_the_dashboard.port_or_another = true;
  EXPECT_NE(refusal(only_the_dashboard).find("--dashboard"), std::string::npos)
      << refusal(only_the_dashboard);

  options.port_or_another = true;
  options.dashboard_or_another = true;
  Coordinator coordinator(job, new_job_token(), options, events, {});
  EXPECT_NE(coordinator.address(), "127.0.0.1:" + std::to_string(front_door.port()));
  EXPECT_NE(coordinator.dashboard_address(), options.dashboard);
  EXPECT_EQ(coordinator.dashboard_address().rfind("127.0.0.1:", 0), 0u)
      << coordinator.dashboard_address();
}

// The journal is read as it is written, and a field that is not as written is refused naming the
// file and the field.
TEST(CoordinatorJournal, ReadsBackWhatItWroteAndRefusesWhatItWouldNotWrite) {
  CoordinatorJournal journal;
  journal.job.options.job_dir = "/jobs/a";
  journal.job.total_steps = 300;
  journal.front_door = "[fd00::5]:29400";
  journal.membership.generation = 4;
  journal.membership.members = {"w0", "w3"};
  journal.membership.next_worker = 5;
  journal.membership.recovery = elastic::JournaledRecovery{4, "preempted", {"w1"}, 120};
  journal.cost_usd = 1.25;
  journal.cost_at_s = 1796040000.5;
  journal.lr_scale = 0.5;
  journal.rollbacks = 1;
  journal.pid = 4242;
  journal.dashboard = "127.0.0.1:8080";
  const auto back = coordinator_journal_from_json(to_json(journal), "coordinator.json");
  EXPECT_EQ(to_json(back), to_json(journal));
  EXPECT_EQ(back.membership.recovery->lost, (std::vector<std::string>{"w1"}));
  EXPECT_EQ(back.job.total_steps, 300);

  auto refusal = [&](const char* key, const nlohmann::json& value) {
    auto json = to_json(journal);
    json[key] = value;
    try {
      coordinator_journal_from_json(json, "/jobs/a/coordinator.json");
      return std::string("accepted");
    } catch (const InputError& error) {
      return std::string(error.what());
    }
  };
  EXPECT_NE(refusal("lr_scale", 0).find("lr_scale 0 is not a learning-rate factor in (0, 1]"),
            std::string::npos);
  EXPECT_NE(refusal("cost_usd", -1).find("cost_usd -1 is not a cost in $"), std::string::npos);
  EXPECT_NE(refusal("cost_at", "now").find("cost_at \"now\" is not a time in UTC seconds"),
            std::string::npos);
  for (const auto& [key, value] :
       std::vector<std::pair<const char*, nlohmann::json>>{{"generation", "four"},
                                                           {"members", 3},
                                                           {"next_worker", -1},
                                                           {"ended", "no"},
                                                           {"rollbacks", 1.5},
                                                           {"pid", "x"},
                                                           {"front_door", nullptr}}) {
    const std::string why = refusal(key, value);
    EXPECT_EQ(why.rfind("/jobs/a/coordinator.json: not a coordinator journal: ", 0), 0u)
        << key << ": " << why;
  }
}

}  // namespace
}  // namespace transient::train
