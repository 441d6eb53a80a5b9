// Can't Be Late's multi-region setting: a job that may move between regions or zones to follow
// spot availability, and the cheapest schedule that meets its deadline knowing all the markets.
//
// The model is the accounting of optimal_schedule.h, on the decision grid: in each tick the job
// is idle, on demand (in the region that holds its checkpoint: on-demand servers can be had
// everywhere, so it never moves for them) or on spot in one region where spot servers can be had
// in the tick (from when they can be had: a request waits for spot, unbilled). Starting servers
// costs their changeover, which may run on into the next tick; starting spot servers in another
// region than the checkpoint's also costs moving the checkpoint (`move_s` of billed time and
// `move_usd`); spot servers whose spot ends (inside the tick, or at its end when the next tick
// does not start with spot) are revoked and lose the work after the notice, and from a
// revocation inside a tick the job is idle or on demand until the tick's end. With one region and
// no move this is optimal_schedule() itself.
//
// run_multi_region() plays an online MarketPolicy on the same accounting: at each tick the policy
// sees spot as available if some region has it, with the changeover of the region it would go
// to; the region is the one a ZoneFollower (availability_prior.h) follows: the one it was last
// in while that has spot, otherwise the one whose spot has been up longest (time since its last
// change: the longest-lived period is expected to last longest).
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "transient/sim/market_policy.h"

namespace transient::sim {

struct MultiRegionMarket {
  // spot_ticks[r][i] = 1: spot servers can be had and kept in region r all of tick i.
  std::vector<std::vector<std::uint8_t>> spot_ticks;
  // Where spot is up for part of a tick only (a trace replayed at an offset off the decision
  // grid: spot comes or goes inside ticks): spot can be had in region r over [spot_from_s[r][i],
  // spot_to_s[r][i]), seconds into tick i (from == to: not at all; [0, tick_s): spot_ticks 1).
  // Empty: spot_ticks says it all. A request for spot waits for it (unbilled); servers whose
  // spot ends inside the tick are revoked then, and the job may go on demand at once.
  std::vector<std::vector<double>> spot_from_s, spot_to_s;
  double tick_s = 600.0;                // length of a tick (the decision interval)
  double work_s = 0.0;                  // seconds of full-cluster work the job needs
  double deadline_s = 0.0;              // the deadline
  double spot_changeover_s = 0.0;       // start-up + restart pause when moving to spot
  double on_demand_changeover_s = 0.0;  // start-up + restart pause when moving to on-demand
  double move_s = 0.0;                  // moving the checkpoint to another region, seconds
  double move_usd = 0.0;                // moving the checkpoint to another region, $ (egress)
  double notice_s = 0.0;                // work after the notice is lost at a revocation
  double spot_usd_per_s = 0.0;          // the cluster's workers on spot, $ per second
  double on_demand_usd_per_s = 0.0;     // the cluster's workers on demand, $ per second
  double fixed_usd_per_s = 0.0;         // servers billed throughout (parameter server)
};

// The mode and region of one tick of a schedule (region: where the checkpoint is after it), and
// what the job does when spot servers are revoked inside the tick (idle or on demand).
struct RegionTick {
  ClusterMode mode = ClusterMode::idle;
  int region = 0;
  ClusterMode after_revocation = ClusterMode::idle;
  bool operator==(const RegionTick& o) const {
    return mode == o.mode && region == o.region && after_revocation == o.after_revocation;
  }
};

struct MultiRegionResult {
  bool finished = false;          // the job reached its work (by the deadline for the optimum)
  bool missed_deadline = true;    // not finished by the deadline
  double cost_usd = 0.0;          // what it cost (the optimum's when it is the optimum)
  double finish_s = 0.0;          // when it finished
  int moves = 0;                  // times the checkpoint moved to another region
  std::vector<RegionTick> ticks;  // the mode and region of each tick up to the finishing one
};

// The cheapest schedule that finishes by the deadline; `finished` false when none does.
// REQUIRES: tick_s > 0; changeovers + move_s, and notice_s, < tick_s; at least one region, all
// regions with as many ticks.
MultiRegionResult optimal_multi_region(const MultiRegionMarket& market);

// Plays `schedule` (from optimal_multi_region) or, when it is empty, `policy`, tick by tick. Ticks
// past the deadline continue on demand decisions of the policy until the work is done (or for
// as long again as the deadline, then the run is reported unfinished).
MultiRegionResult run_multi_region(const MultiRegionMarket& market, MarketPolicy& policy);
MultiRegionResult replay_multi_region(const MultiRegionMarket& market,
                                      const std::vector<RegionTick>& schedule);

}  // namespace transient::sim
