// events.jsonl: one JSON object per line, each with `t` (seconds since the coordinator started),
// `time` (the wall clock, UTC, ISO 8601 with milliseconds) and `event`. Append-only: a line is
// written whole with one write(2) and flushed, so a crash loses at most the line being written and
// never damages earlier ones. Owned and written by the coordinator's thread only.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

namespace transient::train {

class EventLog {
 public:
  // Opens `path` for appending (creating it). Throws InputError naming it on failure.
  explicit EventLog(const std::string& path);
  ~EventLog();
  EventLog(const EventLog&) = delete;
  EventLog& operator=(const EventLog&) = delete;

  // Appends `event` (an object with at least "event") with "t" and "time" set first, as a whole
  // line or not at all. Throws InputError naming the file when it cannot (a full disk).
  void append(nlohmann::json event);
  double elapsed_s() const;

 private:
  std::string path_;
  int fd_ = -1;
  std::chrono::steady_clock::time_point start_;
};

// The wall clock now as 2026-11-24T01:02:03.456Z.
std::string utc_now_iso8601();

}  // namespace transient::train
