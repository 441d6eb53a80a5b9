#include "transient/perf/internal/cluster_composition.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <string>

#include "transient/core/bounds.h"
#include "transient/core/error.h"
#include "transient/core/text.h"
#include "transient/perf/batch_scaling.h"

namespace transient::perf::internal {
namespace {

constexpr double kBytesPerGbit = 1e9 / 8.0;

double link_bytes_per_s(const cloud::InstanceType& type, const CommunicationParams& comm) {
  if (!(type.network_gbps > 0)) {
    // The commands check their catalog first (perf::require_network), naming its file.
    throw InputError("instance type " + type.name +
                     " has no network bandwidth (its catalog's network_gbps); the model needs "
                     "network_gbps > 0");
  }
  return type.network_gbps * kBytesPerGbit * comm.network_efficiency;
}

// Workers per server: one per GPU.
int gpus_per_server(const cloud::InstanceType& type) { return std::max(1, type.gpus); }

// GPU models whose multi-GPU cloud servers join their GPUs by NVLink (SXM parts), with their
// variants ("V100-32GB", "A100-80GB").
bool has_nvlink(const std::string& gpu) {
  const std::string upper = uppercase(gpu);
  for (const char* model : {"V100", "A100", "H100", "H200"}) {
    if (upper.rfind(model, 0) == 0) return true;
  }
  return false;
}

double local_link_bytes_per_s(const cloud::InstanceType& type, const CommunicationParams& comm) {
  return (has_nvlink(type.gpu) ? comm.nvlink_gbps : comm.pcie_gbps) * kBytesPerGbit;
}

// Where the workers are, from the widest spread: one zone (or no location given), several zones
// of one region, several regions. A location left empty matches any.
enum class Spread { one_zone, zones, regions };

Spread spread_of(const ClusterShape& cluster) {
  std::string region, zone;
  Spread spread = Spread::one_zone;
  for (const auto& group : cluster.workers) {
    if (group.count == 0) continue;
    const auto& type = group.type;
    if (!type.region.empty()) {
      if (region.empty()) region = type.region;
      if (type.region != region) return Spread::regions;
    }
    if (!type.zone.empty()) {
      if (zone.empty()) zone = type.zone;
      if (type.zone != zone) spread = Spread::zones;
    }
  }
  return spread;
}

double read(const nlohmann::json& json, const char* key, double fallback, const Bound& bound,
            const std::string& where) {
  if (!json.contains(key)) return fallback;
  const auto& value = json.at(key);
  if (!value.is_number() || !bound.contains(value.get<double>())) {
    throw InputError(where + ": \"" + key + "\" is " + value.dump() +
                     "; accepted: " + bound.accepted());
  }
  return value.get<double>();
}

}  // namespace

}  // namespace transient::perf::internal

