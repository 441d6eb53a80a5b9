// The protocol's messages: every one comes back from its encoder through its decoder as it went
// in, and what a receiver cannot read is refused by name.
#include "transient/train/messages.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <deque>
#include <limits>
#include <stdexcept>
#include <string>

#include "transient/core/atomic_file.h"
#include "transient/core/error.h"
#include "transient/train/channel.h"
#include "transient/train/option_fields.h"
#include "transient/train/option_names.h"
#include "transient/train/protocol.h"
#include "transient/train/rendezvous_store.h"

namespace transient::train::message {
namespace {

template <typename T, typename Variant, typename Decode>
T round_trip(const T& sent, Decode decode) {
  const nlohmann::json wire = encode(Variant{sent});
  EXPECT_EQ(wire.at("v"), kProtocolVersion) << wire.dump();
  // Through text, as on the connection.
  const Variant received = decode(nlohmann::json::parse(wire.dump()));
  EXPECT_TRUE(std::holds_alternative<T>(received)) << wire.dump();
  return std::get<T>(received);
}

template <typename T>
T to_coordinator(const T& sent) {
  return round_trip<T, ToCoordinator>(sent, decode_to_coordinator);
}
template <typename T>
T to_worker(const T& sent) {
  return round_trip<T, ToWorker>(sent, decode_to_worker);
}

TEST(Messages, EveryMessageToTheCoordinatorComesBackAsSent) {
  EXPECT_EQ(to_coordinator(Ready{"10.0.0.2", "10.0.0.2:4000"}).probe, "10.0.0.2:4000");
  EXPECT_EQ(to_coordinator(Ready{"10.0.0.2", "10.0.0.2:4000"}).threads, 0);  // not said
  EXPECT_EQ(to_coordinator(Ready{"10.0.0.2", "10.0.0.2:4000", 6}).threads, 6);
  const auto beat = to_coordinator(Heartbeat{7, 812.5});
  EXPECT_EQ(beat.beat, 7);
  EXPECT_EQ(beat.speed_samples_per_s, 812.5);
  Report failed;
  failed.kind = Report::Kind::kFailed;
  failed.gen = 3;
  failed.step = 40;
  failed.attempted = 41;
  failed.leaving = true;
  failed.reason = "preempted";
  failed.cause = "preempted";
  failed.unreachable = {"w2"};
  failed.error = "Connection reset by peer";
  const auto report = to_coordinator(failed);
  EXPECT_EQ(report.kind, Report::Kind::kFailed);
  EXPECT_EQ(report.gen, 3);
  EXPECT_EQ(report.step, 40);
  EXPECT_EQ(report.attempted, 41);
  EXPECT_TRUE(report.leaving);
  EXPECT_EQ(report.unreachable, std::vector<std::string>{"w2"});
  EXPECT_EQ(report.error, "Connection reset by peer");
  Report done;
  done.kind = Report::Kind::kDone;
  done.gen = 4;
  done.step = 100;
  done.result = WorkerResult{100, 0.91, 0.3, true};
  const auto finished = to_coordinator(done);
  EXPECT_EQ(finished.step, 100);  // the state it holds: a survivor's, should rank 0 be lost
  ASSERT_TRUE(finished.result.has_value());
  EXPECT_EQ(finished.result->step, 100);
  EXPECT_TRUE(finished.result->stopped);
  // Figures that are not finite go as null and come back as NaN: a test set none of whose
  // samples could be read (0/0), a model whose scores overflow on one sample (an infinite loss).
  // The result was refused as malformed and the job waited for it for ever.
  done.result = WorkerResult{100, std::nan(""), std::numeric_limits<double>::infinity(), false};
  const auto unreadable = to_coordinator(done);
  ASSERT_TRUE(unreadable.result.has_value());
  EXPECT_TRUE(std::isnan(unreadable.result->test_accuracy));
  EXPECT_TRUE(std::isnan(unreadable.result->test_loss));
  Report diverged;
  diverged.kind = Report::Kind::kDiverged;
  diverged.gen = 1;
  diverged.step = 9;
  diverged.loss = "inf";
  EXPECT_EQ(to_coordinator(diverged).loss, "inf");
  Report fatal;
  fatal.kind = Report::Kind::kFatal;
  fatal.error = "disk full";
  EXPECT_EQ(to_coordinator(fatal).error, "disk full");
  EXPECT_EQ(to_coordinator(Progress{ProgressReport{12, 1, 0.5, 0.1, 3.5}}).report.step, 12);
  EXPECT_EQ(to_coordinator(Event{{{"event", "epoch"}, {"epoch", 2}}}).event.at("epoch"), 2);
  EXPECT_EQ(to_coordinator(Bye{"stopped", ""}).reason, "stopped");
  EXPECT_EQ(to_coordinator(Bye{"stopped", ""}).error, "");
  const Bye misconfigured = to_coordinator(Bye{"misconfigured", "data: no such directory"});
  EXPECT_EQ(misconfigured.reason, "misconfigured");
  EXPECT_EQ(misconfigured.error, "data: no such directory");
  const auto rows = to_coordinator(Rows{{"1,2,3", "4,5,6"}, 9});
  EXPECT_EQ(rows.rows.size(), 2U);
  EXPECT_EQ(rows.last, 9);
  CheckpointPart begin;
  begin.part = "begin";
  begin.id = 5;
  begin.step = 200;
  begin.bytes = 1 << 20;
  EXPECT_EQ(to_coordinator(begin).bytes, 1 << 20);
  CheckpointPart end;
  end.part = "end";
  end.id = 5;
  end.crc32 = 0xdeadbeef;
  EXPECT_EQ(to_coordinator(end).crc32, 0xdeadbeefU);
  EXPECT_EQ(to_coordinator(FetchCheckpoint{"step-200.pt", 6}).file, "step-200.pt");
  const auto store = to_coordinator(StoreRequest{{{"store", "get"}, {"id", 1}, {"keys", {"k"}}}});
  EXPECT_EQ(store.request.at("store"), "get");
  EXPECT_FALSE(store.request.contains("v")) << "the store sees its own shape";
}

TEST(Messages, EveryMessageToAWorkerComesBackAsSent) {
  GenerationConfig config;
  config.generation = 6;
  config.members = {"w0", "w3"};
  config.start_step = 77;
  EXPECT_EQ(to_worker(Generation{config}).config.members, config.members);
  const auto signal = to_worker(Signal{"abort", 6});
  EXPECT_EQ(signal.what, "abort");
  EXPECT_EQ(signal.gen, 6);
  EXPECT_EQ(to_worker(StoreReply{{{"store_reply", 3}, {"file", "x"}}}).reply.at("file"), "x");
  EXPECT_EQ(to_worker(RowsAck{41}).last, 41);
  EXPECT_EQ(to_worker(ChunkOf{2, "QUJD"}).data, "QUJD");
  EXPECT_EQ(to_worker(Left{"silent"}).reason, "silent");
  to_worker(Finished{});
}

// A checkpoint's chunks (hundreds of KiB of base64 each) are written and read past nlohmann's
// character-at-a-time serializer and lexer; the lines are the serializer's byte for byte, and read
// back to the value its parser gives. Any other spelling of them is the parser's to read.
TEST(Messages, ACheckpointsChunksAreTheLinesTheSerializerWritesAndReadAsItsParserReads) {
  std::string bytes(300 * 1024, '\0');
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>((i * 7919) >> 3);
  CheckpointPart part;
  part.part = "chunk";
  part.id = 12;
  part.data = encode_store_value(bytes);
  for (const nlohmann::json& wire :
       {encode(ToCoordinator{part}), encode(ToWorker{ChunkOf{40, part.data}})}) {
    const std::string line = to_line(wire);
    EXPECT_EQ(line, wire.dump());
    const nlohmann::json read = parse_line(line);
    EXPECT_EQ(read, nlohmann::json::parse(line));
    EXPECT_EQ(read.at("data").get_ref<const std::string&>(), part.data);
  }
  EXPECT_EQ(
      decode_store_value(
          std::get<CheckpointPart>(decode_to_coordinator(parse_line(to_line(encode(part))))).data),
      bytes);
  // Other lines with long strings are still the serializer's byte for byte: characters JSON
  // escapes or checks, nesting, several long members.
  const std::string long_plain(5000, 'x');
  for (const nlohmann::json& other : {
           nlohmann::json{{"a", long_plain + "\"quoted\""}, {"b", 1}},
           nlohmann::json{{"a", long_plain + "back\\slash"}},
           nlohmann::json{{"a", long_plain + "\n"}, {"z", long_plain}},
           nlohmann::json{{"a", long_plain + "\xc3\xa9t\xc3\xa9"}},
           nlohmann::json{{"a", {{"b", long_plain}}}, {"c", long_plain}, {"d", nullptr}},
           nlohmann::json::array({long_plain}),
       }) {
    EXPECT_EQ(to_line(other), other.dump());
  }
  // The chunk spelled otherwise (spaces, an escape, members in another order, a number with a
  // leading zero, something after it) reads as the parser reads it, or is refused as it is.
  for (const char* spelled : {
           "{\"checkpoint\": \"chunk\",\"data\":\"QUJD\",\"id\":3,\"v\":3}",
           "{\"checkpoint\":\"chunk\",\"data\":\"QU\\u004aD\",\"id\":3,\"v\":3}",
           "{\"data\":\"QUJD\",\"checkpoint\":\"chunk\",\"id\":3,\"v\":3}",
           "{\"checkpoint\":\"chunk\",\"data\":\"QUJD\",\"id\":3,\"v\":3,\"x\":1}",
           "{\"chunk_of\":3,\"data\":\"QUJD\",\"v\":3} ",
       }) {
    EXPECT_EQ(parse_line(spelled), nlohmann::json::parse(spelled)) << spelled;
  }
  for (const char* broken : {
           "{\"checkpoint\":\"chunk\",\"data\":\"QUJD\",\"id\":03,\"v\":3}",
           "{\"checkpoint\":\"chunk\",\"data\":\"QUJD\",\"id\":3,\"v\":3}}",
           "{\"chunk_of\":3,\"data\":\"QUJD\",\"v\":3",
           "{\"chunk_of\":3,\"data\":\"QU\tJD\",\"v\":3}",
       }) {
    EXPECT_THROW(parse_line(broken), nlohmann::json::parse_error) << broken;
  }
}

std::string refusal(const nlohmann::json& message, bool to_coordinator = true) {
  try {
    if (to_coordinator) {
      decode_to_coordinator(message);
    } else {
      decode_to_worker(message);
    }
  } catch (const ProtocolError& error) {
    return error.what();
  }
  return "";
}

// A worker's rows of a coordinator's absence (about 68 bytes a step: a minute of a fast job is
// over 15,000) go in Rows lines the coordinator's channel takes, in order, each saying its last
// row; sent as one line they passed 1 MiB, and the re-joining worker was dropped as garbage.
TEST(Messages, ABacklogOfRowsGoesInLinesTheCoordinatorTakes) {
  RowBacklog backlog;
  std::vector<std::string> rows;
  for (std::int64_t seq = 1; seq <= 20000; ++seq) {
    rows.push_back("0," + std::to_string(seq) + ",1,0.0123,0.0456,0.0012,2.3026,128," +
                   std::string(20, '7'));
    EXPECT_EQ(backlog.add(rows.back()), seq);
  }
  const auto batches = backlog.batches_after(0);
  ASSERT_GT(batches.size(), 1u);
  std::int64_t next = 1;
  for (const auto& batch : batches) {
    EXPECT_LT(encode(ToCoordinator{batch}).dump().size() + 1, LineChannel::kMaxLine);
    ASSERT_FALSE(batch.rows.empty());
    for (const auto& row : batch.rows) EXPECT_EQ(row, rows[next++ - 1]);
    EXPECT_EQ(batch.last, next - 1);
  }
  EXPECT_EQ(next, 20001);
  // What was sent already is not sent again; a row longer than a batch goes alone.
  const auto tail = backlog.batches_after(19990);
  ASSERT_EQ(tail.size(), 1u);
  EXPECT_EQ(tail[0].rows.size(), 10u);
  EXPECT_EQ(tail[0].last, 20000);
  EXPECT_TRUE(backlog.batches_after(20000).empty());
  RowBacklog mixed;
  for (const std::string& row : {std::string("a"), std::string(100, 'b'), std::string("c")}) {
    mixed.add(row);
  }
  const auto long_rows = mixed.batches_after(0, 50);
  ASSERT_EQ(long_rows.size(), 3u);
  EXPECT_EQ(long_rows[1].rows, std::vector<std::string>{std::string(100, 'b')});
  EXPECT_EQ(long_rows[2].last, 3);
}

// Rows the coordinator acknowledged are forgotten, the others kept in order and numbered on, in
// the one buffer (compacted in place), and beyond its bound the oldest go.
TEST(Messages, ARowBacklogForgetsWhatWasAcknowledgedAndKeepsItsBound) {
  RowBacklog backlog(10000);
  for (int i = 1; i <= 9000; ++i) backlog.add("row " + std::to_string(i));
  backlog.acknowledge(6000);  // compacted: more than half acknowledged
  EXPECT_EQ(backlog.size(), 3000u);
  auto batches = backlog.batches_after(0);
  ASSERT_FALSE(batches.empty());
  EXPECT_EQ(batches.front().rows.front(), "row 6001");
  EXPECT_EQ(batches.back().rows.back(), "row 9000");
  for (int i = 9001; i <= 14000; ++i) backlog.add("row " + std::to_string(i));
  EXPECT_EQ(backlog.size(), 8000u);
  backlog.acknowledge(100);  // nothing new
  EXPECT_EQ(backlog.size(), 8000u);
  for (int i = 14001; i <= 17000; ++i) backlog.add("row " + std::to_string(i));
  EXPECT_EQ(backlog.size(), 10000u) << "the bound";
  batches = backlog.batches_after(0);
  EXPECT_EQ(batches.front().rows.front(), "row 7001");
  EXPECT_EQ(backlog.last(), 17000);
  backlog.acknowledge(17000);
  EXPECT_TRUE(backlog.empty());
  EXPECT_EQ(backlog.last(), 0);
  EXPECT_EQ(backlog.add("row 17001"), 17001);
  EXPECT_EQ(backlog.batches_after(0).front().rows, std::vector<std::string>{"row 17001"});
}

// A string that is not UTF-8 (a file name as the file system has it) goes as U+FFFD: the
// serializer threw on it, and a worker's word of an image it skipped ended the job.
TEST(Messages, BytesThatAreNotUtf8GoAsReplacementCharacters) {
  const std::string name = "cat/\xff\xfe.jpg";
  for (const nlohmann::json& message :
       {nlohmann::json{{"event", "image_skipped"}, {"file", name}},
        nlohmann::json{{"event", "image_skipped"}, {"file", name + std::string(5000, 'x')}},
        nlohmann::json{{"\xff", 1}}}) {
    std::string line;
    ASSERT_NO_THROW(line = to_line(message));
    const nlohmann::json read = parse_line(line);
    EXPECT_NE(read.dump().find("\xef\xbf\xbd"), std::string::npos) << line;
  }
}

TEST(Messages, WhatCannotBeReadIsRefusedByName) {
  EXPECT_EQ(refusal({{"teleport", 1}, {"v", kProtocolVersion}}),
            "a message named \"teleport\", which this coordinator does not know (it knows "
            "ready, hb, report, progress, event, bye, rows, checkpoint, fetch_checkpoint, store)");
  EXPECT_EQ(refusal({{"hb", 1}, {"v", 2}}),
            "a \"hb\" message of protocol version 2; this coordinator speaks version 3");
  // 2^32 + 3 is no version 3 (an int's conversion took it for one).
  EXPECT_EQ(refusal(nlohmann::json::parse(R"({"hb": 1, "v": 4294967299})")),
            "a \"hb\" message of protocol version 4294967299; this coordinator speaks version 3");
  EXPECT_EQ(refusal({{"hb", 1}}),
            "a \"hb\" message of protocol version none; this coordinator speaks version 3");
  EXPECT_EQ(refusal({{"report", "exploded"}, {"gen", 1}, {"v", kProtocolVersion}}),
            "a report \"exploded\", which is none of grouped, formed, stepped, failed, boundary, "
            "done, fatal, diverged");
  EXPECT_NE(refusal({{"report", "failed"}, {"gen", "one"}, {"v", kProtocolVersion}})
                .find("a malformed \"report\" message"),
            std::string::npos);
  EXPECT_NE(refusal({{"rows", {1, 2}}, {"v", kProtocolVersion}}).find("a malformed \"rows\""),
            std::string::npos);
  EXPECT_NE(refusal({{"ready", true}, {"threads", 5000}, {"v", kProtocolVersion}})
                .find("a malformed \"ready\" message"),
            std::string::npos);
  EXPECT_EQ(refusal({{"event", 5}, {"v", kProtocolVersion}}),
            "an \"event\" message whose event is not an object with \"event\"");
  EXPECT_EQ(refusal({{"hb", 1}, {"v", kProtocolVersion}}, false),
            "a message named \"hb\", which this worker does not know (it knows generation, "
            "signal, store_reply, rows_ack, chunk_of, left, finished)");
  EXPECT_EQ(refusal(nlohmann::json::array()),
            "a message with no name, which this coordinator "
            "does not know (it knows ready, hb, report, "
            "progress, event, bye, rows, checkpoint, "
            "fetch_checkpoint, store)");
}

// A count that is no whole number an int64 holds (a float, 1e300, 2^64) is refused by name,
// never converted: converting 1e300 was undefined behaviour (protocol_message_fuzz found it).
TEST(Messages, ACountThatIsNoWholeNumberIsRefusedNotConverted) {
  EXPECT_NE(refusal({{"report", "formed"}, {"gen", 1e300}, {"v", kProtocolVersion}})
                .find("a malformed \"report\" message ([json.exception.type_error.302] \"gen\" "
                      "must be a whole number from -9223372036854775808 to "
                      "9223372036854775807, not 1e+300)"),
            std::string::npos);
  EXPECT_NE(refusal({{"hb", 2.5}, {"v", kProtocolVersion}}).find("\"hb\" must be a whole number"),
            std::string::npos);
  EXPECT_NE(
      refusal({{"rows_ack", std::numeric_limits<std::uint64_t>::max()}, {"v", kProtocolVersion}},
              false)
          .find("\"rows_ack\" must be a whole number"),
      std::string::npos);
  // Steps are bounded where they are read (-1 .. 1e12): a report of step 2^63 - 1 reached the
  // membership's recovery arithmetic (attempted - (step - 1)) and overflowed it.
  EXPECT_NE(refusal({{"report", "failed"},
                     {"gen", 1},
                     {"attempted", std::numeric_limits<std::int64_t>::max()},
                     {"v", kProtocolVersion}})
                .find("\"attempted\" must be a whole number from -1 to 1000000000000"),
            std::string::npos);
  EXPECT_NE(refusal({{"report", "stepped"}, {"gen", 1}, {"step", -2}, {"v", kProtocolVersion}})
                .find("\"step\" must be a whole number from -1 to 1000000000000, not -2"),
            std::string::npos);
  ProgressReport progress;
  progress.step = kMaxWireStep;
  auto progress_json = to_json(progress);
  EXPECT_EQ(progress_report_from_json(progress_json).step, kMaxWireStep);
  progress_json["step"] = kMaxWireStep + 1;
  EXPECT_THROW(progress_report_from_json(progress_json), nlohmann::json::type_error);
  auto generation = to_json(GenerationConfig{});
  generation["checkpoint_crc32"] = -1;
  EXPECT_NE(refusal({{"generation", generation}, {"v", kProtocolVersion}}, false)
                .find("\"checkpoint_crc32\" must be a whole number from 0 to 4294967295"),
            std::string::npos);
  // The job's config (the admission, the journal) reads its counts the same way.
  JobConfig job;
  job.options.steps = 10;
  auto config = to_json(job);
  EXPECT_EQ(job_config_from_json(config).options.steps, 10);
  config["steps"] = 1e300;
  EXPECT_THROW(job_config_from_json(config), nlohmann::json::type_error);
  config["steps"] = 10;
  config["seed"] = -1;
  EXPECT_THROW(job_config_from_json(config), nlohmann::json::type_error);
}

// The options that take a name: each value's name reads back as the value, a name not in the
// table is none, and the job's config carries them to a worker as names; one it does not know
// is refused naming the option, the name and those accepted.
template <typename E>
void expect_names_read_back(const std::vector<std::string>& names) {
  std::vector<std::string> seen;
  for (const auto& [name, value] : option_names<E>()) {
    seen.push_back(name);
    EXPECT_EQ(name_of(value), name);
    EXPECT_EQ(parse_name<E>(name), value) << name;
  }
  EXPECT_EQ(seen, names);
  EXPECT_EQ(parse_name<E>("nonsense"), std::nullopt);
  EXPECT_EQ(parse_name<E>(""), std::nullopt);
}

// A token pasted with a space or a line end before it was a wrong token (only trailing blanks
// were dropped, and only from the file); the blanks around a token are no part of it, wherever
// it is given.
TEST(JobToken, BlanksAroundTheTokenAreNoPartOfIt) {
  EXPECT_EQ(job_token(" \t0123abcd\n", "--token"), "0123abcd");
  const std::string path = ::testing::TempDir() + "/job_token_blanks";
  write_file_atomically(path, "\n  0123abcd \r\n");
  EXPECT_EQ(read_token_file(path), "0123abcd");
  try {
    job_token(" \n", "--token");
    FAIL() << "a token of blanks was taken";
  } catch (const InputError& error) {
    EXPECT_STREQ(error.what(), "--token: no token; accepted: the job's token");
  }
  write_file_atomically(path, " \n");
  EXPECT_THROW(read_token_file(path), InputError);
  std::remove(path.c_str());
}

TEST(OptionNames, EveryNameReadsBackAndTheJobConfigCarriesThem) {
  expect_names_read_back<Loss>({"cross-entropy", "mse"});
  expect_names_read_back<LrSchedule>({"cosine", "step"});
  expect_names_read_back<Augment>({"crop", "resized-crop", "none"});
  expect_names_read_back<Compression>({"none", "bf16", "fp16"});
  expect_names_read_back<Precision>({"fp32", "bf16", "fp16"});
  expect_names_read_back<MemoryFormat>({"auto", "channels-last", "contiguous"});
  expect_names_read_back<OnDivergence>({"stop", "rollback"});
  expect_names_read_back<Device>({"auto", "cpu", "cuda"});
  EXPECT_EQ(accepted_names<Compression>(), "none, bf16, fp16");

  JobConfig config;
  config.options.loss = Loss::kMse;
  config.options.schedule = LrSchedule::kStep;
  config.options.augment = Augment::kResizedCrop;
  config.options.compress = Compression::kFp16;
  config.options.precision = Precision::kBf16;
  config.options.memory_format = MemoryFormat::kChannelsLast;
  config.options.on_divergence = OnDivergence::kRollback;
  config.options.device = Device::kCuda;
  nlohmann::json wire = nlohmann::json::parse(to_json(config).dump());
  EXPECT_EQ(wire.at("schedule"), "step");
  const JobConfig received = job_config_from_json(wire);
  EXPECT_EQ(received.options.loss, Loss::kMse);
  EXPECT_EQ(received.options.schedule, LrSchedule::kStep);
  EXPECT_EQ(received.options.augment, Augment::kResizedCrop);
  EXPECT_EQ(received.options.compress, Compression::kFp16);
  EXPECT_EQ(received.options.precision, Precision::kBf16);
  EXPECT_EQ(received.options.memory_format, MemoryFormat::kChannelsLast);
  EXPECT_EQ(received.options.on_divergence, OnDivergence::kRollback);
  EXPECT_EQ(received.options.device, Device::kCuda);
  // A config of an earlier version, without them: the defaults, and the layout it ran with.
  for (const char* key : {"loss", "schedule", "augment", "compress", "precision", "memory_format",
                          "on_divergence", "device"}) {
    wire.erase(key);
  }
  EXPECT_EQ(job_config_from_json(wire).options.memory_format, MemoryFormat::kContiguous);
  EXPECT_EQ(job_config_from_json(wire).options.compress, Compression::kNone);
  EXPECT_EQ(job_config_from_json(wire).options.precision, Precision::kFp32);
  EXPECT_EQ(job_config_from_json(wire).options.loss, Loss::kCrossEntropy);
  EXPECT_EQ(job_config_from_json(wire).options.device, Device::kCpu);  // CPUs only before
  wire["compress"] = "int8";
  try {
    job_config_from_json(wire);
    ADD_FAILURE() << "an unknown compression was taken";
  } catch (const std::invalid_argument& error) {
    EXPECT_STREQ(error.what(), "compress \"int8\" is none of none, bf16, fp16");
  }
}

// Every field of the table travels in the job's config: each set to a value other than its
// default comes back as it was sent, and a config without it means its `absent` value or, for a
// required field, is refused.
TEST(OptionFields, EveryFieldTravelsAndAConfigWithoutItMeansWhatTheTableSays) {
  JobConfig config;
  config.train_samples = 7;
  config.data = DataFacts{9, 3, 32, 32, 10, 4};
  visit_option_fields(config.options, [](const OptionField& field, auto& value, const auto&) {
    using T = std::remove_reference_t<decltype(value)>;
    if constexpr (std::is_enum_v<T>) {
      value = option_names<T>().back().second == value ? option_names<T>().front().second
                                                       : option_names<T>().back().second;
    } else if constexpr (std::is_same_v<T, std::string>) {
      value = std::string("set-") + field.key;
    } else if constexpr (std::is_same_v<T, bool>) {
      value = !value;
    } else if constexpr (std::is_same_v<T, std::vector<double>>) {
      value = {0.25, 0.5};
    } else {
      value = static_cast<T>(value + 3);
    }
  });
  const nlohmann::json sent = to_json(config);
  const nlohmann::json defaults = to_json(JobConfig{});
  int fields = 0;
  visit_option_fields(config.options, [&](const OptionField& field, const auto&, const auto&) {
    ++fields;
    ASSERT_TRUE(sent.contains(field.key)) << field.key;
    EXPECT_NE(sent.at(field.key), defaults.at(field.key)) << field.key;
  });
  EXPECT_EQ(sent.size(), static_cast<std::size_t>(fields) + 4);  // the job's sizes, its data
  EXPECT_EQ(to_json(job_config_from_json(sent)), sent);
  EXPECT_EQ(job_config_from_json(sent).data.classes, 10);
  EXPECT_EQ(job_config_from_json(sent).data.test_samples, 4);

  visit_option_fields(
      config.options, [&](const OptionField& field, const auto&, const auto& absent) {
        nlohmann::json without = sent;
        without.erase(field.key);
        if (!absent) {
          EXPECT_THROW(job_config_from_json(without), nlohmann::json::exception) << field.key;
          return;
        }
        const nlohmann::json received = to_json(job_config_from_json(without));
        EXPECT_EQ(received.at(field.key), field_json(*absent)) << field.key;
      });
}

}  // namespace
}  // namespace transient::train::message
