#include "transient/perf/cluster_spec.h"

#include <algorithm>
#include <cctype>
#include <limits>

#include "transient/core/error.h"
#include "transient/core/text.h"

namespace transient::perf {
namespace {

[[noreturn]] void fail(const std::string& spec, const std::string& message) {
  throw InputError("cluster \"" + spec + "\": " + message);
}

std::string catalog_listing(const cloud::Catalog& catalog) {
  std::vector<std::string> types, gpus;
  for (const auto& type : catalog.types()) {
    const std::string item = type.name + (type.gpu.empty() ? "" : " (" + type.gpu + ")");
    if (std::find(types.begin(), types.end(), item) == types.end()) types.push_back(item);
    if (!type.gpu.empty() &&
        std::find(gpus.begin(), gpus.end(), lowercase(type.gpu)) == gpus.end()) {
      gpus.push_back(lowercase(type.gpu));
    }
  }
  return "catalog " + catalog.name() + " has: " + join(types) + "; GPU names: " + join(gpus) +
         "; and ps (a parameter server)";
}

const cloud::InstanceType& resolve_type(const std::string& spec, const std::string& name,
                                        const cloud::Catalog& catalog, bool& parameter_server) {
  parameter_server = false;
  for (const auto& type : catalog.types()) {
    if (same_ignoring_case(type.name, name)) return type;
  }
  const cloud::InstanceType* by_gpu = nullptr;
  for (const auto& type : catalog.types()) {
    if (type.gpu.empty() || !same_ignoring_case(type.gpu, name)) continue;
    if (by_gpu == nullptr || (by_gpu->gpus != 1 && type.gpus == 1)) by_gpu = &type;
  }
  if (by_gpu != nullptr) return *by_gpu;
  if (same_ignoring_case(name, "ps")) {
    const cloud::InstanceType* cheapest = nullptr;
    for (const auto& type : catalog.types()) {
      if (type.gpus != 0) continue;
      if (cheapest == nullptr || type.on_demand_usd_per_h < cheapest->on_demand_usd_per_h) {
        cheapest = &type;
      }
    }
    if (cheapest == nullptr) {
      fail(spec,
           "ps needs a CPU-only type in the catalog, and catalog " + catalog.name() + " has none");
    }
    parameter_server = true;
    return *cheapest;
  }
  fail(spec, "unknown instance type or GPU \"" + name + "\"; " + catalog_listing(catalog));
}

}  // namespace

int ClusterSpec::parameter_servers() const {
  int total = 0;
  for (const auto& entry : entries) total += entry.parameter_server ? entry.count : 0;
  return total;
}

ClusterShape ClusterSpec::shape(Architecture architecture, int parameter_servers) const {
  ClusterShape shape;
  shape.architecture = architecture;
  shape.parameter_servers = parameter_servers;
  for (const auto& entry : entries) {
    if (entry.parameter_server) continue;
    bool merged = false;
    for (auto& group : shape.workers) {
      if (group.type.name == entry.type.name && group.type.zone == entry.type.zone) {
        group.count += entry.count;
        merged = true;
      }
    }
    if (!merged) shape.workers.push_back({entry.type, entry.count});
  }
  return shape;
}

ClusterSpec parse_cluster_spec(const std::string& text, const cloud::Catalog& catalog) {
  ClusterSpec spec;
  spec.text = text;
  if (trim(text).empty()) {
    fail(text,
         "empty; accepted: [COUNT x] TYPE [:spot|:on-demand], comma-separated, "
         "e.g. 4xk80:spot,1xps:on-demand");
  }
  std::size_t begin = 0;
  while (begin <= text.size()) {
    std::size_t end = text.find(',', begin);
    if (end == std::string::npos) end = text.size();
    const std::string item = trim(text.substr(begin, end - begin));
    begin = end + 1;
    if (item.empty()) fail(text, "an empty entry between commas");

    ClusterSpecEntry entry;
    std::string rest = item;
    const std::size_t colon = rest.rfind(':');
    if (colon != std::string::npos) {
      const std::string market = trim(rest.substr(colon + 1));
      const auto parsed = cloud::parse_market(lowercase(market));
      if (!parsed) {
        fail(text, "unknown market \"" + market + "\" in \"" + item +
                       "\"; accepted: spot, preemptible, on-demand");
      }
      entry.market = *parsed;
      rest = trim(rest.substr(0, colon));
    }
    std::size_t digits = 0;
    while (digits < rest.size() && std::isdigit(static_cast<unsigned char>(rest[digits]))) {
      ++digits;
    }
    if (digits > 0 && digits < rest.size() &&
        (rest[digits] == 'x' || rest[digits] == 'X' || rest[digits] == '*')) {
      const std::string count = rest.substr(0, digits);
      if (count.size() > 6 || std::stoi(count) < 1) {
        fail(text, "count \"" + count + "\" in \"" + item + "\"; accepted: 1 to 999999");
      }
      entry.count = std::stoi(count);
      rest = trim(rest.substr(digits + 1));
    } else if (digits == rest.size() && digits > 0) {
      fail(text, "\"" + item + "\" has a count but no type; accepted: COUNTxTYPE, e.g. 4xk80");
    }
    std::string zone;
    if (const std::size_t at = rest.find('@'); at != std::string::npos) {
      zone = trim(rest.substr(at + 1));
      rest = trim(rest.substr(0, at));
      if (zone.empty()) fail(text, "\"" + item + "\" names no zone after @; accepted: TYPE@ZONE");
    }
    if (rest.empty()) fail(text, "\"" + item + "\" names no type");
    entry.type = resolve_type(text, rest, catalog, entry.parameter_server);
    // `ps` is the cheapest row of all, a choice of zone made.
    entry.zone_given = entry.parameter_server;
    if (!zone.empty()) {
      try {
        entry.type = catalog.find(entry.type.name, zone);
      } catch (const InputError& error) {
        fail(text, error.what());
      }
      entry.zone_given = true;
    }
    // Workers need a GPU: a CPU-only server in a spec can only serve parameters.
    if (entry.type.gpus == 0) entry.parameter_server = true;
    spec.entries.push_back(entry);
    if (end == text.size()) break;
  }
  if (spec.entries.size() == static_cast<std::size_t>(0) ||
      spec.shape(Architecture::async_ps, 1).workers.empty()) {
    fail(text, "no workers, only parameter servers; add GPU servers, e.g. 4xk80");
  }
  return spec;
}

void require_no_servers_for_allreduce(const ClusterSpec& spec, Architecture architecture,
                                      const std::string& flag) {
  if (architecture != Architecture::allreduce || spec.parameter_servers() == 0) return;
  throw InputError(flag + " " + spec.text +
                   ": has parameter servers (ps), which the all-reduce architecture (the "
                   "default, what `transient train` runs) does not use; accepted: a cluster of "
                   "workers only, or --arch ps");
}

namespace {

void require_network_gbps(const cloud::InstanceType& type, const std::string& catalog) {
  if (type.network_gbps > 0) return;
  throw InputError("--catalog " + catalog + ": instance type " + type.name +
                   " has no network_gbps (the column is empty or missing), which the throughput "
                   "model needs for a cluster of more than one server or with parameter servers; "
                   "accepted: network_gbps > 0, the server's bandwidth in Gbit/s");
}

}  // namespace

void require_network(const ClusterShape& shape, const std::string& catalog) {
  if (shape.architecture == Architecture::allreduce && shape.total_servers() <= 1) return;
  for (const auto& group : shape.workers) require_network_gbps(group.type, catalog);
}

void require_network(const std::vector<cloud::InstanceType>& types, Architecture architecture,
                     int max_servers, const std::string& catalog) {
  if (architecture == Architecture::allreduce && max_servers <= 1) return;
  for (const auto& type : types) {
    if (type.gpus > 0) require_network_gbps(type, catalog);
  }
}

void require_priced_zones(const ClusterSpec& spec, const cloud::Catalog& catalog) {
  for (const auto& entry : spec.entries) {
    if (entry.zone_given) continue;
    try {
      catalog.find(entry.type.name);
    } catch (const InputError& error) {
      fail(spec.text, std::string(error.what()) + " as " + entry.type.name + "@ZONE");
    }
  }
}

}  // namespace transient::perf
