// A cluster written as text, as users type it on a command line: `4xk80:spot`,
// `2xv100,2xk80`, `4xn1-standard-4+k80:spot,1xps:on-demand`. `predict --cluster` and the
// planner's `--evaluate` read the same syntax.
//
// Grammar: ENTRY[,ENTRY...] where ENTRY is [COUNT x] TYPE [@ZONE] [:MARKET]
// - COUNT: a whole number >= 1 (default 1); `x` or `X` or `*` separates it from TYPE;
// - TYPE: an instance type of the catalog (case-insensitive), or a GPU model (k80, v100): the
//   catalog's first single-GPU type with that GPU, or `ps`: a parameter server on the catalog's
//   cheapest CPU-only type;
// - ZONE: the catalog's row of TYPE in that zone (else its first row; see `zone_given`);
// - MARKET: spot, preemptible or on-demand (default on-demand).
// COUNT counts servers; a server of a type with k GPUs runs k workers, one per GPU
// (ClusterShape::total_workers()).
// Errors are InputErrors quoting the spec; an unknown TYPE lists the catalog's types and GPUs.
#pragma once

#include <string>
#include <vector>

#include "transient/cloud/catalog.h"
#include "transient/cloud/instance_type.h"
#include "transient/perf/throughput_model.h"

namespace transient::perf {

struct ClusterSpecEntry {
  cloud::InstanceType type;                         // resolved against the catalog
  int count = 1;                                    // servers of this type and market, >= 1
  cloud::Market market = cloud::Market::on_demand;  // how they are bought
  bool parameter_server = false;                    // written as `ps`: serves parameters
  bool zone_given = false;  // written TYPE@ZONE, or ps; else `type` is its name's first row
};

struct ClusterSpec {
  std::string text;                       // as written
  std::vector<ClusterSpecEntry> entries;  // in the order written

  // Servers written as `ps`.
  int parameter_servers() const;
  // The worker servers (every entry but `ps` ones) grouped by instance type, with `architecture`
  // and `parameter_servers` (for async_ps). Workers of one type bought in two markets form one
  // group.
  ClusterShape shape(Architecture architecture, int parameter_servers) const;
};

// Parses `text` against `catalog`. Throws InputError for bad syntax, a count < 1, an unknown
// market or type (listing what the catalog has), a zone without that type (listing the zones
// that have it), or a spec without any worker.
ClusterSpec parse_cluster_spec(const std::string& text, const cloud::Catalog& catalog);

// Throws InputError, quoting the spec, for an entry without a zone whose type `catalog` sells in
// several zones at different prices (each zone's prices listed, TYPE@ZONE asked for): what a
// command that prices the cluster calls.
void require_priced_zones(const ClusterSpec& spec, const cloud::Catalog& catalog);

// Throws InputError naming `flag` (with the spec) when the spec has parameter servers and
// `architecture` is all-reduce, which has none (they were ignored).
void require_no_servers_for_allreduce(const ClusterSpec& spec, Architecture architecture,
                                      const std::string& flag);

// Throws InputError naming the catalog `catalog` (as --catalog gave it) and its network_gbps
// column when a worker of `shape` has no network bandwidth where the throughput models need one:
// every worker with parameter servers, the servers of an all-reduce over more than one.
void require_network(const ClusterShape& shape, const std::string& catalog);
// The same for every GPU type of `types` that a plan of up to `max_servers` servers may put in
// such a cluster.
void require_network(const std::vector<cloud::InstanceType>& types, Architecture architecture,
                     int max_servers, const std::string& catalog);

}  // namespace transient::perf
