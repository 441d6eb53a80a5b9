// The constants of the communication side of the throughput models (internal/
// cluster_composition.h gives the formulas): per-tensor costs at workers and parameter servers,
// how much of a link's nominal bandwidth is achieved, how sharply the parameter servers saturate,
// a ring all-reduce hop's latency, and the links between zones and between regions (a ring
// that spans them runs at their pace). Fitted by `transient fit` (the zone and region links are
// not: docs/models.md gives their source); plain value type.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace transient::perf {

struct CommunicationParams {
  double worker_per_tensor_s = 3.0e-4;      // seconds per tensor per step at a worker (async-ps)
  double network_efficiency = 0.6;          // fraction of a link's nominal bandwidth achieved
  double ps_per_tensor_s = 9.0e-5;          // server seconds per tensor per step
  double ps_network_gbps = 8.0;             // a parameter server's nominal link (n1-standard-4)
  double contention_sharpness = 8.0;        // p of the smooth minimum, >= 1
  double allreduce_hop_latency_s = 5.0e-5;  // one ring hop's latency

  // Links between the workers' locations (cloud::InstanceType::zone and region), as achieved by
  // one flow, so network_efficiency does not scale them. A ring all-reduce over several zones or
  // regions pays the slowest of these on every hop (internal/cluster_composition.h).
  double cross_zone_gbps = 10.0;              // between zones of one region
  double cross_zone_hop_latency_s = 2.5e-4;   // one way: half a 0.5 ms round trip
  double cross_region_gbps = 1.0;             // between regions
  double cross_region_hop_latency_s = 0.015;  // one way: half a 30 ms round trip

  // The built-in fit on CM-DARE's cluster-scaling speeds (`transient fit --data
  // ../shared/data/cmdare`, stage 2), shared by the built-in analytic and fitted models.
  static CommunicationParams builtin();

  nlohmann::json to_json() const;
  // Reads the keys above (all optional); `where` names the file for messages.
  static CommunicationParams from_json(const nlohmann::json& json, const std::string& where);
};

}  // namespace transient::perf
