#include "transient/sim/optimal_schedule.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <tuple>

#include "transient/sim/multi_region.h"

namespace transient::sim {
namespace {

// The single-region case of the multi-region programme: one region, nothing to move.
OptimalSchedule optimal_by_time(const OfflineMarket& m) {
  MultiRegionMarket one;
  one.spot_ticks = {m.spot_ticks};
  if (!m.spot_from_s.empty()) {
    one.spot_from_s = {m.spot_from_s};
    one.spot_to_s = {m.spot_to_s};
  }
  one.tick_s = m.tick_s;
  one.work_s = m.work_s;
  one.deadline_s = m.deadline_s;
  one.spot_changeover_s = m.spot_changeover_s;
  one.on_demand_changeover_s = m.on_demand_changeover_s;
  one.notice_s = m.notice_s;
  one.spot_usd_per_s = m.spot_usd_per_s;
  one.on_demand_usd_per_s = m.on_demand_usd_per_s;
  one.fixed_usd_per_s = m.fixed_usd_per_s;
  const MultiRegionResult best = optimal_multi_region(one);
  OptimalSchedule schedule;
  schedule.feasible = best.finished;
  schedule.cost_usd = best.cost_usd;
  schedule.finish_s = best.finish_s;
  for (const RegionTick& tick : best.ticks) {
    schedule.ticks.push_back(tick.mode);
    schedule.after_revocation.push_back({tick.after_revocation});
  }
  return schedule;
}

// ---- Spot had and revoked server by server (OfflineMarket::spot_server) ----

// The servers held at a moment. Times are absolute (seconds since the run's start).
struct Held {
  ClusterMode mode = ClusterMode::idle;  // idle: none
  double obtain_s = 0.0;                 // spot: when its server is had (billed from then)
  double train_s = 0.0;                  // when the cluster trains (after its changeover)
  double revoke_s = INFINITY;            // spot: when its server is revoked
};

// A label of the programme: where a schedule stands at a tick boundary. As a candidate, `step`
// is the step it was played from, and tick_mode and after what was chosen in the tick; kept in
// the front, `step` is its own.
struct Node {
  double progress_s = 0.0;
  double cost_usd = 0.0;
  Held held;
  std::int32_t step = 0;
  ClusterMode tick_mode = ClusterMode::idle;  // chosen at the start of the tick
  std::vector<ClusterMode> after;             // chosen at each revocation inside it
};

// How a kept label got there, compactly (the labels of all ticks are kept to read the schedule
// back): the step before, the tick's mode, and its revocations' choices in after_pool_.
struct Step {
  std::int32_t parent = -1;
  ClusterMode tick_mode = ClusterMode::idle;
  std::uint16_t after_size = 0;
  std::uint32_t after_begin = 0;
};

// A schedule that finished, and the node it came from.
struct Finish {
  double cost_usd = INFINITY;
  double finish_s = 0.0;
  std::int32_t parent = -1;
  ClusterMode tick_mode = ClusterMode::idle;
  std::vector<ClusterMode> after;
};

// The requests a schedule made in the tick being played, counted as the run counts them.
struct Requests {
  int spot = 0;
  int on_demand = 0;
};

// No more spot requests than this in one tick (servers that are revoked as soon as they are had
// would otherwise be asked for without end).
constexpr int kMaxRequestsPerTick = 16;

class ByLaunch {
 public:
  explicit ByLaunch(const OfflineMarket& m) : m_(m) {}

