#include "transient/sim/optimal_schedule.h"

#include "transient/sim/multi_region.h"

namespace transient::sim {

// The single-region case of the multi-region programme: one region, nothing to move.
OptimalSchedule optimal_schedule(const OfflineMarket& m) {
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
    schedule.after_revocation.push_back(tick.after_revocation);
  }
  return schedule;
}

}  // namespace transient::sim
