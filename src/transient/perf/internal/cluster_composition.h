// How per-worker step times combine into a cluster's speed, shared by the analytic and the
// fitted models (which differ only in how they predict one worker's compute time).
//
// Asynchronous parameter servers (the research's TensorFlow set-up): a worker's step is its
// compute time plus its own push of the gradients and pull of the parameters
// (tensors x worker_per_tensor_s + 2 x bytes / its link); without contention the cluster runs
// at R = sum over workers of 1 / step. Each step also costs the servers
// S = (tensors x ps_per_tensor_s + bytes / server link) / k with k servers sharing the tensors and
// bytes, which caps the cluster at C = 1 / S. The speed is the smooth minimum
// (R^-p + C^-p)^(-1/p), p = contention_sharpness (large p: a hard min).
//
// Synchronous ring all-reduce (our trainer): the global batch (workers x batch_per_worker) is
// split in proportion to speed, so compute takes n / sum(1 / compute_i); the all-reduce takes
// 2(n-1) x hop_latency_s + 2(n-1)/n x bytes / slowest link; a step is their sum and counts as n
// global steps (every worker's batch is one step, as the research counts them). Workers in
// several zones of a region, or in several regions (their types' zone and region), put the link
// between them in the ring: the hop latency is the larger of the two and the slowest link is at
// most that link's bandwidth (CommunicationParams::cross_zone_*, cross_region_*).
#pragma once

#include <vector>

#include "transient/perf/communication_params.h"
#include "transient/perf/throughput_model.h"
#include "transient/perf/workload.h"

namespace transient::perf::internal {

// One worker of a group: its compute time for one step of batch_per_worker samples, and its own
// async-ps push + pull time (worker_transfer_s for the analytic model).
struct WorkerTime {
  double compute_s = 0;
  double ps_transfer_s = 0;
};

// `times[i]` for a worker of cluster.workers[i]. Throws InputError for a worker without network
// bandwidth in an all-reduce cluster, TRANSIENT_CHECK for mismatched sizes.
Prediction compose_cluster(const ClusterShape& cluster, const Workload& workload,
                           const std::vector<WorkerTime>& times, const CommunicationParams& comm);

// The parameter servers' time per global step, `servers` sharing the tensors and bytes.
double server_step_s(const Workload& workload, int servers, const CommunicationParams& comm);

// One async-ps worker's own communication time per step (push + pull, no contention).
double worker_transfer_s(const Workload& workload, double network_gbps,
                         const CommunicationParams& comm);

}  // namespace transient::perf::internal
