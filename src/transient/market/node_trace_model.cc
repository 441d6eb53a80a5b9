#include "transient/market/node_trace_model.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "transient/core/bounds.h"
#include "transient/core/csv_table.h"
#include "transient/core/duration.h"
#include "transient/core/error.h"

namespace transient::market {
namespace {

// The time of an event: traces span weeks to months, a year is beyond any.
constexpr Bound kTimeMs{0.0, 365 * 86400e3, "ms (a year)"};

using Presence = NodeTraceModel::Presence;

class NodeTimeline : public MarketTimeline {
 public:
  NodeTimeline(std::shared_ptr<const std::vector<Presence>> presences, int nodes, double offset_s,
               double cap_s, double duration_s)
      : presences_(std::move(presences)),
        taken_until_s_(nodes, -kNever),
        offset_s_(offset_s),
        cap_s_(cap_s),
        duration_s_(duration_s) {}

  double data_end_s() const override { return duration_s_ - offset_s_; }

  double revocation_time_s(double launch_s, Rng& rng) override {
    const double t = offset_s_ + launch_s;
    free_.clear();
    for (std::size_t i = 0; i < presences_->size(); ++i) {
      if (is_free(i, t)) free_.push_back(i);
    }
    // No free node: a server cannot be had now, so it is lost at once.
    if (free_.empty()) return launch_s;
    const Presence& p = (*presences_)[free_[rng.below(free_.size())]];
    taken_until_s_[p.node] = p.removed_s;
    const double revoke_s = std::min(launch_s + cap_s_, p.removed_s - offset_s_);
    held_.push_back({revoke_s, p.node});
    return revoke_s;
  }

  void released(double revoke_s) override {
    const auto it = std::find_if(held_.begin(), held_.end(),
                                 [&](const Held& h) { return h.revoke_s == revoke_s; });
    if (it == held_.end()) return;  // a server lost at once holds no node
    taken_until_s_[it->node] = -kNever;
    *it = held_.back();
    held_.pop_back();
  }

  bool available_at(double t_s) override {
    const double t = offset_s_ + t_s;
    for (std::size_t i = 0; i < presences_->size(); ++i) {
      if (is_free(i, t)) return true;
    }
    return false;
  }

  double next_available_s(double t_s) override {
    const double t = offset_s_ + t_s;
    double best = kNever;
    for (const Presence& p : *presences_) {
      // The earliest moment at or after t when this presence is on and its node not taken.
      const double from = std::max({t, p.added_s, taken_until_s_[p.node]});
      if (from < p.removed_s) best = std::min(best, from);
    }
    return best == kNever ? kNever : std::max(t_s, best - offset_s_);
  }

 private:
  bool is_free(std::size_t i, double t) const {
    const Presence& p = (*presences_)[i];
    return p.added_s <= t && t < p.removed_s && taken_until_s_[p.node] <= t;
  }

  struct Held {
    double revoke_s;  // as revocation_time_s returned it
    int node;
  };

  std::shared_ptr<const std::vector<Presence>> presences_;
  std::vector<double> taken_until_s_;  // by node: trace time until which a server holds it
  std::vector<Held> held_;             // the servers holding a node, until released
  std::vector<std::size_t> free_;      // scratch, kept to avoid allocating per launch
  double offset_s_;
  double cap_s_;
  double duration_s_;  // the trace's last event
};

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> fields;
  std::stringstream in(text);
  std::string field;
  while (std::getline(in, field, ',')) {
    const auto begin = field.find_first_not_of(" \t\r");
    const auto end = field.find_last_not_of(" \t\r");
    fields.push_back(begin == std::string::npos ? "" : field.substr(begin, end - begin + 1));
  }
  return fields;
}

}  // namespace

