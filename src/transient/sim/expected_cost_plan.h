// The cheapest expected way to finish a job by its deadline on a market known only by its
// AvailabilityPrior: what `market-aware` decides with. A dynamic programme backwards over the
// decision ticks, on the accounting of optimal_schedule.h (a tick idle, on spot or on demand;
// entering a mode costs its changeover; a spot tick whose successor has no spot ends in a
// revocation that loses the work after the notice), but with the next tick's availability drawn
// from the prior given how long the current availability has lasted (for a job that moves
// between zones, a spot period that ends is followed at once by another zone's with the prior's
// chance of moving on: a revocation, then spot of age 0). A state is the tick, the
// progress (on a grid of a tenth of a tick or coarser, interpolated), the servers running, the
// availability and its age. A course of action that some revocation the prior allows would
// leave unable to finish by the deadline counts as infinitely dear, so the plan itself keeps the
// deadline within its model; the policy keeps the shared safety net on top (market_policy.h).
//
// Immutable once made; safe to share between threads. Making one costs about 0.2 s for a 36 h
// deadline on 10-minute ticks (sim_bench's market_aware_plan; a policy makes it once for all its
// runs); a decision is a table look-up.
#pragma once

#include <cstdint>
#include <vector>

#include "transient/sim/availability_prior.h"
#include "transient/sim/market_policy.h"

namespace transient::sim {

class ExpectedCostPlan {
 public:
  // `job`: the job and its prices; its spot_ticks are not read (the prior stands for them).
  // REQUIRES: job.tick_s == prior.tick_s(); changeovers and notice < tick_s; work_s > 0.
  ExpectedCostPlan(const OfflineMarket& job, const AvailabilityPrior& prior);

  // Whether the plan was made for this job (same tick, work, deadline, notice, prices). The
  // changeovers may differ: a move to another region adds to the spot changeover of one
  // decision, and planning again at every such decision would cost more than it is worth.
  bool made_for(const OfflineMarket& job) const;

  // The mode to run in the tick that starts at `tick`, with `progress_s` of work done, `running`
  // the servers already running (idle: none), spot `available` now, and `age` ticks since the
  // availability last changed (AvailabilityPrior::kUnknownAge if not seen). Idle means: wait
  // (skip spot that is available, or wait for it). On demand when no plan finishes (past the
  // plan's last tick, or too little time left in its model).
  ClusterMode decide(int tick, double progress_s, ClusterMode running, bool available,
                     int age) const;

  // The plan's expected cost from the start (idle, availability of unknown age) with spot
  // available or not; infinity when it cannot promise the deadline.
  double expected_cost_usd(bool available) const;

 private:
  int state_index(ClusterMode running, bool available, int age) const;

  OfflineMarket job_;
  double cell_s_ = 0.0;  // progress grid
  int cells_ = 0;        // grid points 0..cells_ (the last is the whole work)
  int ticks_ = 0;        // decision ticks before the deadline
  // Per tick, the grid points planned ([lo, hi]) and where their decisions start in decisions_.
  std::vector<int> lo_;
  std::vector<int> hi_;
  std::vector<std::size_t> offset_;
  std::vector<std::uint8_t> decisions_;  // ClusterMode per (tick, grid point, state)
  double start_cost_usd_[2] = {0.0, 0.0};
};

}  // namespace transient::sim
