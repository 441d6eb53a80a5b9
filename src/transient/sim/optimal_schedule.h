// The cheapest schedule that meets the deadline, knowing the whole market in advance: the lower
// bound every deadline policy is measured against.
//
// A dynamic programme over the ticks of an OfflineMarket. At each tick the cluster is idle, on
// spot (only in a tick where spot servers can be had) or on demand; entering spot or on-demand
// from anything else costs the changeover; a spot tick followed by an unavailable one ends in a
// revocation that loses the work after the notice; servers are billed per second, the parameter
// server throughout. For each tick and running mode the programme keeps the Pareto front of
// (progress, cost) labels, so progress is exact (no discretisation). This is the simulator's own
// accounting for in-place recovery with deterministic start-up, decisions on the tick grid and no
// checkpoint write time, so on the same realisation no policy run by the simulator that meets the
// deadline costs less. It is optimal_multi_region() (multi_region.h) with one region.
#pragma once

#include <vector>

#include "transient/sim/market_policy.h"

namespace transient::sim {

struct OptimalSchedule {
  bool feasible = false;           // some schedule finishes by the deadline
  double cost_usd = 0.0;           // its cost (when feasible)
  double finish_s = 0.0;           // when it finishes (when feasible)
  std::vector<ClusterMode> ticks;  // the mode of each tick up to the finishing one
};

// REQUIRES: tick_s > 0, both changeovers < tick_s, notice_s < tick_s.
OptimalSchedule optimal_schedule(const OfflineMarket& market);

}  // namespace transient::sim
