#include "transient/train/messages.h"

#include <algorithm>
#include <array>
#include <optional>
#include <string_view>
#include <utility>

#include "transient/core/json_number.h"

namespace transient::train::message {

namespace {

constexpr std::array<const char*, 10> kToCoordinator = {
    "ready", "hb",   "report",     "progress",         "event",
    "bye",   "rows", "checkpoint", "fetch_checkpoint", "store"};
constexpr std::array<const char*, 7> kToWorker = {"generation", "signal", "store_reply", "rows_ack",
                                                  "chunk_of",   "left",   "finished"};

const std::array<std::pair<Report::Kind, const char*>, 8> kReportKinds = {{
    {Report::Kind::kGrouped, "grouped"},
    {Report::Kind::kFormed, "formed"},
    {Report::Kind::kStepped, "stepped"},
    {Report::Kind::kFailed, "failed"},
    {Report::Kind::kBoundary, "boundary"},
    {Report::Kind::kDone, "done"},
    {Report::Kind::kFatal, "fatal"},
    {Report::Kind::kDiverged, "diverged"},
}};

template <std::size_t N>
std::string known_names(const std::array<const char*, N>& names) {
  std::string text;
  for (const char* name : names) text += (text.empty() ? "" : ", ") + std::string(name);
  return text;
}

template <std::size_t N>
std::string first_known(const nlohmann::json& message, const std::array<const char*, N>& names) {
  if (!message.is_object()) return "";
  for (const char* name : names) {
    if (message.contains(name)) return name;
  }
  return "";
}

// The message's name, checked against the receiver's names and version.
template <std::size_t N>
std::string checked_name(const nlohmann::json& message, const std::array<const char*, N>& names,
                         const char* receiver) {
  const std::string name = first_known(message, names);
  if (name.empty()) {
    std::string shown = message.is_object() && !message.empty() ? message.begin().key() : "";
    if (shown.size() > 32) shown = shown.substr(0, 32) + "...";
    throw ProtocolError(
        "a message " + (shown.empty() ? std::string("with no name") : "named \"" + shown + "\"") +
        ", which this " + receiver + " does not know (it knows " + known_names(names) + ")");
  }
  const auto version = message.find("v");
  if (version == message.end() || whole_number_in(*version) != kProtocolVersion) {
    throw ProtocolError("a \"" + name + "\" message of protocol version " +
                        (version == message.end() ? std::string("none") : version->dump()) +
                        "; this " + receiver + " speaks version " +
                        std::to_string(kProtocolVersion));
  }
  return name;
}

nlohmann::json named(const char* name, nlohmann::json value) {
  nlohmann::json message = {{name, std::move(value)}, {"v", kProtocolVersion}};
  return message;
}

// A message whose shape another part owns (the rendezvous store's), with the version added.
nlohmann::json versioned(nlohmann::json message) {
  message["v"] = kProtocolVersion;
  return message;
}

// `message` with its version taken off, for the part that owns its shape.
nlohmann::json unversioned(nlohmann::json message) {
  message.erase("v");
  return message;
}

Report decode_report(const nlohmann::json& m) {
  Report report;
  const std::string kind = m.at("report").get<std::string>();
  bool known = false;
  for (const auto& [value, name] : kReportKinds) {
    if (kind == name) {
      report.kind = value;
      known = true;
    }
  }
  if (!known) {
    std::string names;
    for (const auto& [value, name] : kReportKinds)
      names += (names.empty() ? "" : ", ") + std::string(name);
    throw ProtocolError("a report \"" + kind.substr(0, 32) + "\", which is none of " + names);
  }
  report.gen = integer_at(m, "gen");
  report.step = step_or(m, "step", -1);
  report.attempted = step_or(m, "attempted", report.step);
  report.leaving = m.value("leaving", false);
  report.reason = m.value("reason", std::string("preempted"));
  report.cause = m.value("cause", std::string("failed"));
  if (m.contains("unreachable")) {
    report.unreachable = m.at("unreachable").get<std::vector<std::string>>();
  }
  if (report.kind == Report::Kind::kDone) report.result = worker_result_from_json(m.at("result"));
  report.error = m.value("error", std::string());
  report.loss = m.value("loss", std::string("nan"));
  return report;
}

nlohmann::json encode_report(const Report& report) {
  const char* kind = "failed";
  for (const auto& [value, name] : kReportKinds) {
    if (value == report.kind) kind = name;
  }
  nlohmann::json m = named("report", kind);
  m["gen"] = report.gen;
  switch (report.kind) {
    case Report::Kind::kGrouped:
      break;
    case Report::Kind::kFormed:
    case Report::Kind::kStepped:
      m["step"] = report.step;
      break;
    case Report::Kind::kFailed:
    case Report::Kind::kBoundary:
      m["step"] = report.step;
      m["attempted"] = report.attempted;
      m["leaving"] = report.leaving;
      m["reason"] = report.reason;
      m["cause"] = report.cause;
      if (!report.unreachable.empty()) m["unreachable"] = report.unreachable;
      if (!report.error.empty()) m["error"] = report.error;
      break;
    case Report::Kind::kDone:
      m["step"] = report.step;  // the state it holds (rank 0 may be lost before storing it)
      m["result"] = to_json(report.result.value_or(WorkerResult{}));
      break;
    case Report::Kind::kFatal:
      m["error"] = report.error;
      break;
    case Report::Kind::kDiverged:
      m["step"] = report.step;
      m["loss"] = report.loss;
      break;
  }
  return m;
}

// Overloads for std::visit.
template <typename... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <typename... F>
Overloaded(F...) -> Overloaded<F...>;

}  // namespace

std::string name_of(const nlohmann::json& message) {
  std::string name = first_known(message, kToCoordinator);
  return name.empty() ? first_known(message, kToWorker) : name;
}

std::int64_t RowBacklog::add(std::string_view row) {
  if (size() >= max_rows_) {
    text_begin_ = entries_[first_].end;
    ++first_;
  }
  text_.append(row);
  entries_.push_back({next_, text_.size()});
  if (first_ >= 4096 && first_ * 2 >= entries_.size()) compact();
  return next_++;
}

void RowBacklog::acknowledge(std::int64_t through) {
  while (!empty() && entries_[first_].seq <= through) {
    text_begin_ = entries_[first_].end;
    ++first_;
  }
  if (empty()) {
    // Emptied in place: the buffers keep their room for the rows to come.
    text_.clear();
    entries_.clear();
    first_ = 0;
    text_begin_ = 0;
  } else if (first_ >= 4096 && first_ * 2 >= entries_.size()) {
    compact();
  }
}

void RowBacklog::compact() {
  text_.erase(0, text_begin_);
  entries_.erase(entries_.begin(), entries_.begin() + static_cast<std::ptrdiff_t>(first_));
  for (auto& entry : entries_) entry.end -= text_begin_;
  first_ = 0;
  text_begin_ = 0;
}

std::vector<Rows> RowBacklog::batches_after(std::int64_t after, std::size_t max_bytes) const {
  std::vector<Rows> batches;
  if (empty() || after >= last()) return batches;
  std::size_t bytes = 0;
  // Numbers are consecutive: the first row after `after` is found, not searched for (called on
  // every step, with as many rows kept as a coordinator's absence lasted).
  const std::int64_t oldest = entries_[first_].seq;
  const std::size_t from =
      first_ + static_cast<std::size_t>(std::max<std::int64_t>(0, after + 1 - oldest));
  for (std::size_t i = from; i < entries_.size(); ++i) {
    const std::size_t begin = begin_of(i);
    const std::size_t size = entries_[i].end - begin;
    if (batches.empty() || (bytes + size > max_bytes && !batches.back().rows.empty())) {
      batches.emplace_back();
      bytes = 0;
    }
    batches.back().rows.emplace_back(text_, begin, size);
    batches.back().last = entries_[i].seq;
    bytes += size;
  }
  return batches;
}

nlohmann::json encode(const ToCoordinator& message) {
  return std::visit(Overloaded{
                        [](const Ready& m) {
                          auto j = named("ready", true);
                          j["address"] = m.address;
                          j["probe"] = m.probe;
                          if (m.threads > 0) j["threads"] = m.threads;
                          return j;
                        },
                        [](const Heartbeat& m) {
                          auto j = named("hb", m.beat);
                          j["speed"] = m.speed_samples_per_s;
                          return j;
                        },
                        [](const Report& m) { return encode_report(m); },
                        [](const Progress& m) { return named("progress", to_json(m.report)); },
                        [](const Event& m) { return named("event", m.event); },
                        [](const Bye& m) {
                          auto j = named("bye", m.reason);
                          if (!m.error.empty()) j["error"] = m.error;
                          return j;
                        },
                        [](const Rows& m) {
                          auto j = named("rows", m.rows);
                          j["last"] = m.last;
                          return j;
                        },
                        [](const CheckpointPart& m) {
                          auto j = named("checkpoint", m.part);
                          j["id"] = m.id;
                          if (m.part == "begin") {
                            j["step"] = m.step;
                            j["bytes"] = m.bytes;
                          } else if (m.part == "chunk") {
                            j["data"] = m.data;
                          } else {
                            j["crc32"] = m.crc32;
                          }
                          return j;
                        },
                        [](const FetchCheckpoint& m) {
                          auto j = named("fetch_checkpoint", m.file);
                          j["id"] = m.id;
                          return j;
                        },
                        [](const StoreRequest& m) { return versioned(m.request); },
                    },
                    message);
}

nlohmann::json encode(const ToWorker& message) {
  return std::visit(Overloaded{
                        [](const Generation& m) { return named("generation", to_json(m.config)); },
                        [](const Signal& m) {
                          auto j = named("signal", m.what);
                          j["gen"] = m.gen;
                          return j;
                        },
                        [](const StoreReply& m) { return versioned(m.reply); },
                        [](const RowsAck& m) { return named("rows_ack", m.last); },
                        [](const ChunkOf& m) {
                          auto j = named("chunk_of", m.id);
                          j["data"] = m.data;
                          return j;
                        },
                        [](const Left& m) { return named("left", m.reason); },
                        [](const Finished&) { return named("finished", true); },
                    },
                    message);
}

namespace {

// The bulk messages, a checkpoint's chunk going either way, as to_line() (channel.h) writes them:
//   {"checkpoint":"chunk","data":"BASE64","id":N,"v":V}
//   {"chunk_of":N,"data":"BASE64","v":V}
// Nearly all of such a line is base64, which nlohmann's lexer reads a character at a time: 2 s of
// the coordinator's one thread per 200 MB of checkpoint (bench/protocol_bench.cc). Read here in
// one pass, to the value the parser gives. Any other line, and any other spelling of these (a
// space, an escape, another member), is the parser's: nullopt.
std::optional<nlohmann::json> bulk_message(std::string_view line) {
  auto take = [&](std::string_view literal) {
    if (line.substr(0, literal.size()) != literal) return false;
    line.remove_prefix(literal.size());
    return true;
  };
  auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
  // A whole number as JSON writes it (no sign, no leading zero), up to 18 digits.
  auto number = [&]() -> std::optional<std::uint64_t> {
    std::size_t n = 0;
    while (n < line.size() && is_digit(line[n])) ++n;
    if (n == 0 || n > 18 || (n > 1 && line[0] == '0')) return std::nullopt;
    std::uint64_t value = 0;
    for (std::size_t i = 0; i < n; ++i)
      value = value * 10 + static_cast<std::uint64_t>(line[i] - '0');
    line.remove_prefix(n);
    return value;
  };
  // The rest of a string whose characters JSON takes as they are, and its closing quote.
  auto plain_string = [&]() -> std::optional<std::string> {
    const auto end = line.find('"');
    if (end == std::string_view::npos) return std::nullopt;
    const auto text = line.substr(0, end);
    const bool plain = std::all_of(text.begin(), text.end(), [](char c) {
      const auto byte = static_cast<unsigned char>(c);
      return byte >= 0x20 && byte < 0x7f && byte != '\\';
    });
    if (!plain) return std::nullopt;
    line.remove_prefix(end + 1);
    return std::string(text);
  };
  nlohmann::json message = nlohmann::json::object();
  if (take("{\"checkpoint\":\"chunk\",\"data\":\"")) {
    auto data = plain_string();
    if (!data || !take(",\"id\":")) return std::nullopt;
    const auto id = number();
    if (!id || !take(",\"v\":")) return std::nullopt;
    const auto version = number();
    if (!version || line != "}") return std::nullopt;
    message["checkpoint"] = "chunk";
    message["data"] = std::move(*data);
    message["id"] = *id;
    message["v"] = *version;
    return message;
  }
  if (take("{\"chunk_of\":")) {
    const auto id = number();
    if (!id || !take(",\"data\":\"")) return std::nullopt;
    auto data = plain_string();
    if (!data || !take(",\"v\":")) return std::nullopt;
    const auto version = number();
    if (!version || line != "}") return std::nullopt;
    message["chunk_of"] = *id;
    message["data"] = std::move(*data);
    message["v"] = *version;
    return message;
  }
  return std::nullopt;
}

}  // namespace

nlohmann::json parse_line(const std::string& line) {
  if (auto bulk = bulk_message(line)) return std::move(*bulk);
  return nlohmann::json::parse(line, [](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
    if (depth > kMaxDepth) {
      throw ProtocolError("a line nested deeper than " + std::to_string(kMaxDepth) + " levels");
    }
    return true;
  });
}

ToCoordinator decode_to_coordinator(const nlohmann::json& m) {
  const std::string name = checked_name(m, kToCoordinator, "coordinator");
  try {
    if (name == "ready") {
      return Ready{m.value("address", std::string()).substr(0, 256),
                   m.value("probe", std::string()).substr(0, 300),
                   static_cast<int>(integer_or(m, "threads", 0, 0, 4096))};
    }
    if (name == "hb") return Heartbeat{integer_at(m, "hb"), m.value("speed", 0.0)};
    if (name == "report") return decode_report(m);
    if (name == "progress") return Progress{progress_report_from_json(m.at("progress"))};
    if (name == "event") {
      if (!m.at("event").is_object() || !m.at("event").contains("event")) {
        throw ProtocolError("an \"event\" message whose event is not an object with \"event\"");
      }
      return Event{m.at("event")};
    }
    if (name == "bye") {
      return Bye{m.at("bye").get<std::string>().substr(0, 64),
                 m.value("error", std::string()).substr(0, 1024)};
    }
    if (name == "rows") {
      return Rows{m.at("rows").get<std::vector<std::string>>(), step_or(m, "last", 0)};
    }
    if (name == "checkpoint") {
      CheckpointPart part;
      part.part = m.at("checkpoint").get<std::string>();
      part.id = integer_at(m, "id");
      if (part.part == "begin") {
        part.step = integer_at(m, "step");
        part.bytes = integer_at(m, "bytes");
      } else if (part.part == "chunk") {
        part.data = m.at("data").get<std::string>();
      } else if (part.part == "end") {
        part.crc32 = whole_number_as<std::uint32_t>(m.at("crc32"), "crc32");
      }
      return part;
    }
    if (name == "fetch_checkpoint") {
      return FetchCheckpoint{m.at("fetch_checkpoint").get<std::string>(), integer_at(m, "id")};
    }
    return StoreRequest{unversioned(m)};
  } catch (const nlohmann::json::exception& error) {
    throw ProtocolError("a malformed \"" + name + "\" message (" + error.what() + ")");
  }
}

ToWorker decode_to_worker(const nlohmann::json& m) {
  const std::string name = checked_name(m, kToWorker, "worker");
  try {
    if (name == "generation") return Generation{generation_config_from_json(m.at("generation"))};
    if (name == "signal") {
      return Signal{m.at("signal").get<std::string>(), integer_or(m, "gen", -1)};
    }
    if (name == "store_reply") return StoreReply{unversioned(m)};
    if (name == "rows_ack") return RowsAck{integer_at(m, "rows_ack")};
    if (name == "chunk_of") {
      return ChunkOf{integer_at(m, "chunk_of"), m.value("data", std::string())};
    }
    if (name == "left") return Left{m.value("left", std::string())};
    return Finished{};
  } catch (const nlohmann::json::exception& error) {
    throw ProtocolError("a malformed \"" + name + "\" message (" + error.what() + ")");
  }
}

}  // namespace transient::train::message