  OptimalSchedule solve() {
    const double g = m_.tick_s;
    const int ticks = static_cast<int>(std::ceil(m_.deadline_s / g - 1e-9));
    history_.push_back(Step{});
    std::vector<Node> front = {Node{}};
    const double cheapest = std::min(m_.spot_usd_per_s, m_.on_demand_usd_per_s);
    for (int i = 0; i < ticks && !front.empty(); ++i) {
      next_.clear();
      candidates_.clear();
      servers_.clear();
      for (const Node& node : front) {
        for (const ClusterMode mode :
             {ClusterMode::idle, ClusterMode::on_demand, ClusterMode::spot}) {
          start_tick(node, mode, i);
        }
      }
      front.clear();
      const double end = (i + 1) * g;
      const double bound = cost_bound(end);
      for (auto& [key, labels] : next_) {
        // Too late to finish, or dearer than finishing some label on demand even if the rest of
        // its work were spot with nothing lost: dropped before the front is sorted.
        labels.erase(std::remove_if(labels.begin(), labels.end(),
                                    [&](std::int32_t c) {
                                      const Node& node = candidates_[c];
                                      const double left_s = m_.work_s - node.progress_s;
                                      return end + left_s > m_.deadline_s ||
                                             node.cost_usd +
                                                     left_s * (cheapest + m_.fixed_usd_per_s) >
                                                 bound * (1 + 1e-12);
                                    }),
                     labels.end());
        prune(labels);
        for (const std::int32_t c : labels) {
          Node& kept = candidates_[c];
          Step step{kept.step, kept.tick_mode, static_cast<std::uint16_t>(kept.after.size()),
                    static_cast<std::uint32_t>(after_pool_.size())};
          after_pool_.insert(after_pool_.end(), kept.after.begin(), kept.after.end());
          history_.push_back(step);
          kept.step = static_cast<std::int32_t>(history_.size() - 1);
          kept.after.clear();
          front.push_back(std::move(kept));
        }
      }
    }
    OptimalSchedule schedule;
    if (!std::isfinite(best_.cost_usd)) return schedule;
    schedule.feasible = true;
    schedule.cost_usd = best_.cost_usd;
    schedule.finish_s = best_.finish_s;
    schedule.ticks.push_back(best_.tick_mode);
    schedule.after_revocation.push_back(best_.after);
    for (std::int32_t at = best_.parent; at > 0; at = history_[at].parent) {
      const Step& step = history_[at];
      schedule.ticks.push_back(step.tick_mode);
      schedule.after_revocation.emplace_back(
          after_pool_.begin() + step.after_begin,
          after_pool_.begin() + step.after_begin + step.after_size);
    }
    std::reverse(schedule.ticks.begin(), schedule.ticks.end());
    std::reverse(schedule.after_revocation.begin(), schedule.after_revocation.end());
    return schedule;
  }

 private:
  // A schedule inside tick i, from `now` on.
  struct Path {
    double progress_s;
    double cost_usd;
    Held held;
    std::vector<ClusterMode> after;
    Requests requests;  // made in this tick so far
  };

  // The decision at the start of tick i for the label `node`.
  void start_tick(const Node& node, ClusterMode mode, int i) {
    const double t = i * m_.tick_s;
    Path path{node.progress_s, node.cost_usd, node.held, {}, {}};
    // Keeping the servers of the mode chosen, or releasing them (a graceful release: a
    // checkpoint, nothing lost) and requesting the mode's.
    if (mode != node.held.mode) path.held = request(mode, t, path.requests);
    play(node.step, mode, i, t, std::move(path));
  }

  Held request(ClusterMode mode, double now, Requests& requests) {
    Held held;
    held.mode = mode;
    if (mode == ClusterMode::on_demand) {
      held.obtain_s = now;
      held.train_s = now + changeover_s(mode, now, requests.on_demand++);
    } else if (mode == ClusterMode::spot) {
      const int n = requests.spot++;
      const auto at = std::make_pair(now, n);
      auto found = servers_.find(at);
      if (found == servers_.end()) found = servers_.emplace(at, m_.spot_server(now, n)).first;
      const SpotServer server = found->second;
      held.obtain_s = server.obtain_s;
      held.train_s = server.obtain_s + changeover_s(mode, now, n);
      held.revoke_s = server.revoke_s;
    }
    return held;
  }

  // The changeover of the n-th request for `mode` in the tick of `now`: its own where the market
  // draws each request's start-up, else the mean.
  double changeover_s(ClusterMode mode, double now, int n) const {
    if (m_.changeover_s) return m_.changeover_s(mode, now, n);
    return mode == ClusterMode::spot ? m_.spot_changeover_s : m_.on_demand_changeover_s;
  }

  // Plays `path` from `now` to the end of tick i (or the job's finish), branching at each
  // revocation inside the tick on what to do next.
  void play(std::int32_t parent, ClusterMode tick_mode, int i, double now, Path path) {
    const double t = i * m_.tick_s;
    const double end = t + m_.tick_s;
    const Held& h = path.held;
    if (h.mode == ClusterMode::idle) return boundary(parent, tick_mode, i, std::move(path));
    const double usd_per_s =
        h.mode == ClusterMode::spot ? m_.spot_usd_per_s : m_.on_demand_usd_per_s;
    const double billed_from = std::max(now, h.obtain_s);
    const double until = std::min(end, h.revoke_s);  // the servers are had until then
    // The work left is done at `done` if nothing stops it first.
    const double from = std::max(now, h.train_s);
    const double done = from + (m_.work_s - path.progress_s);
    if (done <= until && done <= m_.deadline_s) {
      const double cost = path.cost_usd + usd_per_s * std::max(0.0, done - billed_from) +
                          m_.fixed_usd_per_s * (done - t);
      if (cost < best_.cost_usd) {
        best_ = Finish{cost, done, parent, tick_mode, path.after};
      }
      return;
    }
    if (done <= until) return;  // finishes, but after the deadline
    path.cost_usd += usd_per_s * std::max(0.0, until - billed_from);
    path.progress_s += std::max(0.0, until - from);
    // Revoked at r: the work after the notice is lost (the notice's checkpoint; all of the
    // server's work when the notice came before it trained).
    const double r = h.revoke_s;
    const auto lose = [&] {
      if (r > h.train_s) path.progress_s -= std::min(m_.notice_s, r - h.train_s);
    };
    if (!(r < end)) {
      // Revoked at the very end of the tick (a server asked for at a tick's start that lives a
      // cap of whole ticks): the run sees it gone before the next tick's decision is asked.
      if (r <= end) {
        lose();
        path.held = Held{};
      }
      return boundary(parent, tick_mode, i, std::move(path));
    }
    lose();
    for (const ClusterMode next : {ClusterMode::idle, ClusterMode::on_demand, ClusterMode::spot}) {
      if (next == ClusterMode::spot && path.requests.spot >= kMaxRequestsPerTick) continue;
      Path branch = path;
      branch.after.push_back(next);
      branch.held = request(next, r, branch.requests);
      play(parent, tick_mode, i, r, std::move(branch));
    }
  }

