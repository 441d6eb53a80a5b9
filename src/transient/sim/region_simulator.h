// A scenario with several regions (Scenario::regions), run as Can't Be Late's multi-region
// setting: `transient simulate` gives such a scenario here instead of to the event simulator.
//
// Each run samples every region's market on the decision grid (a tick has spot when the region's
// server holds through it: a server is started at the first available tick and lives until the
// market revokes it, the tick of the revocation has no spot, and the next available tick starts
// another; on a trace this is the single-region optimum's count), then plays
// the scenario's market policy with run_multi_region() and solves optimal_multi_region() on the
// same markets: the run's cost is reported against the multi-region optimum. The accounting is
// multi_region.h's (the optimum's): the mean start-up, a checkpoint at every notice, periodic
// checkpoints free. Every region's market starts from the run's seed, so traces of one length
// replayed from a random offset start at the same moment (the zones' traces were recorded
// together); a random model's revocations are drawn per region.
//
// A RegionSimulator is used by one thread (its policy keeps a run's state); a run is a pure
// function of the scenario and the seed.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "transient/sim/market_policy.h"
#include "transient/sim/monte_carlo.h"
#include "transient/sim/multi_region.h"
#include "transient/sim/scenario.h"

namespace transient::sim {

// One run of a multi-region scenario: the policy's and the optimum's on the same markets.
struct RegionRunResult {
  MultiRegionResult run;      // the scenario's market policy
  MultiRegionResult optimal;  // the cheapest schedule that meets the deadline (finished: one does)
};

class RegionSimulator {
 public:
  // Throws InputError when the scenario is not one the multi-region model runs: no regions, no
  // deadline or market policy, a budget, other than one worker group, no spot price, or a
  // decision interval not longer than the changeovers with the move, and the notice.
  explicit RegionSimulator(Scenario scenario);

  const Scenario& scenario() const { return scenario_; }

  // The markets of the run with `seed`, on the decision grid, with the job and its prices.
  MultiRegionMarket market(std::uint64_t seed) const;

  RegionRunResult run(std::uint64_t seed);

 private:
  Scenario scenario_;
  MultiRegionMarket job_;  // the job and its prices; no ticks
  std::unique_ptr<MarketPolicy> policy_;
};

// Every run's result in run order, run i with seed + i, over `threads` (one RegionSimulator
// each); the same for any number of threads. Throws InputError as RegionSimulator does.
std::vector<RegionRunResult> run_many_regions(const Scenario& scenario,
                                              const MonteCarloOptions& options);

// A multi-region run as the run statistics count it (sim::summarize): finished, missed deadline,
// time and cost.
RunResult as_run_result(const MultiRegionResult& result);

}  // namespace transient::sim
