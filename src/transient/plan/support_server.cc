#include "transient/plan/support_server.h"

#include "transient/cloud/catalog_registry.h"
#include "transient/core/error.h"
#include "transient/plan/flopp.h"

namespace transient::plan {
namespace {

bool can_support(const cloud::InstanceType& type, const std::vector<std::string>& zones) {
  return type.gpus == 0 && type.has_market(cloud::Market::on_demand) &&
         (type.memory_gib == 0.0 || type.memory_gib >= kMinSupportMemoryGib) &&
         in_zones(type, zones);
}

const cloud::InstanceType* cheapest(const cloud::Catalog& catalog, const std::string* region,
                                    const std::vector<std::string>& zones) {
  const cloud::InstanceType* best = nullptr;
  for (const auto& type : catalog.types()) {
    if (!can_support(type, zones) || (region != nullptr && type.region != *region)) continue;
    if (best == nullptr || type.on_demand_usd_per_h < best->on_demand_usd_per_h) best = &type;
  }
  return best;
}

}  // namespace

cloud::InstanceType support_server(const cloud::Catalog& catalog, const std::string& region,
                                   const std::vector<std::string>& zones) {
  if (const auto* in_region = cheapest(catalog, &region, zones)) return *in_region;
  if (auto fallback = cloud::default_cpu_server(region)) return *fallback;
  if (const auto* anywhere = cheapest(catalog, nullptr, zones)) return *anywhere;
  throw InputError("catalog " + catalog.name() +
                   " has no on-demand CPU-only server (gpus 0, at least 4 GiB) to coordinate "
                   "the job or hold its parameters, and region \"" +
                   region +
                   "\" is neither AWS's nor GCE's, which have a default; accepted: a catalog row "
                   "with gpus 0 and an on-demand price");
}

SupportServers support_servers(const cloud::Catalog& catalog,
                               const std::vector<std::string>& zones) {
  SupportServers out;
  for (const auto& type : catalog.types()) {
    if (type.gpus > 0 && in_zones(type, zones) && out.count(type.region) == 0) {
      out.emplace(type.region, support_server(catalog, type.region, zones));
    }
  }
  return out;
}

}  // namespace transient::plan