namespace transient::perf {

CommunicationParams CommunicationParams::builtin() {
  CommunicationParams p;
  p.worker_per_tensor_s = 0.0;
  p.network_efficiency = 1.820439171;
  p.ps_per_tensor_s = 0.0001095872691;
  p.ps_network_gbps = 6.364736349;
  p.contention_sharpness = 4.0;
  p.allreduce_hop_latency_s = 5e-05;
  // Not fitted on CM-DARE (one zone): the links of the trainer's multi-host benchmark
  // (docs/models.md, "Links between zones and regions").
  p.cross_zone_gbps = 10.0;
  p.cross_zone_hop_latency_s = 2.5e-4;
  p.cross_region_gbps = 1.0;
  p.cross_region_hop_latency_s = 0.015;
  // Not fitted either: the links between a server's GPUs (docs/models.md, "Servers with
  // several GPUs").
  p.nvlink_gbps = 1200.0;
  p.pcie_gbps = 96.0;
  p.intra_server_hop_latency_s = 1.0e-5;
  return p;
}

nlohmann::json CommunicationParams::to_json() const {
  return {{"worker_per_tensor_s", worker_per_tensor_s},
          {"network_efficiency", network_efficiency},
          {"ps_per_tensor_s", ps_per_tensor_s},
          {"ps_network_gbps", ps_network_gbps},
          {"contention_sharpness", contention_sharpness},
          {"allreduce_hop_latency_s", allreduce_hop_latency_s},
          {"nvlink_gbps", nvlink_gbps},
          {"pcie_gbps", pcie_gbps},
          {"intra_server_hop_latency_s", intra_server_hop_latency_s},
          {"cross_zone_gbps", cross_zone_gbps},
          {"cross_zone_hop_latency_s", cross_zone_hop_latency_s},
          {"cross_region_gbps", cross_region_gbps},
          {"cross_region_hop_latency_s", cross_region_hop_latency_s}};
}

CommunicationParams CommunicationParams::from_json(const nlohmann::json& json,
                                                   const std::string& where) {
  CommunicationParams p;
  if (!json.is_object()) throw InputError(where + ": communication parameters must be an object");
  // Fitted, so above 1 where the nominal link undersells it (the built-in fit has 1.8), and 1000
  // where the fit found the link never limits (throughput_fitting.cc): what `fit -o` writes,
  // `predict --model` reads.
  constexpr Bound kEfficiency{1e-6, 1e3, "x the nominal bandwidth"};
  // Per-tensor and per-hop costs are seconds of one message: a minute is beyond any network.
  constexpr Bound kMessageS{0.0, 60.0, "s"};
  p.worker_per_tensor_s =
      internal::read(json, "worker_per_tensor_s", p.worker_per_tensor_s, kMessageS, where);
  p.network_efficiency =
      internal::read(json, "network_efficiency", p.network_efficiency, kEfficiency, where);
  p.ps_per_tensor_s = internal::read(json, "ps_per_tensor_s", p.ps_per_tensor_s, kMessageS, where);
  p.ps_network_gbps = internal::read(json, "ps_network_gbps", p.ps_network_gbps,
                                     Bound{1e-6, bounds::kBandwidthGbps.hi, "Gbit/s"}, where);
  p.contention_sharpness = internal::read(json, "contention_sharpness", p.contention_sharpness,
                                          Bound{1.0, 1e3, ""}, where);
  p.allreduce_hop_latency_s =
      internal::read(json, "allreduce_hop_latency_s", p.allreduce_hop_latency_s, kMessageS, where);
  constexpr Bound kLinkGbps{1e-6, bounds::kBandwidthGbps.hi, "Gbit/s"};
  p.nvlink_gbps = internal::read(json, "nvlink_gbps", p.nvlink_gbps, kLinkGbps, where);
  p.pcie_gbps = internal::read(json, "pcie_gbps", p.pcie_gbps, kLinkGbps, where);
  p.intra_server_hop_latency_s = internal::read(json, "intra_server_hop_latency_s",
                                                p.intra_server_hop_latency_s, kMessageS, where);
  p.cross_zone_gbps = internal::read(json, "cross_zone_gbps", p.cross_zone_gbps, kLinkGbps, where);
  p.cross_zone_hop_latency_s = internal::read(json, "cross_zone_hop_latency_s",
                                              p.cross_zone_hop_latency_s, kMessageS, where);
  p.cross_region_gbps =
      internal::read(json, "cross_region_gbps", p.cross_region_gbps, kLinkGbps, where);
  p.cross_region_hop_latency_s = internal::read(json, "cross_region_hop_latency_s",
                                                p.cross_region_hop_latency_s, kMessageS, where);
  return p;
}

}  // namespace transient::perf

