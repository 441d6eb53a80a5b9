#include "transient/plan/configuration.h"

#include <algorithm>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "transient/core/error.h"

namespace transient::plan {
namespace {

std::string group_text(const sim::ServerGroup& g) {
  std::string out = fmt::format("{} x {} {}", g.count, g.type.name, cloud::to_string(g.market));
  const std::string& where = g.type.zone.empty() ? g.type.region : g.type.zone;
  if (!where.empty()) out += " (" + where + ")";
  return out;
}

auto key(const sim::ServerGroup& g) {
  return std::make_tuple(g.type.name, g.type.zone, g.market, g.count);
}

std::vector<std::tuple<std::string, std::string, cloud::Market, int>> keys(
    const std::vector<sim::ServerGroup>& groups) {
  std::vector<std::tuple<std::string, std::string, cloud::Market, int>> out;
  for (const auto& g : groups) out.push_back(key(g));
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

double Configuration::usd_per_h() const {
  double total = 0.0;
  for (const auto& g : workers) total += g.count * g.type.price_usd_per_h(g.market);
  for (const auto& g : parameter_servers) total += g.count * g.type.price_usd_per_h(g.market);
  return total;
}

int Configuration::total_workers() const {
  int total = 0;
  for (const auto& g : workers) total += g.count;
  return total;
}

std::string Configuration::text() const {
  std::string out;
  for (const auto& g : workers) out += (out.empty() ? "" : " + ") + group_text(g);
  for (const auto& g : parameter_servers) out += (out.empty() ? "" : " + ") + group_text(g);
  return out;
}

perf::ClusterShape Configuration::shape(perf::Architecture architecture) const {
  perf::ClusterShape shape;
  shape.architecture = architecture;
  int servers = 0;
  for (const auto& g : parameter_servers) servers += g.count;
  shape.parameter_servers = std::max(1, servers);
  for (const auto& g : workers) {
    // One type in one zone is one group whatever its market; zones apart are not (the links).
    auto same =
        std::find_if(shape.workers.begin(), shape.workers.end(), [&](const perf::WorkerGroup& w) {
          return w.type.name == g.type.name && w.type.zone == g.type.zone &&
                 w.type.region == g.type.region;
        });
    if (same != shape.workers.end()) {
      same->count += g.count;
    } else {
      shape.workers.push_back({g.type, g.count});
    }
  }
  return shape;
}

bool Configuration::same_as(const Configuration& other) const {
  return keys(workers) == keys(other.workers) &&
         keys(parameter_servers) == keys(other.parameter_servers);
}

Configuration with_support_server(std::vector<sim::ServerGroup> workers,
                                  const cloud::InstanceType& support) {
  Configuration c;
  c.workers = std::move(workers);
  c.parameter_servers.push_back({support, cloud::Market::on_demand, 1});
  return c;
}

int Configuration::worker_regions() const {
  std::set<std::string> regions;
  for (const auto& g : workers) regions.insert(g.type.region);
  return static_cast<int>(regions.size());
}

Configuration with_support_server(std::vector<sim::ServerGroup> workers,
                                  const SupportServers& support) {
  TRANSIENT_CHECK(!workers.empty());
  const sim::ServerGroup* largest = &workers.front();
  for (const auto& g : workers) {
    if (g.count > largest->count) largest = &g;
  }
  const auto found = support.find(largest->type.region);
  TRANSIENT_CHECK(found != support.end());
  return with_support_server(std::move(workers), found->second);
}

void append_new(std::vector<Configuration>& list, const Configuration& c) {
  if (std::none_of(list.begin(), list.end(),
                   [&](const Configuration& o) { return o.same_as(c); })) {
    list.push_back(c);
  }
}

}  // namespace transient::plan
