// A cluster the planner may recommend: worker groups (type, market, count) and the on-demand
// servers that hold the parameters or coordinate the job. Plain value type.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "transient/perf/throughput_model.h"
#include "transient/sim/scenario.h"

namespace transient::plan {

struct Configuration {
  std::vector<sim::ServerGroup> workers;            // the training servers
  std::vector<sim::ServerGroup> parameter_servers;  // on-demand, billed throughout

  // Price of every server, $ per hour.
  double usd_per_h() const;
  int total_workers() const;
  // "4 x n1-standard-4+k80 spot (us-east1-c) + 1 x n1-standard-4 on-demand".
  std::string text() const;
  // The workers as the throughput model sees them (groups of one type in two markets merged).
  perf::ClusterShape shape(perf::Architecture architecture) const;
  // Same servers in the same markets and zones.
  bool same_as(const Configuration& other) const;
  // The regions of the workers (InstanceType::region, an empty one counted as a region).
  int worker_regions() const;
};

// `workers` and one on-demand `support` server (the parameter server or the coordinator).
Configuration with_support_server(std::vector<sim::ServerGroup> workers,
                                  const cloud::InstanceType& support);

// The support server of each region (support_server.h), by InstanceType::region.
using SupportServers = std::map<std::string, cloud::InstanceType>;

// `workers` and the support server of the region of their largest group (the first of equals).
// REQUIRES: `workers` not empty, `support` has that region.
Configuration with_support_server(std::vector<sim::ServerGroup> workers,
                                  const SupportServers& support);

// `list` with `c` appended unless it holds the same configuration already (same_as).
void append_new(std::vector<Configuration>& list, const Configuration& c);

}  // namespace transient::plan
