// The server that coordinates a job (allreduce: our trainer's coordinator) or holds its
// parameters (async-ps): a small on-demand CPU server in the workers' region, never a GPU server
// (its GPUs would idle, and the research's parameter server was an n1-standard-4).
#pragma once

#include <string>
#include <vector>

#include "transient/cloud/catalog.h"
#include "transient/plan/configuration.h"

namespace transient::plan {

// The memory a support server needs at least: it holds the parameters (async-ps) or passes each
// checkpoint through (the coordinator). A catalog row without memory (0) is taken at its word.
inline constexpr double kMinSupportMemoryGib = 4.0;

// The support server for workers in `region`, the first of: the catalog's cheapest on-demand
// CPU-only type of that region in `zones` (empty: any) with at least kMinSupportMemoryGib; the
// provider's stated default there (cloud::default_cpu_server); the catalog's cheapest such type
// in any region of `zones`. InputError naming the region and what would be accepted when there
// is none.
cloud::InstanceType support_server(const cloud::Catalog& catalog, const std::string& region,
                                   const std::vector<std::string>& zones);

// support_server() of every region of `catalog` that has a GPU type in `zones`.
SupportServers support_servers(const cloud::Catalog& catalog,
                               const std::vector<std::string>& zones);

}  // namespace transient::plan