namespace transient::perf::internal {

double server_step_s(const Workload& workload, int servers, const CommunicationParams& comm) {
  return (workload.tensors * comm.ps_per_tensor_s +
          workload.gradient_bytes / (comm.ps_network_gbps * kBytesPerGbit)) /
         servers;
}

double worker_transfer_s(const Workload& workload, double network_gbps,
                         const CommunicationParams& comm) {
  cloud::InstanceType type;
  type.name = "worker";
  type.network_gbps = network_gbps;
  return workload.tensors * comm.worker_per_tensor_s +
         2.0 * workload.gradient_bytes / link_bytes_per_s(type, comm);
}

double at_workload_batch(double calibrated_s, const Workload& workload,
                         const cloud::InstanceType& type, const CommunicationParams& comm) {
  if (workload.batch_per_worker == kCmdareBatch) return calibrated_s;
  return BatchScaling::step_s(calibrated_s, comm.batch_scaling.fixed_s(workload.tensors, type),
                              kCmdareBatch, workload.batch_per_worker);
}

double worker_step_s(const Workload& workload, const cloud::InstanceType& type, double compute_s,
                     double samples, const CommunicationParams& comm) {
  return BatchScaling::step_s(compute_s, comm.batch_scaling.fixed_s(workload.tensors, type),
                              workload.batch_per_worker, samples);
}

cloud::InstanceType one_gpu(cloud::InstanceType type) {
  type.gpus = std::min(type.gpus, 1);
  return type;
}

AsyncPsLoad async_ps_load(const ClusterShape& cluster, const Workload& workload,
                          const std::vector<WorkerTime>& times, const CommunicationParams& comm) {
  TRANSIENT_CHECK_EQ(times.size(), cluster.workers.size());
  AsyncPsLoad load;
  // Every worker's update is a step of the job's batch, whatever the mode.
  const double batch = workload.batch.step_samples(1, workload.batch_per_worker);
  for (std::size_t i = 0; i < cluster.workers.size(); ++i) {
    const auto& group = cluster.workers[i];
    if (group.count == 0) continue;
    const int gpus = gpus_per_server(group.type);
    const double fixed = BatchScaling::capped_fixed_s(
        comm.batch_scaling.fixed_s(workload.tensors, group.type), times[i].compute_s);
    const double compute =
        BatchScaling::step_s(times[i].compute_s, fixed, workload.batch_per_worker, batch);
    const double transfer = times[i].ps_transfer_s * gpus;  // the server's link is shared
    load.uncontended_steps_per_s += group.count * gpus / (compute + transfer);
    load.compute_share += group.count * gpus * compute;
    load.transfer_share += group.count * gpus * transfer;
  }
  return load;
}

double contended_steps_per_s(double uncontended, double cap, double sharpness) {
  return std::pow(std::pow(uncontended, -sharpness) + std::pow(cap, -sharpness), -1.0 / sharpness);
}

Prediction compose_cluster(const ClusterShape& cluster, const Workload& workload,
                           const std::vector<WorkerTime>& times, const CommunicationParams& comm) {
  TRANSIENT_CHECK_EQ(times.size(), cluster.workers.size());
  Prediction out;
  const int n = cluster.total_workers();
  if (n == 0) return out;

  if (cluster.architecture == Architecture::async_ps) {
    const AsyncPsLoad load = async_ps_load(cluster, workload, times, comm);
    const double cap = 1.0 / server_step_s(workload, std::max(1, cluster.parameter_servers), comm);
    out.steps_per_s =
        contended_steps_per_s(load.uncontended_steps_per_s, cap, comm.contention_sharpness);
    out.step_time_s = n / out.steps_per_s;
    out.samples_per_s = out.steps_per_s * workload.batch.step_samples(1, workload.batch_per_worker);
    out.bottleneck = cap < load.uncontended_steps_per_s          ? "parameter server"
                     : load.compute_share >= load.transfer_share ? "compute"
                                                                 : "network";
    return out;
  }

  const double reference = workload.batch_per_worker;
  const BatchScaling& scaling = comm.batch_scaling;
  // Each group's fixed part of a step (batch_scaling.h), as used with its compute time.
  std::vector<double> fixed(cluster.workers.size(), 0.0);
  for (std::size_t i = 0; i < cluster.workers.size(); ++i) {
    fixed[i] = BatchScaling::capped_fixed_s(
        scaling.fixed_s(workload.tensors, cluster.workers[i].type), times[i].compute_s);
  }
  // The step's samples, split so that every worker finishes at the same time T: worker i takes
  // b_i = (T - fixed_i) / a_i, a_i its seconds per sample. A worker whose fixed part alone is
  // longer than T takes none (and still makes everyone wait for its fixed part).
  const double samples = workload.batch.step_samples(n, workload.batch_per_worker);
  std::vector<double> per_sample(cluster.workers.size(), 0.0);
  std::vector<bool> sharing(cluster.workers.size(), false);
  for (std::size_t i = 0; i < cluster.workers.size(); ++i) {
    per_sample[i] = (times[i].compute_s - fixed[i]) / reference;
    sharing[i] = cluster.workers[i].count > 0;
  }
  double compute = 0;
  for (bool changed = true; changed;) {
    double weights = 0, offsets = 0;
    for (std::size_t i = 0; i < cluster.workers.size(); ++i) {
      if (!sharing[i]) continue;
      const double w = cluster.workers[i].count * gpus_per_server(cluster.workers[i].type);
      weights += w / per_sample[i];
      offsets += w * fixed[i] / per_sample[i];
    }
    compute = (samples + offsets) / weights;
    changed = false;
    for (std::size_t i = 0; i < cluster.workers.size(); ++i) {
      if (sharing[i] && fixed[i] > compute) {
        sharing[i] = false;
        changed = true;
      }
    }
  }
  int servers = 0, gpus_in_server = 1;
  double local_link = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < cluster.workers.size(); ++i) {
    const auto& group = cluster.workers[i];
    if (group.count == 0) continue;
    compute = std::max(compute, fixed[i]);
    servers += group.count;
    const int gpus = gpus_per_server(group.type);
    gpus_in_server = std::max(gpus_in_server, gpus);
    if (gpus > 1) local_link = std::min(local_link, local_link_bytes_per_s(group.type, comm));
  }
  double slowest_link = std::numeric_limits<double>::infinity();
  for (const auto& group : cluster.workers) {
    if (group.count > 0 && servers > 1) {
      slowest_link = std::min(slowest_link, link_bytes_per_s(group.type, comm));
    }
  }
  double allreduce = 0;
  if (gpus_in_server > 1) {
    const int k = gpus_in_server;
    allreduce += 2.0 * (k - 1) * comm.intra_server_hop_latency_s +
                 2.0 * (k - 1) / k * workload.gradient_bytes / local_link;
  }
  if (servers > 1) {
    // Every hop of the ring waits for the slowest one, so a ring that leaves its zone or region
    // pays that link's latency and bandwidth on all 2(s-1) of them.
    double hop_latency_s = comm.allreduce_hop_latency_s;
    switch (spread_of(cluster)) {
      case Spread::one_zone:
        break;
      case Spread::zones:
        hop_latency_s = std::max(hop_latency_s, comm.cross_zone_hop_latency_s);
        slowest_link = std::min(slowest_link, comm.cross_zone_gbps * kBytesPerGbit);
        break;
      case Spread::regions:
        hop_latency_s = std::max(hop_latency_s, comm.cross_region_hop_latency_s);
        slowest_link = std::min(slowest_link, comm.cross_region_gbps * kBytesPerGbit);
        break;
    }
    const int s = servers;
    allreduce +=
        2.0 * (s - 1) * hop_latency_s + 2.0 * (s - 1) / s * workload.gradient_bytes / slowest_link;
  }
  out.step_time_s = compute + allreduce;
  out.steps_per_s = 1.0 / out.step_time_s;
  out.samples_per_s = samples * out.steps_per_s;
  out.bottleneck = compute >= allreduce ? "compute" : "network";
  return out;
}

}  // namespace transient::perf::internal