  // `path` has reached the end of tick i: a node of the next boundary.
  void boundary(std::int32_t parent, ClusterMode tick_mode, int i, Path path) {
    const double end = (i + 1) * m_.tick_s;
    Node node;
    node.progress_s = path.progress_s;
    node.cost_usd = path.cost_usd + m_.fixed_usd_per_s * m_.tick_s;
    node.held = path.held;
    node.step = parent;
    node.tick_mode = tick_mode;
    node.after = std::move(path.after);
    // What of the servers matters from here on: training has begun, or begins at train_s; a
    // spot server's loss at its revocation is the notice once it trained that long.
    Held& h = node.held;
    if (h.mode == ClusterMode::idle) h = Held{};
    if (h.obtain_s <= end) h.obtain_s = -INFINITY;
    if (h.mode == ClusterMode::on_demand && h.train_s <= end) h.train_s = -INFINITY;
    if (h.mode == ClusterMode::spot && h.train_s <= end - m_.notice_s) h.train_s = -INFINITY;
    const auto key = std::make_tuple(static_cast<int>(h.mode), h.obtain_s, h.train_s, h.revoke_s);
    candidates_.push_back(std::move(node));
    next_[key].push_back(static_cast<std::int32_t>(candidates_.size() - 1));
  }

  // The least that some schedule is known to cost by the labels at `end`: the best finish so
  // far, or a label finishing on demand from `end` in time.
  double cost_bound(double end) const {
    double bound = best_.cost_usd;
    for (const Node& node : candidates_) {
      // Going on demand at `end` is the first on-demand request of the next tick.
      const double ready = node.held.mode == ClusterMode::on_demand
                               ? std::max(end, node.held.train_s)
                               : end + changeover_s(ClusterMode::on_demand, end, 0);
      const double done = ready + (m_.work_s - node.progress_s);
      if (done > m_.deadline_s) continue;
      bound = std::min(
          bound, node.cost_usd + (m_.on_demand_usd_per_s + m_.fixed_usd_per_s) * (done - end));
    }
    return bound;
  }

  // Keeps the labels that no other label of the same servers beats on both progress and cost.
  void prune(std::vector<std::int32_t>& labels) const {
    std::sort(labels.begin(), labels.end(), [&](std::int32_t a, std::int32_t b) {
      const Node& x = candidates_[a];
      const Node& y = candidates_[b];
      if (x.progress_s != y.progress_s) return x.progress_s > y.progress_s;
      return x.cost_usd < y.cost_usd;
    });
    std::size_t kept = 0;
    double cheapest = INFINITY;
    for (const std::int32_t index : labels) {
      if (candidates_[index].cost_usd < cheapest) {
        labels[kept++] = index;
        cheapest = candidates_[index].cost_usd;
      }
    }
    labels.resize(kept);
  }

  const OfflineMarket& m_;
  std::vector<Step> history_;            // how each label kept got there
  std::vector<ClusterMode> after_pool_;  // the revocations' choices of the steps
  std::vector<Node> candidates_;         // the labels of the tick being played, before pruning
  std::map<std::pair<double, int>, SpotServer> servers_;  // asked of the market in this tick
  std::map<std::tuple<int, double, double, double>, std::vector<std::int32_t>> next_;
  Finish best_;
};

}  // namespace

OptimalSchedule optimal_schedule(const OfflineMarket& m) {
  if (m.spot_server) return ByLaunch(m).solve();
  return optimal_by_time(m);
}

}  // namespace transient::sim
