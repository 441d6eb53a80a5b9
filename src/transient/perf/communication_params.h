// The constants of the communication side of the throughput models (internal/
// cluster_composition.h gives the formulas): per-tensor costs at workers and parameter servers,
// how much of a link's nominal bandwidth is achieved, how sharply the parameter servers saturate,
// a ring all-reduce hop's latency, the links between the GPUs of one server, and the links
// between zones and between regions (a ring that spans them runs at their pace). Fitted by
// `transient fit` (the server, zone and region links are not: docs/models.md gives their
// source); plain value type.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "transient/perf/batch_scaling.h"

namespace transient::perf {

struct CommunicationParams {
  double worker_per_tensor_s = 3.0e-4;      // seconds per tensor per step at a worker (async-ps)
  double network_efficiency = 0.6;          // fraction of a link's nominal bandwidth achieved
  double ps_per_tensor_s = 9.0e-5;          // server seconds per tensor per step
  double ps_network_gbps = 8.0;             // a parameter server's nominal link (n1-standard-4)
  double contention_sharpness = 8.0;        // p of the smooth minimum, >= 1
  double allreduce_hop_latency_s = 5.0e-5;  // one ring hop's latency

  // Links between the GPUs of one server, which the intra-server part of a hierarchical
  // all-reduce uses (internal/cluster_composition.h): NVLink on servers of the GPUs that clouds
  // sell as SXM parts (V100, A100, H100, H200), PCIe otherwise. Achieved bus bandwidth.
  double nvlink_gbps = 1200.0;                 // V100 SXM2: 6 links x 25 GB/s each way
  double pcie_gbps = 96.0;                     // PCIe 3.0 x16: 12 of its 15.75 GB/s
  double intra_server_hop_latency_s = 1.0e-5;  // one hop between GPUs of a server

  // Links between the workers' locations (cloud::InstanceType::zone and region), as achieved by
  // one flow, so network_efficiency does not scale them. A ring all-reduce over several zones or
  // regions pays the slowest of these on every hop (internal/cluster_composition.h).
  double cross_zone_gbps = 10.0;              // between zones of one region
  double cross_zone_hop_latency_s = 2.5e-4;   // one way: half a 0.5 ms round trip
  double cross_region_gbps = 1.0;             // between regions
  double cross_region_hop_latency_s = 0.015;  // one way: half a 30 ms round trip

  // How a worker's step depends on its share of the batch (batch_scaling.h; not in model files:
  // fitted on TensorFlow's benchmarks, not by `transient fit`). Empty: no fixed part.
  BatchScaling batch_scaling = BatchScaling::builtin();

  // The built-in fit on CM-DARE's cluster-scaling speeds (`transient fit --data
  // ../shared/data/cmdare`, stage 2), shared by the built-in analytic and fitted models.
  static CommunicationParams builtin();

  nlohmann::json to_json() const;
  // Reads the keys above (all optional); `where` names the file for messages.
  static CommunicationParams from_json(const nlohmann::json& json, const std::string& where);
};

}  // namespace transient::perf
