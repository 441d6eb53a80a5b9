#include "transient/sim/optimal_schedule.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>

#include "transient/core/error.h"

namespace transient::sim {
namespace {

// Running modes after a tick: nothing running, spot servers running, on-demand servers running.
constexpr int kNone = 0;
constexpr int kSpot = 1;
constexpr int kOnDemand = 2;

struct Label {
  double progress_s;  // seconds of full-cluster work done (checkpointed or kept in memory)
  double cost_usd;
  std::int32_t parent;  // index in the arena, -1 for the start
  ClusterMode mode;     // the mode of the tick that produced this label
};

// Keeps the labels that no other label beats on both progress and cost.
void prune(std::vector<std::int32_t>& front, const std::vector<Label>& arena) {
  std::sort(front.begin(), front.end(), [&](std::int32_t a, std::int32_t b) {
    if (arena[a].progress_s != arena[b].progress_s) {
      return arena[a].progress_s > arena[b].progress_s;
    }
    return arena[a].cost_usd < arena[b].cost_usd;
  });
  std::size_t kept = 0;
  double cheapest = INFINITY;
  for (const std::int32_t index : front) {
    if (arena[index].cost_usd < cheapest) {
      front[kept++] = index;
      cheapest = arena[index].cost_usd;
    }
  }
  front.resize(kept);
}

}  // namespace

OptimalSchedule optimal_schedule(const OfflineMarket& m) {
  TRANSIENT_CHECK_GT(m.tick_s, 0.0);
  TRANSIENT_CHECK_LT(m.spot_changeover_s, m.tick_s);
  TRANSIENT_CHECK_LT(m.on_demand_changeover_s, m.tick_s);
  TRANSIENT_CHECK_LT(m.notice_s, m.tick_s);
  const double g = m.tick_s;
  const int ticks = static_cast<int>(std::ceil(m.deadline_s / g));
  auto spot_at = [&](int i) {
    return i >= 0 && i < static_cast<int>(m.spot_ticks.size()) && m.spot_ticks[i] != 0;
  };

  std::vector<Label> arena;
  arena.reserve(4096);
  arena.push_back({0.0, 0.0, -1, ClusterMode::idle});
  std::array<std::vector<std::int32_t>, 3> front;
  front[kNone] = {0};
  OptimalSchedule best;
  std::int32_t best_parent = -1;
  ClusterMode best_mode = ClusterMode::idle;

  for (int i = 0; i < ticks; ++i) {
    const double tick_start = i * g;
    std::array<std::vector<std::int32_t>, 3> next;
    for (int running = 0; running < 3; ++running) {
      for (const std::int32_t index : front[running]) {
        const Label label = arena[index];
        // Cannot finish even on demand from here: drop.
        if (label.progress_s + (m.deadline_s - tick_start - m.on_demand_changeover_s) <
            m.work_s - 1e-9) {
          continue;
        }
        for (const ClusterMode mode :
             {ClusterMode::idle, ClusterMode::spot, ClusterMode::on_demand}) {
          double usd_per_s = m.fixed_usd_per_s;
          double start_s = 0.0;
          bool revoked = false;
          int after = kNone;
          if (mode == ClusterMode::spot) {
            if (!spot_at(i)) continue;
            usd_per_s += m.spot_usd_per_s;
            if (running != kSpot) start_s = m.spot_changeover_s;
            revoked = !spot_at(i + 1);
            after = revoked ? kNone : kSpot;
          } else if (mode == ClusterMode::on_demand) {
            usd_per_s += m.on_demand_usd_per_s;
            if (running != kOnDemand) start_s = m.on_demand_changeover_s;
            after = kOnDemand;
          }
          if (mode != ClusterMode::idle) {
            const double finish_in_tick_s = start_s + (m.work_s - label.progress_s);
            if (finish_in_tick_s < g && tick_start + finish_in_tick_s <= m.deadline_s) {
              const double cost = label.cost_usd + usd_per_s * finish_in_tick_s;
              if (!best.feasible || cost < best.cost_usd) {
                best.feasible = true;
                best.cost_usd = cost;
                best.finish_s = tick_start + finish_in_tick_s;
                best_parent = index;
                best_mode = mode;
              }
              continue;
            }
          }
          double gain_s = 0.0;
          if (mode != ClusterMode::idle) {
            gain_s = std::max(0.0, g - start_s - (revoked ? m.notice_s : 0.0));
          }
          arena.push_back({label.progress_s + gain_s, label.cost_usd + usd_per_s * g, index, mode});
          next[after].push_back(static_cast<std::int32_t>(arena.size() - 1));
        }
      }
    }
    for (auto& f : next) prune(f, arena);
    // A label that already costs more than the best finished schedule cannot win.
    if (best.feasible) {
      for (auto& f : next) {
        f.erase(std::remove_if(f.begin(), f.end(),
                               [&](std::int32_t k) { return arena[k].cost_usd >= best.cost_usd; }),
                f.end());
      }
    }
    front = std::move(next);
  }
  if (!best.feasible) return best;
  best.ticks.push_back(best_mode);
  for (std::int32_t k = best_parent; k > 0; k = arena[k].parent)
    best.ticks.push_back(arena[k].mode);
  std::reverse(best.ticks.begin(), best.ticks.end());
  return best;
}

}  // namespace transient::sim