std::unique_ptr<NodeTraceModel> NodeTraceModel::read(const std::string& path, double offset_s,
                                                     double cap_s) {
  std::ifstream in(path);
  if (!in) throw InputError(path, 0, "cannot open the file (does it exist and is it readable?)");
  const std::string accepted = "; accepted: rows `time_ms,add|remove,node` in time order";
  std::map<std::string, int> ids;   // node name -> id
  std::map<int, std::size_t> open;  // node id -> index of its open presence
  std::vector<Presence> presences;
  double last_s = 0.0;
  int line = 0;
  bool first_row = true;  // the one row that may be a header
  std::string text;
  while (std::getline(in, text)) {
    ++line;
    // A UTF-8 byte order mark is not part of the first row (CsvTable drops it too).
    if (line == 1 && text.compare(0, 3, "\xEF\xBB\xBF") == 0) text.erase(0, 3);
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    const bool header_allowed = first_row;
    first_row = false;
    const auto fields = split(text);
    if (fields.size() != 3) {
      throw InputError(path, line,
                       "expected 3 fields, found " + std::to_string(fields.size()) + accepted);
    }
    const auto time_ms = parse_number(fields[0]);
    if (!time_ms) {
      // A header: the first row only (every unparsable row before the first event was skipped,
      // so a typo there silently lost that event).
      if (header_allowed) continue;
      throw InputError(path, line, "time_ms \"" + fields[0] + "\" is not a number" + accepted);
    }
    if (!kTimeMs.contains(*time_ms)) {
      throw InputError(
          path, line, "time_ms " + fields[0] + " is out of range; accepted: " + kTimeMs.accepted());
    }
    const double t_s = *time_ms / 1000.0;
    if (t_s < last_s) {
      throw InputError(path, line, "time_ms " + fields[0] + " goes backwards" + accepted);
    }
    last_s = t_s;
    const int id = ids.emplace(fields[2], static_cast<int>(ids.size())).first->second;
    if (fields[1] == "add") {
      if (open.count(id)) {
        throw InputError(path, line, "node " + fields[2] + " is added while present" + accepted);
      }
      open[id] = presences.size();
      presences.push_back(Presence{id, t_s, kNever});
    } else if (fields[1] == "remove") {
      const auto it = open.find(id);
      if (it == open.end()) {
        throw InputError(path, line, "node " + fields[2] + " is removed while absent" + accepted);
      }
      presences[it->second].removed_s = t_s;
      open.erase(it);
    } else {
      throw InputError(path, line, "event \"" + fields[1] + "\"; accepted: add or remove");
    }
  }
  if (presences.empty()) throw InputError(path, 0, "no events" + accepted);
  if (offset_s >= last_s && last_s > 0.0) {
    throw InputError(path, 0,
                     "offset " + format_duration(offset_s) + " is beyond the trace's " +
                         format_duration(last_s) + "; accepted: an offset inside it, or random");
  }
  return std::make_unique<NodeTraceModel>(std::move(presences), static_cast<int>(ids.size()),
                                          last_s, offset_s, cap_s, path);
}

NodeTraceModel::NodeTraceModel(std::vector<Presence> presences, int nodes, double duration_s,
                               double offset_s, double cap_s, std::string source)
    : nodes_(nodes),
      duration_s_(duration_s),
      offset_s_(offset_s),
      cap_s_(cap_s),
      source_(std::move(source)) {
  std::sort(presences.begin(), presences.end(), [](const Presence& a, const Presence& b) {
    return a.node != b.node ? a.node < b.node : a.added_s < b.added_s;
  });
  presences_ = std::make_shared<const std::vector<Presence>>(std::move(presences));
}

std::unique_ptr<NodeTraceModel> NodeTraceModel::with_offset(double offset_s) const {
  TRANSIENT_CHECK(offset_s < duration_s_ || duration_s_ == 0.0);
  auto model = std::make_unique<NodeTraceModel>(*this);
  model->offset_s_ = offset_s;
  return model;
}

std::string NodeTraceModel::describe() const {
  std::ostringstream out;
  out.precision(3);
  out << "replay of spot node trace " << source_.substr(source_.find_last_of('/') + 1) << " ("
      << nodes_ << " nodes over " << duration_s_ / 3600.0 << " h, peak " << peak_nodes()
      << ", mean " << mean_nodes() << " present, " << removals() << " removals; offset "
      << (offset_s_ < 0.0 ? std::string("random") : format_duration(offset_s_)) << ")";
  return out.str();
}

std::unique_ptr<MarketTimeline> NodeTraceModel::start_run(double /*start_hour_of_day*/,
                                                          Rng& rng) const {
  const double offset_s = offset_s_ >= 0.0 ? offset_s_ : rng.uniform(0.0, duration_s_);
  return std::make_unique<NodeTimeline>(presences_, nodes_, offset_s, cap_s_, duration_s_);
}

double NodeTraceModel::sample_lifetime_s(Rng& rng) const {
  auto timeline = start_run(0.0, rng);
  const double launch_s = timeline->next_available_s(0.0);
  if (launch_s == kNever) return kNever;
  return timeline->revocation_time_s(launch_s, rng) - launch_s;
}

int NodeTraceModel::removals() const {
  int removals = 0;
  for (const Presence& p : *presences_) removals += p.removed_s != kNever;
  return removals;
}

int NodeTraceModel::peak_nodes() const {
  std::vector<std::pair<double, int>> events;
  for (const Presence& p : *presences_) {
    events.emplace_back(p.added_s, +1);
    if (p.removed_s != kNever) events.emplace_back(p.removed_s, -1);
  }
  // Removals before additions at the same instant: a swap is not a moment with both nodes.
  std::sort(events.begin(), events.end());
  int present = 0;
  int peak = 0;
  for (const auto& [t, delta] : events) {
    present += delta;
    peak = std::max(peak, present);
  }
  return peak;
}

double NodeTraceModel::mean_nodes() const {
  if (duration_s_ <= 0.0) return static_cast<double>(presences_->size());
  double node_s = 0.0;
  for (const Presence& p : *presences_) node_s += std::min(p.removed_s, duration_s_) - p.added_s;
  return node_s / duration_s_;
}

}  // namespace transient::market
