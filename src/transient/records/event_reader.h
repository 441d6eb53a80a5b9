// Reading events.jsonl (README, "The job directory"): one JSON object per line with `t` (seconds
// since the coordinator started), `time` (UTC, ISO 8601) and `event` (its type). A line that is
// not such an object (cut short by a crash, garbled) is skipped and reported.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "transient/records/read_problem.h"

namespace transient::records {

struct Event {
  std::string type;  // the `event` field: "worker_joined", "recovery", ...
  // Seconds since the job's first run started: each run's coordinator (a paused job resumed, a
  // coordinator restarted) counts its own from 0, and a later run's are put after the earlier
  // ones' by its wall clock (parse_events).
  double t = 0.0;
  std::string time;     // the wall clock, UTC, ISO 8601 ("" in records older than that field)
  nlohmann::json json;  // the whole line, every field included
  int line = 0;         // 1-based line in the file
  // An "epoch" of a run the job went back on (parse_events): a later run resumed from a
  // checkpoint before it, or a rollback, trained that epoch again. The records are append-only,
  // so a job resumed after a crash holds both runs' events of its last epochs; readers take the
  // ones that stand, each epoch's last.
  bool superseded = false;

  // Field `key` as a number, or `fallback` if absent or not a number.
  double number(const char* key, double fallback = 0.0) const;
  // Field `key` as a whole number (a step, a count), or `fallback` if absent or no JSON integer
  // that an int64 holds (a float such as 1e300 is not converted).
  std::int64_t count(const char* key, std::int64_t fallback = 0) const;
  // Field `key` as text, or "" if absent or not a string.
  std::string text(const char* key) const;
};

struct EventsRead {
  std::vector<Event> events;          // the readable lines, in file order
  std::vector<ReadProblem> problems;  // the others
};

// Whether a worker that left for `reason` (a worker_left event's) is one of summary.json's
// `revocations`: every reason is but "stopped" (by its owner), "unreachable" (dropped for its
// peers' sake) and "misconfigured" (its own data or model file failed it before it was ready).
bool left_by_revocation(const std::string& reason);

// What a job's events say of all its runs: generations formed, workers lost (left_by_revocation),
// recoveries and the steps they redid (with those a resume after a crash redid: steps_redone),
// and the newest checkpoint written (0: none).
struct EventCounts {
  std::int64_t generations = 0;
  std::int64_t revocations = 0;
  std::int64_t recoveries = 0;
  std::int64_t redone_steps = 0;
  std::int64_t newest_checkpoint_step = 0;
  std::int64_t images_skipped = 0;  // distinct files ("image_skipped", each run says its own)
};
EventCounts count_events(const std::vector<Event>& events);

// Seconds since 1970 of a UTC ISO 8601 time as the events write it ("2026-11-24T10:00:18.123Z");
// nullopt for anything else.
std::optional<double> utc_seconds(const std::string& text);

// Reads `path`. A missing file is one problem and no events; never throws for bad content.
EventsRead read_events(const std::string& path);
// The same from text; `name` stands for the path in problems. Each run's times are put on one
// axis (Event::t) and the epochs that later runs trained again are marked (Event::superseded).
EventsRead parse_events(const std::string& text, const std::string& name);

}  // namespace transient::records
