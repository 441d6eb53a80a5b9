// The planner's candidate enumeration (docs/plan.md, steps 2 and 3): the offers of the catalog,
// the mixed-integer programmes over them (cluster_mip.h) and the configurations they propose for
// one request. Private to the planner; Planner::plan() evaluates and chooses among them.
#pragma once

#include <optional>
#include <vector>

#include "transient/cloud/catalog.h"
#include "transient/perf/throughput_model.h"
#include "transient/plan/cluster_mip.h"
#include "transient/plan/configuration.h"
#include "transient/plan/flopp.h"
#include "transient/plan/planner.h"
#include "transient/plan/request.h"

namespace transient::plan::internal {

// One (type, market, region) the programmes may buy, in the region's cheapest zone that sells it.
struct Offer {
  cloud::InstanceType type;
  cloud::Market market = cloud::Market::spot;
  double usd_per_h = 0.0;
};

struct Candidates {
  std::vector<Offer> offers;  // each (type, market, region) once, best FLOPP first
  // The mixed programme's top-k under the request (cost per step under a deadline, else speed),
  // then the sweep of speed floors from the slowest server's to the fastest plan's, each at the
  // lowest price per hour (it catches plans whose start-up delay, which the programme's cost per
  // step leaves out, matters); no configuration twice.
  std::vector<Configuration> pool;
  // The best homogeneous and the best all-on-demand plans: checked even outside the top-k.
  std::vector<Configuration> always;
  // The mixed programme's fastest and cheapest plans, whatever the request (nullopt: none).
  std::optional<Configuration> fastest;
  std::optional<Configuration> cheapest;
  int mip_solves = 0;  // CBC solves
};

// `constraints`: the request's speed floor and price per step (no exclusions). Every
// configuration spans options.max_regions regions at most and has one on-demand support server,
// that of the region of its largest group (`support` has every region of `flopp`).
Candidates enumerate_candidates(const std::vector<FloppEntry>& flopp,
                                const perf::ThroughputModel& throughput, const PlanOptions& options,
                                const Request& request, const SupportServers& support,
                                const MipConstraints& constraints);

}  // namespace transient::plan::internal
