// The cheapest schedule that meets the deadline, knowing the whole market in advance: the lower
// bound every deadline policy is measured against.
//
// A dynamic programme over the ticks of an OfflineMarket. At each tick the cluster is idle, on
// spot (only in a tick where spot servers can be had, from when they can) or on demand; entering
// spot or on-demand from anything else costs the changeover; spot that ends (inside a tick, or
// with a tick followed by an unavailable one) is a revocation that loses the work after the
// notice, after which the job may go on demand at once; servers are billed per second, the
// parameter server throughout. Spot that comes or goes inside a tick (a trace at an offset off
// the decision grid) is counted from and until when it does, as the event simulator lets a
// policy use it: a request waits for spot, a revocation is decided on at once. For each tick and
// running mode the programme keeps the Pareto front of (progress, cost) labels, so progress is
// exact (no discretisation). This is the simulator's own accounting for in-place recovery with
// deterministic start-up, decisions on the tick grid, no checkpoint write time and spot that
// changes at most once inside a tick (a trace sampled no finer than the decision interval, at
// any offset; the first period of spot in a tick is the one counted), so on the same realisation
// no policy run by the simulator that meets the deadline costs less (tested on the AWS traces at
// random offsets). It is optimal_multi_region() (multi_region.h) with one region.
//
// Where the market has and revokes each spot server on its own (OfflineMarket::spot_server set:
// one worker on a lifetime model, say), a second programme: its labels also carry the servers
// held (when had, when training, when revoked), each request's server starts in its own time
// (OfflineMarket::changeover_s: start-ups that vary as the run draws them, not their mean), a
// spot server trains until its own revocation, and at each revocation inside a tick the schedule
// branches on what is asked for next (idle, on demand, or spot again: the next request's
// server); a server revoked exactly at a tick's end is gone before the next decision. Labels
// that can no longer finish by the deadline, or that would cost more than a known schedule even
// with the rest of their work on spot, are dropped.
#pragma once

#include <vector>

#include "transient/sim/market_policy.h"

namespace transient::sim {

struct OptimalSchedule {
  bool feasible = false;           // some schedule finishes by the deadline
  double cost_usd = 0.0;           // its cost (when feasible)
  double finish_s = 0.0;           // when it finishes (when feasible)
  std::vector<ClusterMode> ticks;  // the mode of each tick up to the finishing one
  // What to do at the k-th revocation inside tick i: after_revocation[i][k] (past the list, its
  // last; an empty list: idle).
  std::vector<std::vector<ClusterMode>> after_revocation;
};

// REQUIRES: tick_s > 0, both changeovers < tick_s, notice_s < tick_s.
OptimalSchedule optimal_schedule(const OfflineMarket& market);

}  // namespace transient::sim
