#include "transient/sim/multi_region.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "transient/core/error.h"
#include "transient/sim/availability_prior.h"

namespace transient::sim {
namespace {

// Servers running at the end of a tick: none, spot ones (in the checkpoint's region), on-demand.
constexpr int kNone = 0;
constexpr int kSpot = 1;
constexpr int kOnDemand = 2;

// Where a job stands at a tick boundary. region == regions(): no checkpoint yet, so the first
// start anywhere moves nothing.
struct JobState {
  double progress_s = 0.0;
  double cost_usd = 0.0;
  int region = 0;
  int running = kNone;
  double ready_in_s = 0.0;  // start-up the running servers still need (into the next tick)
};

struct TickOutcome {
  JobState after;
  RegionTick played;      // what was played (spot in a region without spot is a wait)
  bool finished = false;  // the work is done within the tick
  double finish_s = 0.0;  // when (if finished)
  bool moved = false;     // the checkpoint moved to another region
};

int regions(const MultiRegionMarket& m) { return static_cast<int>(m.spot_ticks.size()); }

bool spot_at(const MultiRegionMarket& m, int region, int tick) {
  const auto& ticks = m.spot_ticks[region];
  return tick >= 0 && tick < static_cast<int>(ticks.size()) && ticks[tick] != 0;
}

// When spot can be had in `region` during `tick`: [from, to) seconds into it (empty: from == to).
struct SpotSpan {
  double from = 0.0;
  double to = 0.0;
  bool empty() const { return !(to > from); }
};

SpotSpan spot_span(const MultiRegionMarket& m, int region, int tick) {
  if (!m.spot_from_s.empty()) {
    const auto& from = m.spot_from_s[region];
    if (tick < 0 || tick >= static_cast<int>(from.size())) return {};
    return {from[tick], m.spot_to_s[region][tick]};
  }
  return spot_at(m, region, tick) ? SpotSpan{0.0, m.tick_s} : SpotSpan{};
}

// One tick of the accounting shared by the optimum and the online runs.
TickOutcome play_tick(const MultiRegionMarket& m, const JobState& s, RegionTick choice, int i) {
  const double g = m.tick_s;
  const double t0 = i * g;
  const bool placed = s.region < regions(m);
  TickOutcome out;
  out.after = s;
  out.after.ready_in_s = 0.0;
  SpotSpan span;
  if (choice.mode == ClusterMode::spot) {
    span = spot_span(m, choice.region, i);
    if (span.empty()) choice.mode = ClusterMode::idle;  // the request waits for spot, unbilled
  }
  if (choice.mode != ClusterMode::spot) choice.after_revocation = ClusterMode::idle;
  // Servers billed from `billed_from` that train from `ready`: is the work left (as it stands in
  // out.after) finished within [ready, until)? Then the tick ends there.
  auto finish = [&](double ready, double until, double billed_from, double usd_per_s) {
    const double done_s = ready + (m.work_s - out.after.progress_s);
    if (!(done_s < until)) return false;
    out.finished = true;
    out.finish_s = t0 + done_s;
    out.after.progress_s = m.work_s;
    out.after.cost_usd += m.fixed_usd_per_s * done_s + usd_per_s * (done_s - billed_from);
    return true;
  };
  switch (choice.mode) {
    case ClusterMode::idle:
      out.after.running = kNone;
      choice.region = s.region;
      out.after.cost_usd += m.fixed_usd_per_s * g;
      break;
    case ClusterMode::on_demand: {
      choice.region = placed ? s.region : 0;
      const double ready = s.running == kOnDemand ? s.ready_in_s : m.on_demand_changeover_s;
      if (finish(ready, g, 0.0, m.on_demand_usd_per_s)) break;
      out.after.progress_s += std::max(0.0, g - ready);
      out.after.ready_in_s = std::max(0.0, ready - g);
      out.after.running = kOnDemand;
      out.after.cost_usd += (m.fixed_usd_per_s + m.on_demand_usd_per_s) * g;
      break;
    }
    case ClusterMode::spot: {
      out.moved = placed && choice.region != s.region;
      const bool continuing = s.running == kSpot && choice.region == s.region && span.from <= 0.0;
      const double billed_from = continuing ? 0.0 : span.from;
      const double ready =
          continuing ? s.ready_in_s : span.from + m.spot_changeover_s + (out.moved ? m.move_s : 0);
      if (out.moved) out.after.cost_usd += m.move_usd;
      if (finish(ready, span.to, billed_from, m.spot_usd_per_s)) break;
      const SpotSpan next = spot_span(m, choice.region, i + 1);
      const bool revoked = span.to < g || next.empty() || next.from > 0.0;
      const double trained = std::max(0.0, span.to - ready);
      out.after.cost_usd += m.spot_usd_per_s * (span.to - billed_from);
      if (!revoked) {
        out.after.progress_s += trained;
        out.after.ready_in_s = std::max(0.0, ready - g);
        out.after.running = kSpot;
        out.after.cost_usd += m.fixed_usd_per_s * g;
        break;
      }
      out.after.progress_s += std::max(0.0, trained - m.notice_s);
      out.after.running = kNone;
      if (choice.after_revocation != ClusterMode::on_demand || !(span.to < g)) {
        choice.after_revocation = ClusterMode::idle;
        out.after.cost_usd += m.fixed_usd_per_s * g;
        break;
      }
      // On demand from the revocation to the tick's end (in the checkpoint's region).
      const double od_ready = span.to + m.on_demand_changeover_s;
      if (finish(od_ready, g, span.to, m.on_demand_usd_per_s)) break;
      out.after.progress_s += std::max(0.0, g - od_ready);
      out.after.ready_in_s = std::max(0.0, od_ready - g);
      out.after.running = kOnDemand;
      out.after.cost_usd += m.fixed_usd_per_s * g + m.on_demand_usd_per_s * (g - span.to);
      break;
    }
  }
  out.after.region = choice.region;
  out.played = choice;
  return out;
}

struct Label {
  JobState state;
  std::int32_t parent;  // index in the arena, -1 for the start
  RegionTick tick;      // the tick that produced this label
};

// Keeps the labels that no other label beats on both progress and cost.
void prune(std::vector<std::int32_t>& front, const std::vector<Label>& arena) {
  std::sort(front.begin(), front.end(), [&](std::int32_t a, std::int32_t b) {
    const JobState& x = arena[a].state;
    const JobState& y = arena[b].state;
    if (x.progress_s != y.progress_s) return x.progress_s > y.progress_s;
    return x.cost_usd < y.cost_usd;
  });
  std::size_t kept = 0;
  double cheapest = INFINITY;
  for (const std::int32_t index : front) {
    if (arena[index].state.cost_usd < cheapest) {
      front[kept++] = index;
      cheapest = arena[index].state.cost_usd;
    }
  }
  front.resize(kept);
}

void check(const MultiRegionMarket& m) {
  TRANSIENT_CHECK_GT(m.tick_s, 0.0);
  TRANSIENT_CHECK_GT(m.spot_ticks.size(), 0u);
  TRANSIENT_CHECK_LT(m.spot_changeover_s + m.move_s, m.tick_s);
  TRANSIENT_CHECK_LT(m.on_demand_changeover_s, m.tick_s);
  TRANSIENT_CHECK_LT(m.notice_s, m.tick_s);
  if (!m.spot_from_s.empty()) {
    TRANSIENT_CHECK_EQ(m.spot_from_s.size(), m.spot_ticks.size());
    TRANSIENT_CHECK_EQ(m.spot_to_s.size(), m.spot_ticks.size());
    for (std::size_t r = 0; r < m.spot_ticks.size(); ++r) {
      TRANSIENT_CHECK_EQ(m.spot_from_s[r].size(), m.spot_ticks[r].size());
      TRANSIENT_CHECK_EQ(m.spot_to_s[r].size(), m.spot_ticks[r].size());
    }
  }
}

}  // namespace

MultiRegionResult optimal_multi_region(const MultiRegionMarket& m) {
  check(m);
  const double g = m.tick_s;
  const int ticks = static_cast<int>(std::ceil(m.deadline_s / g));
  const int n = regions(m);
  // Fronts by (checkpoint region or "none yet", running servers, start-up they still need: 0
  // or one of the few values that spot coming late in a tick leaves), in blocks of `base` slots
  // per start-up value.
  const std::size_t base = static_cast<std::size_t>(n + 1) * 3;
  std::vector<double> ready_values = {0.0};
  auto slot = [&](const JobState& s) {
    std::size_t k = 0;
    while (k < ready_values.size() && ready_values[k] != s.ready_in_s) ++k;
    if (k == ready_values.size()) ready_values.push_back(s.ready_in_s);
    return k * base + static_cast<std::size_t>(s.region) * 3 + s.running;
  };
  auto add = [](std::vector<std::vector<std::int32_t>>& fronts, std::size_t at,
                std::int32_t label) {
    if (at >= fronts.size()) fronts.resize(at + 1);
    fronts[at].push_back(label);
  };

  std::vector<Label> arena;
  arena.reserve(4096);
  JobState start;
  start.region = n;
  arena.push_back({start, -1, {ClusterMode::idle, n}});
  std::vector<std::vector<std::int32_t>> front;
  add(front, slot(start), 0);
  MultiRegionResult best;
  std::int32_t best_parent = -1;
  RegionTick best_tick;

  std::vector<RegionTick> choices;
  for (int i = 0; i < ticks; ++i) {
    const double tick_start = i * g;
    choices = {{ClusterMode::idle, 0}, {ClusterMode::on_demand, 0}};
    for (int r = 0; r < n; ++r) {
      const SpotSpan span = spot_span(m, r, i);
      if (span.empty()) continue;
      choices.push_back({ClusterMode::spot, r});
      if (span.to < g) choices.push_back({ClusterMode::spot, r, ClusterMode::on_demand});
    }
    std::vector<std::vector<std::int32_t>> next(front.size());
    for (const auto& f : front) {
      for (const std::int32_t index : f) {
        const JobState s = arena[index].state;
        // Cannot finish from here even if it never stopped again: drop. (Servers already
        // running need only what is left of their start-up.)
        const double changeover_s = s.running == kNone
                                        ? std::min(m.spot_changeover_s, m.on_demand_changeover_s)
                                        : s.ready_in_s;
        if (s.progress_s + (m.deadline_s - tick_start - changeover_s) < m.work_s - 1e-9) {
          continue;
        }
        for (const RegionTick choice : choices) {
          const TickOutcome out = play_tick(m, s, choice, i);
          if (out.finished) {
            if (out.finish_s <= m.deadline_s &&
                (!best.finished || out.after.cost_usd < best.cost_usd)) {
              best.finished = true;
              best.cost_usd = out.after.cost_usd;
              best.finish_s = out.finish_s;
              best_parent = index;
              best_tick = out.played;
            }
            continue;
          }
          if (best.finished && out.after.cost_usd >= best.cost_usd) continue;
          arena.push_back({out.after, index, out.played});
          add(next, slot(out.after), static_cast<std::int32_t>(arena.size() - 1));
        }
      }
    }
    for (auto& f : next) {
      prune(f, arena);
      // A label that already costs more than the best finished schedule cannot win.
      if (best.finished) {
        f.erase(std::remove_if(
                    f.begin(), f.end(),
                    [&](std::int32_t k) { return arena[k].state.cost_usd >= best.cost_usd; }),
                f.end());
      }
    }
    front = std::move(next);
  }
  if (!best.finished) return best;
  best.missed_deadline = false;
  best.ticks.push_back(best_tick);
  for (std::int32_t k = best_parent; k > 0; k = arena[k].parent) {
    best.ticks.push_back(arena[k].tick);
  }
  std::reverse(best.ticks.begin(), best.ticks.end());
  int region = n;
  for (const RegionTick& t : best.ticks) {
    if (t.mode == ClusterMode::spot && region < n && t.region != region) ++best.moves;
    region = t.region;
  }
  return best;
}

namespace {

// Plays ticks chosen by `choose(state, tick, previous mode)` until the work is done, or for twice
// the deadline's ticks.
template <typename Choose>
MultiRegionResult play(const MultiRegionMarket& m, Choose choose) {
  check(m);
  MultiRegionResult result;
  JobState s;
  s.region = regions(m);
  ClusterMode mode = ClusterMode::idle;
  const int limit = 2 * static_cast<int>(std::ceil(m.deadline_s / m.tick_s)) + 1;
  for (int i = 0; i < limit; ++i) {
    const RegionTick choice = choose(s, i, mode);
    mode = choice.mode;
    const TickOutcome out = play_tick(m, s, choice, i);
    result.ticks.push_back(out.played);
    result.moves += out.moved;
    s = out.after;
    if (out.finished) {
      result.finished = true;
      result.finish_s = out.finish_s;
      result.missed_deadline = out.finish_s > m.deadline_s;
      break;
    }
  }
  result.cost_usd = s.cost_usd;
  return result;
}

}  // namespace

MultiRegionResult replay_multi_region(const MultiRegionMarket& m,
                                      const std::vector<RegionTick>& schedule) {
  return play(m, [&](const JobState&, int i, ClusterMode) {
    return i < static_cast<int>(schedule.size()) ? schedule[i]
                                                 : RegionTick{ClusterMode::on_demand, 0};
  });
}

MultiRegionResult run_multi_region(const MultiRegionMarket& m, MarketPolicy& policy) {
  TRANSIENT_CHECK(!policy.needs_offline_market());
  policy.begin_run(nullptr);
  const int n = regions(m);
  ZoneFollower follower(n);
  std::vector<std::uint8_t> up(n);
  return play(m, [&](const JobState& s, int i, ClusterMode mode) {
    for (int r = 0; r < n; ++r) up[r] = spot_at(m, r, i);
    const int region = follower.next(i, up);
    DeadlineState d;
    d.now_s = i * m.tick_s;
    d.progress_steps = s.progress_s;
    d.checkpoint_steps = s.progress_s;  // a revocation loses only work of the tick it ends
    d.total_steps = m.work_s;
    d.deadline_s = m.deadline_s;
    d.steps_per_s = 1.0;
    d.spot_changeover_s = m.spot_changeover_s;
    if (region >= 0 && s.region < n && region != s.region) d.spot_changeover_s += m.move_s;
    d.on_demand_changeover_s = m.on_demand_changeover_s;
    d.decision_interval_s = m.tick_s;
    d.mode = mode;
    d.spot_available = region >= 0;
    d.notice_s = m.notice_s;
    const bool training = (mode == ClusterMode::spot && s.running == kSpot) ||
                          (mode == ClusterMode::on_demand && s.running == kOnDemand);
    d.training_from_s = training ? d.now_s : INFINITY;
    d.spot_usd_per_s = m.spot_usd_per_s;
    d.on_demand_usd_per_s = m.on_demand_usd_per_s;
    const ClusterMode chosen = policy.decide(d);
    const int stay = s.region < n ? s.region : 0;
    return RegionTick{chosen, chosen == ClusterMode::spot && region >= 0 ? region : stay};
  });
}

}  // namespace transient::sim
