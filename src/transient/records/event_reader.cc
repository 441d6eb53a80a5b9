#include "transient/records/event_reader.h"

#include <algorithm>

#include <sstream>

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
  for (const auto& e : events) {
    if (e.type == "generation") ++counts.generations;
    if (e.type == "worker_left" && left_by_revocation(e.text("reason"))) ++counts.revocations;
    if (e.type == "recovery") {
      ++counts.recoveries;
      counts.redone_steps += e.count("redone_steps");
    }
    if (e.type == "checkpoint") {
      counts.newest_checkpoint_step = std::max(counts.newest_checkpoint_step, e.count("step"));
    }
  }
  return counts;
}

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
  return read;
}

EventsRead read_events(const std::string& path) {
  const auto file = internal::read_record_file(path);
  if (!file.text) return {{}, {*file.problem}};
  return parse_events(*file.text, path);
}

}  // namespace transient::records
