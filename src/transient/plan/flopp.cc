#include "transient/plan/flopp.h"

#include <algorithm>
#include <set>

#include "transient/core/error.h"

namespace transient::plan {

bool in_zones(const cloud::InstanceType& type, const std::vector<std::string>& zones) {
  if (zones.empty()) return true;
  return std::find(zones.begin(), zones.end(), type.zone) != zones.end() ||
         std::find(zones.begin(), zones.end(), type.region) != zones.end();
}

std::vector<FloppEntry> rank_by_flopp(const cloud::Catalog& catalog,
                                      const std::vector<std::string>& zones) {
  std::vector<FloppEntry> out;
  std::set<std::string> known_zones;
  for (const auto& type : catalog.types()) {
    known_zones.insert(type.zone.empty() ? type.region : type.zone);
    if (type.gpus <= 0 || !in_zones(type, zones)) continue;
    if (type.gpu_tflops <= 0.0) {
      throw InputError("catalog " + catalog.name() + ": type " + type.name + " has GPU " +
                       type.gpu + " without TFLOPS; FLOPP needs gpu_tflops > 0");
    }
    for (cloud::Market market : {cloud::Market::spot, cloud::Market::on_demand}) {
      if (!type.has_market(market)) continue;
      const double price = type.price_usd_per_h(market);
      if (!(price > 0.0)) {
        throw InputError("catalog " + catalog.name() + ": type " + type.name + " has a " +
                         std::string(cloud::to_string(market)) +
                         " price <= 0; accepted: a price > 0");
      }
      FloppEntry e;
      e.type = type;
      e.market = market;
      e.tflops = type.total_tflops();
      e.usd_per_h = price;
      e.pflop_per_usd = e.tflops * 3600.0 / 1000.0 / price;
      out.push_back(e);
    }
  }
  if (out.empty()) {
    std::string list;
    for (const auto& z : known_zones) list += (list.empty() ? "" : ", ") + z;
    if (zones.empty()) {
      throw InputError("no GPU instance type of catalog " + catalog.name() +
                       "; the catalog's zones: " + list);
    }
    std::string asked;
    for (const auto& z : zones) asked += (asked.empty() ? "" : ",") + z;
    throw InputError("--zones " + asked + ": no GPU instance type of catalog " + catalog.name() +
                     " there; accepted: the catalog's zones (or their regions): " + list);
  }
  std::stable_sort(out.begin(), out.end(), [](const FloppEntry& a, const FloppEntry& b) {
    if (a.pflop_per_usd != b.pflop_per_usd) return a.pflop_per_usd > b.pflop_per_usd;
    if (a.usd_per_h != b.usd_per_h) return a.usd_per_h < b.usd_per_h;
    return a.type.name < b.type.name;
  });
  return out;
}

}  // namespace transient::plan
