#include "transient/records/event_reader.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <optional>
#include <set>
#include <sstream>
#include <utility>

#include "transient/core/json_number.h"
#include "transient/records/internal/record_file.h"

namespace transient::records {
double Event::number(const char* key, double fallback) const {
  const auto it = json.find(key);
  return it != json.end() && it->is_number() ? it->get<double>() : fallback;
}

std::int64_t Event::count(const char* key, std::int64_t fallback) const {
  const auto it = json.find(key);
  return it != json.end() ? whole_number_in(*it).value_or(fallback) : fallback;
}

std::string Event::text(const char* key) const {
  const auto it = json.find(key);
  return it != json.end() && it->is_string() ? it->get<std::string>() : std::string();
}

bool left_by_revocation(const std::string& reason) {
  return reason != "stopped" && reason != "unreachable" && reason != "misconfigured";
}

EventCounts count_events(const std::vector<Event>& events) {
  EventCounts counts;
  std::set<std::string> skipped;
  for (const auto& e : events) {
    if (e.type == "generation") ++counts.generations;
    if (e.type == "image_skipped") skipped.insert(e.text("file"));
    if (e.type == "worker_left" && left_by_revocation(e.text("reason"))) ++counts.revocations;
    if (e.type == "recovery") {
      ++counts.recoveries;
      counts.redone_steps += e.count("redone_steps");
    }
    // A run resumed from a checkpoint before the step its predecessor reached (a crash).
    if (e.type == "steps_redone") counts.redone_steps += e.count("redone_steps");
    if (e.type == "checkpoint") {
      counts.newest_checkpoint_step = std::max(counts.newest_checkpoint_step, e.count("step"));
    }
  }
  counts.images_skipped = static_cast<std::int64_t>(skipped.size());
  return counts;
}

std::optional<double> utc_seconds(const std::string& text) {
  std::tm utc{};
  double seconds = 0.0;
  char zone = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%lf%c", &utc.tm_year, &utc.tm_mon,
                  &utc.tm_mday, &utc.tm_hour, &utc.tm_min, &seconds, &zone) != 7 ||
      zone != 'Z') {
    return std::nullopt;
  }
  utc.tm_year -= 1900;
  utc.tm_mon -= 1;
  utc.tm_sec = 0;
  return static_cast<double>(::timegm(&utc)) + seconds;
}

namespace {

// Each run's coordinator counts t from its own start: a t smaller than the one before begins
// another run, whose times are moved after the earlier runs' by when it started on the wall clock
// (its first event's UTC time less its t), or right after them where that is not known. The
// report drew a resumed job's steps, membership and cost on two axes at once (bars that ended
// before they began, a cost that went back in time).
void put_runs_on_one_axis(std::vector<Event>& events) {
  std::optional<double> job_start;  // on the wall clock
  double offset = 0.0;
  double previous_raw = -1.0;
  double previous_t = 0.0;
  for (auto& e : events) {
    const bool new_run = e.t < previous_raw;
    previous_raw = e.t;
    // The wall clock is read where it is needed: the job's start, and each later run's.
    const auto wall = new_run || !job_start ? utc_seconds(e.time) : std::nullopt;
    if (new_run) {
      offset = previous_t - e.t;  // right after the earlier runs, unless the clock says more
      if (wall && job_start) offset = std::max(offset, *wall - e.t - *job_start);
    }
    if (!job_start && wall) job_start = *wall - (e.t + offset);
    e.t += offset;
    previous_t = e.t;
  }
}

// An "epoch" event is superseded by a later one of the same epoch (a run that trained it again
// wrote its own), and by a later generation that starts before its step (the steps up to it are
// trained again: a resume from an earlier checkpoint, a rollback), also before that run reaches
// it again: its evaluation was of a model the job went back on.
void mark_superseded_epochs(std::vector<Event>& events) {
  // The epochs of later "epoch" events (true, epoch), or their steps where they have no epoch.
  std::set<std::pair<bool, std::int64_t>> later;
  std::optional<std::int64_t> earliest_start;  // the least start_step of later generations
  for (auto e = events.rbegin(); e != events.rend(); ++e) {
    if (e->type == "generation" && e->json.contains("start_step")) {
      if (const auto start = whole_number_in(e->json["start_step"])) {
        earliest_start = std::min(earliest_start.value_or(*start), *start);
      }
    }
    if (e->type != "epoch") continue;
    const std::int64_t step = e->count("step", -1);
    const std::int64_t epoch = e->count("epoch", -1);
    const std::pair<bool, std::int64_t> key{epoch >= 0, epoch >= 0 ? epoch : step};
    const bool repeated = key.second >= 0 && !later.insert(key).second;
    e->superseded = repeated || (earliest_start && step > *earliest_start);
  }
}

}  // namespace

EventsRead parse_events(const std::string& text, const std::string& name) {
  EventsRead read;
  std::istringstream in(text);
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const nlohmann::json json = nlohmann::json::parse(line, nullptr, false);
    if (json.is_discarded()) {
      read.problems.push_back(
          {name, number, "not a JSON line (cut short or garbled): " + excerpt(line)});
      continue;
    }
    if (!json.is_object() || !json.contains("event") || !json["event"].is_string()) {
      read.problems.push_back({name, number, "no \"event\" name: " + excerpt(line)});
      continue;
    }
    if (!json.contains("t") || !json["t"].is_number()) {
      read.problems.push_back(
          {name, number, "no \"t\" (seconds since the start): " + excerpt(line)});
      continue;
    }
    Event event;
    event.type = json["event"].get<std::string>();
    event.t = json["t"].get<double>();
    if (json.contains("time") && json["time"].is_string()) event.time = json["time"];
    event.json = json;
    event.line = number;
    read.events.push_back(std::move(event));
  }
  put_runs_on_one_axis(read.events);
  mark_superseded_epochs(read.events);
  return read;
}

EventsRead read_events(const std::string& path) {
  const auto file = internal::read_record_file(path);
  if (!file.text) return {{}, {*file.problem}};
  return parse_events(*file.text, path);
}

}  // namespace transient::records
