#include "transient/report/internal/step_series.h"

#include <algorithm>

#include "transient/core/json_number.h"

namespace transient::report::internal {
namespace {

struct Anchor {
  std::int64_t step = 0;
  double t = 0.0;
};

// (step, t) pairs from the events, increasing in both.
std::vector<Anchor> anchors(const std::vector<records::Event>& events) {
  std::vector<Anchor> found;
  for (const auto& e : events) {
    const char* key = e.type == "generation" ? "start_step" : "step";
    const auto it = e.json.find(key);
    if (it == e.json.end()) continue;
    const auto step = whole_number_in(*it);  // a float such as 1e300 is not converted
    if (!step) continue;
    if (e.type == "stop_requested" || e.type == "waiting") continue;
    if (e.superseded) continue;  // an epoch a later run trained again: its time is that run's
    found.push_back({*step, e.t});
  }
  std::stable_sort(found.begin(), found.end(),
                   [](const Anchor& a, const Anchor& b) { return a.t < b.t; });
  std::vector<Anchor> increasing;
  for (const auto& a : found) {
    if (!increasing.empty() && a.step <= increasing.back().step) continue;
    increasing.push_back(a);
  }
  return increasing;
}

double median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2.0;
}

void assign_times(std::vector<StepPoint>& points, const std::vector<Anchor>& marks) {
  // Steps before the first mark and after the last: durations added up from the nearest mark.
  double t = marks.empty() ? 0.0 : marks.front().t;
  std::size_t i = 0;
  if (!marks.empty()) {
    std::size_t first_after = 0;
    while (first_after < points.size() && points[first_after].step <= marks.front().step)
      ++first_after;
    double back = marks.front().t;
    for (std::size_t j = first_after; j-- > 0;) {
      points[j].t = back;
      back -= points[j].duration_s;
    }
    i = first_after;
  }
  for (std::size_t m = 0; m + 1 < marks.size(); ++m) {
    const Anchor& from = marks[m];
    const Anchor& to = marks[m + 1];
    std::size_t end = i;
    double total = 0.0;
    while (end < points.size() && points[end].step <= to.step) total += points[end++].duration_s;
    const double span = to.t - from.t;
    double done = 0.0;
    const std::size_t count = end - i;
    for (std::size_t k = i; k < end; ++k) {
      done += points[k].duration_s;
      const double share =
          total > 0.0 ? done / total : static_cast<double>(k - i + 1) / static_cast<double>(count);
      points[k].t = from.t + span * share;
    }
    i = end;
    t = to.t;
  }
  for (; i < points.size(); ++i) {
    t += points[i].duration_s;
    points[i].t = t;
  }
}

}  // namespace

std::vector<StepPoint> step_points(const std::vector<records::StepRow>& rows,
                                   const std::vector<records::Event>& events) {
  std::vector<StepPoint> points;
  std::size_t i = 0;
  while (i < rows.size()) {
    std::size_t end = i;
    while (end < rows.size() && rows[end].step == rows[i].step) ++end;
    StepPoint p;
    p.step = rows[i].step;
    p.gen = rows[i].gen;
    p.loss = rows[i].loss;
    std::vector<double> busy;
    for (std::size_t k = i; k < end; ++k) {
      const auto& r = rows[k];
      p.duration_s = std::max(p.duration_s, r.total_s());
      p.samples += r.batch;
      const double b = r.data_s + r.compute_s;
      busy.push_back(b);
      if (k == i || b > p.slowest_busy_s) {
        p.slowest_busy_s = b;
        p.slowest_rank = r.rank;
      }
    }
    p.median_busy_s = median(busy);
    points.push_back(p);
    i = end;
  }
  assign_times(points, anchors(events));
  return points;
}

double samples_per_s(const std::vector<StepPoint>& points, std::size_t begin, std::size_t end) {
  double seconds = 0.0;
  double samples = 0.0;
  for (std::size_t i = begin; i < end && i < points.size(); ++i) {
    seconds += points[i].duration_s;
    samples += static_cast<double>(points[i].samples);
  }
  return seconds > 0.0 ? samples / seconds : 0.0;
}

RankNames::RankNames(const std::vector<records::Event>& events) {
  for (const auto& e : events) {
    if (e.type != "generation" || !e.json.contains("members") || !e.json["members"].is_array())
      continue;
    std::vector<std::string> members;
    for (const auto& m : e.json["members"])
      members.push_back(m.is_string() ? m.get<std::string>() : m.dump());
    // A whole number that fits, or -1 (none): 1e300 or 2.5 is no generation to convert.
    const std::int64_t gen = e.count("gen", -1);
    generations_.push_back({gen, e.count("start_step", 0), members});
    last_members_ = members;
    last_gen_ = gen;
  }
}

std::string RankNames::worker_of(std::int64_t gen, std::int64_t rank, std::int64_t step) const {
  // The latest generation of that number that started before the step; else the latest of that
  // number (records older than start_step).
  const Generation* found = nullptr;
  for (auto it = generations_.rbegin(); it != generations_.rend(); ++it) {
    if (it->number != gen) continue;
    if (found == nullptr) found = &*it;
    if (it->start_step < step) {
      found = &*it;
      break;
    }
  }
  if (found != nullptr && rank >= 0 && rank < static_cast<std::int64_t>(found->members.size())) {
    return found->members[static_cast<std::size_t>(rank)];
  }
  return "rank " + std::to_string(rank);
}

}  // namespace transient::report::internal
