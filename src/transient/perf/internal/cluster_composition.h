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
// A server with k GPUs runs k workers, one per GPU (a worker's time is that of one GPU of its
// type; one_gpu() gives the type the models predict for). The job's batch (Workload::batch,
// job_batch.h) sets each worker's samples per step; a worker's time for b samples follows
// batch_scaling.h from its time for the workload's batch_per_worker.
//
// Synchronous all-reduce (our trainer): a step trains on the job's batch G (the global batch, or
// the per-worker batch x the workers), split in proportion to speed: with worker i taking
// fixed_i + a_i x b_i for b_i samples, all finish at T = (G + sum fixed_i / a_i) / sum 1 / a_i
// (a worker whose fixed part alone exceeds T takes no sample and T is at least its fixed part).
// The all-reduce is hierarchical: within each server over its GPUs' links (NVLink or PCIe,
// CommunicationParams), 2(k-1) x intra_hop + 2(k-1)/k x bytes / intra link, with k the most GPUs
// of a server; between the s servers a ring over the network, 2(s-1) x hop_latency +
// 2(s-1)/s x bytes / slowest link (the k rings of a server's GPUs share its link). A step is
// T plus both, and counts as one step of G samples. Workers in several zones of a region, or in
// several regions (their types' zone and region), put the link between them in the ring: the
// hop latency is the larger of the two and the slowest link is at most that link's bandwidth
// (CommunicationParams::cross_zone_*, cross_region_*). Servers of one GPU each give the flat
// ring of n workers.
#pragma once

#include <vector>

#include "transient/perf/communication_params.h"
#include "transient/perf/throughput_model.h"
#include "transient/perf/workload.h"

namespace transient::perf::internal {

// One worker (one GPU) of a group: its compute time for one step of the workload's
// batch_per_worker samples, and its own async-ps push + pull time (worker_transfer_s for the
// analytic model) over its server's link, which the server's GPUs share.
struct WorkerTime {
  double compute_s = 0;
  double ps_transfer_s = 0;
};

// `type` as one of its GPUs: gpus = 1 where it has several, so that total_tflops() is one GPU's.
cloud::InstanceType one_gpu(cloud::InstanceType type);

// A worker's compute time `calibrated_s` for a step of CM-DARE's batch (kCmdareBatch: the
// analytic and fitted constants describe such steps), as one of the workload's batch_per_worker
// on one GPU of `type` (batch_scaling.h, with comm.batch_scaling); `calibrated_s` itself where
// the two batches are equal.
double at_workload_batch(double calibrated_s, const Workload& workload,
                         const cloud::InstanceType& type, const CommunicationParams& comm);

// Seconds of a step of `samples` samples on one GPU of `type` that takes `compute_s` for the
// workload's batch_per_worker (batch_scaling.h, with comm.batch_scaling).
double worker_step_s(const Workload& workload, const cloud::InstanceType& type, double compute_s,
                     double samples, const CommunicationParams& comm);

// `times[i]` for a worker of cluster.workers[i]. Throws InputError for a worker without network
// bandwidth in an all-reduce cluster, TRANSIENT_CHECK for mismatched sizes.
Prediction compose_cluster(const ClusterShape& cluster, const Workload& workload,
                           const std::vector<WorkerTime>& times, const CommunicationParams& comm);

// What an async-ps cluster's workers ask of the servers: R, its speed without the servers'
// contention (steps/s), and the workers' summed compute and transfer seconds (which one bounds a
// cluster the servers do not). Depends on the communication constants of the workers' side only
// (batch scaling, not the servers' ps_* constants nor the sharpness).
struct AsyncPsLoad {
  double uncontended_steps_per_s = 0;
  double compute_share = 0;
  double transfer_share = 0;
};
AsyncPsLoad async_ps_load(const ClusterShape& cluster, const Workload& workload,
                          const std::vector<WorkerTime>& times, const CommunicationParams& comm);

// The smooth minimum (R^-p + C^-p)^(-1/p) of the uncontended speed R and the servers' cap C,
// p = the contention sharpness.
double contended_steps_per_s(double uncontended, double cap, double sharpness);

// The parameter servers' time per global step, `servers` sharing the tensors and bytes.
double server_step_s(const Workload& workload, int servers, const CommunicationParams& comm);

// One async-ps worker's own communication time per step (push + pull, no contention).
double worker_transfer_s(const Workload& workload, double network_gbps,
                         const CommunicationParams& comm);

}  // namespace transient::perf::internal
