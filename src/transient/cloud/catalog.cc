#include "transient/cloud/catalog.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "transient/core/bounds.h"
#include "transient/core/csv_table.h"
#include "transient/core/error.h"
#include "transient/core/text.h"

namespace transient::cloud {
namespace {

constexpr Bound kGpus{0, 1024, "GPUs", true};   // of one server
constexpr Bound kVcpus{0, 1e4, "vCPUs", true};  // of one server

// A price per hour as the catalog listing shows it; 0 is no such market.
std::string price_text(double usd_per_h) {
  return usd_per_h > 0.0 ? fmt::format("${:.4g}/h", usd_per_h) : std::string("none");
}

// The index of the first header cell equal (ignoring case) to one of `names`.
std::optional<int> column(const CsvTable& table, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    for (std::size_t i = 0; i < table.header().size(); ++i) {
      if (same_ignoring_case(table.header()[i], name)) return static_cast<int>(i);
    }
  }
  return std::nullopt;
}

class RowReader {
 public:
  RowReader(const CsvTable& table, const CsvRow& row) : table_(table), row_(row) {}

  const std::string& field(int c) const { return row_.fields[c]; }

  [[noreturn]] void fail(int c, const std::string& accepted) const {
    table_.fail(row_, "column \"" + table_.header()[c] + "\": \"" + field(c) +
                          "\" is not accepted; accepted: " + accepted);
  }

  std::string text(std::optional<int> c) const { return c ? field(*c) : std::string(); }

  // A number within `bound` (0 when the column is absent or the field empty); `of` says what it
  // counts beyond the unit (" of one GPU").
  double bounded(std::optional<int> c, const Bound& bound, const std::string& of = "") const {
    if (!c || field(*c).empty()) return 0.0;
    const auto value = parse_number(field(*c));
    if (!value || !bound.contains(*value)) fail(*c, bound.accepted() + of);
    return *value;
  }

  // A price in (0, 1e4] $ per hour, or 0 when empty (not sold in that market).
  double price(std::optional<int> c, const std::string& market) const {
    if (!c || field(*c).empty()) return 0.0;
    const auto value = parse_number(field(*c));
    if (!value || *value < kLeastPriceUsdPerH || !bounds::kPriceUsdPerH.contains(*value)) {
      fail(*c, "a price from " + number_text(kLeastPriceUsdPerH) + " to " +
                   number_text(bounds::kPriceUsdPerH.hi) +
                   " in $ per hour, or empty when the "
                   "type has no " +
                   market + " market");
    }
    return *value;
  }

 private:
  const CsvTable& table_;
  const CsvRow& row_;
};

}  // namespace

Catalog::Catalog(std::string name, std::string source, std::vector<InstanceType> types)
    : name_(std::move(name)), source_(std::move(source)), types_(std::move(types)) {
  std::set<std::pair<std::string, std::string>> seen;
  for (const InstanceType& type : types_) {
    const bool first = seen.emplace(type.name, type.zone).second;
    TRANSIENT_CHECK(first);
  }
}

Catalog Catalog::read_csv(const std::string& path) {
  const CsvTable table = CsvTable::read_file(path);
  const auto type_c = column(table, {"type", "name", "instance_type", "InstanceType"});
  const auto gpu_c = column(table, {"gpu", "gpu_model", "accelerator", "AcceleratorName"});
  const auto gpus_c = column(table, {"gpus", "gpu_count", "accelerator_count", "AcceleratorCount"});
  const auto tflops_c = column(table, {"gpu_tflops", "tflops", "GPU TFLOPS"});
  const auto vcpus_c = column(table, {"vcpus", "vcpu", "cpus"});
  const auto memory_c = column(table, {"memory_gib", "memory", "memory_gb"});
  const auto network_c = column(table, {"network_gbps", "network", "network_bandwidth"});
  const auto on_demand_c = column(table, {"on_demand_usd_h", "on_demand_usd_per_h", "on_demand",
                                          "ondemand", "ondemand_price", "OnDemandPrice"});
  const auto spot_c = column(
      table, {"spot_usd_h", "spot_usd_per_h", "spot", "preemptible", "spot_price", "SpotPrice"});
  const auto market_c = column(table, {"market"});
  const auto price_c = column(table, {"price_usd_h", "price_usd_per_h", "price"});
  const auto region_c = column(table, {"region"});
  const auto zone_c = column(table, {"zone", "availability_zone", "AvailabilityZone"});
  if (!type_c) {
    throw InputError(path, table.header_line(),
                     "missing column \"type\" (or name, instance_type, InstanceType); expected "
                     "type,gpu,gpus,gpu_tflops,vcpus,memory_gib,network_gbps,on_demand_usd_h,"
                     "spot_usd_h,region,zone");
  }
  const bool long_form = market_c.has_value();
  if (long_form && !price_c) {
    throw InputError(path, table.header_line(),
                     "a \"market\" column needs a \"price_usd_h\" column beside it");
  }
  if (!long_form && !on_demand_c && !spot_c) {
    throw InputError(path, table.header_line(),
                     "no price column; accepted: on_demand_usd_h and/or spot_usd_h, or market "
                     "with price_usd_h");
  }

  std::vector<InstanceType> types;
  std::map<std::pair<std::string, std::string>, std::size_t> index;    // (type, zone) -> types
  std::map<std::tuple<std::string, std::string, Market>, int> priced;  // -> line
  // Lowercased name -> the name as first written and its line: a cluster spec finds a type
  // ignoring case, so `a` and `A` would be one type to it and `1xA` would pick `a`.
  std::map<std::string, std::pair<std::string, int>> spelled;
  for (const CsvRow& row : table.rows()) {
    const RowReader r(table, row);
    InstanceType type;
    type.name = table.text(row, *type_c);
    const auto [first, added] =
        spelled.emplace(lowercase(type.name), std::pair{type.name, row.line});
    if (!added && first->second.first != type.name) {
      table.fail(row, "type " + type.name + " differs only in case from type " +
                          first->second.first + " (line " + std::to_string(first->second.second) +
                          "); accepted: type names that differ in more than case (a cluster "
                          "spec finds a type ignoring case)");
    }
    type.gpu = r.text(gpu_c);
    type.gpus = static_cast<int>(r.bounded(gpus_c, kGpus));
    if (!type.gpu.empty() && (!gpus_c || r.field(*gpus_c).empty())) type.gpus = 1;
    type.gpu_tflops = r.bounded(tflops_c, bounds::kGpuTflops, " of one GPU");
    type.vcpus = static_cast<int>(r.bounded(vcpus_c, kVcpus));
    type.memory_gib = r.bounded(memory_c, bounds::kMemoryGib);
    type.network_gbps = r.bounded(network_c, bounds::kBandwidthGbps);
    type.region = r.text(region_c);
    type.zone = r.text(zone_c);
    if (type.gpus > 0 && type.gpu.empty()) {
      table.fail(row, "column \"" + table.header()[*gpus_c] + "\": " + r.field(*gpus_c) +
                          " GPUs but no GPU model; accepted: a GPU model in column \"" +
                          (gpu_c ? table.header()[*gpu_c] : std::string("gpu")) + "\", or 0 GPUs");
    }
    if (!type.gpu.empty() && type.gpus == 0) {
      table.fail(row, "column \"" + table.header()[*gpus_c] + "\": 0 GPUs of model " + type.gpu +
                          "; accepted: a count >= 1, or an empty gpu column");
    }

    if (long_form) {
      const std::string& market_text = r.field(*market_c);
      const auto market = parse_market(lowercase(market_text));
      if (!market) r.fail(*market_c, "spot, preemptible, on-demand, ondemand, on_demand");
      const double price = r.price(price_c, std::string(to_string(*market)));
      if (price == 0.0) r.fail(*price_c, "a price > 0 in $ per hour");
      const auto key = std::make_tuple(type.name, type.zone, *market);
      if (const auto it = priced.find(key); it != priced.end()) {
        table.fail(row, "duplicate " + std::string(to_string(*market)) + " price for type " +
                            type.name + (type.zone.empty() ? "" : " in zone " + type.zone) +
                            " (first at line " + std::to_string(it->second) +
                            "); accepted: one row per type, zone and market");
      }
      priced[key] = row.line;
      (*market == Market::spot ? type.spot_usd_per_h : type.on_demand_usd_per_h) = price;
      const auto it = index.find({type.name, type.zone});
      if (it == index.end()) {
        index[{type.name, type.zone}] = types.size();
        types.push_back(type);
        continue;
      }
      InstanceType& merged = types[it->second];
      if (merged.gpu != type.gpu || merged.gpus != type.gpus || merged.vcpus != type.vcpus ||
          merged.gpu_tflops != type.gpu_tflops || merged.memory_gib != type.memory_gib ||
          merged.network_gbps != type.network_gbps || merged.region != type.region) {
        table.fail(row, "type " + type.name + " has other hardware or region than in its " +
                            "other market's row; accepted: the same values in both rows");
      }
      (*market == Market::spot ? merged.spot_usd_per_h : merged.on_demand_usd_per_h) = price;
      continue;
    }

    type.on_demand_usd_per_h = r.price(on_demand_c, "on-demand");
    type.spot_usd_per_h = r.price(spot_c, "spot");
    if (type.on_demand_usd_per_h == 0.0 && type.spot_usd_per_h == 0.0) {
      table.fail(row, "type " + type.name +
                          " has no price; accepted: a price > 0 in at least one of on-demand "
                          "and spot");
    }
    if (const auto it = index.find({type.name, type.zone}); it != index.end()) {
      table.fail(row, "duplicate type " + type.name +
                          (type.zone.empty() ? "" : " in zone " + type.zone) +
                          "; accepted: one row per type and zone");
    }
    index[{type.name, type.zone}] = types.size();
    types.push_back(type);
  }
  if (types.empty()) throw InputError(path, 0, "no instance types; expected rows after the header");
  return Catalog(path.substr(path.find_last_of('/') + 1), "file " + path, std::move(types));
}

const InstanceType& Catalog::find(const std::string& type, const std::string& zone) const {
  std::string zones;
  const InstanceType* first = nullptr;
  bool prices_differ = false;
  std::string offers;
  for (const InstanceType& candidate : types_) {
    if (candidate.name != type) continue;
    if (!zone.empty() && candidate.zone == zone) return candidate;
    if (zone.empty()) {
      // Without a zone the first row stands for every zone only if each sells at its prices
      // (aws-gpu's p3dn.24xlarge is $3.26 to $20.09 an hour spot by zone).
      if (first == nullptr) first = &candidate;
      prices_differ = prices_differ ||
                      candidate.on_demand_usd_per_h != first->on_demand_usd_per_h ||
                      candidate.spot_usd_per_h != first->spot_usd_per_h;
      offers += fmt::format("{}{} (on demand {}, spot {})", offers.empty() ? "" : ", ",
                            candidate.zone.empty() ? std::string("no zone") : candidate.zone,
                            price_text(candidate.on_demand_usd_per_h),
                            price_text(candidate.spot_usd_per_h));
    }
    zones += (zones.empty() ? "" : ", ") +
             (candidate.zone.empty() ? std::string("\"\" (no zone)") : candidate.zone);
  }
  if (first != nullptr) {
    if (!prices_differ) return *first;
    throw InputError("catalog " + name_ + ": type " + type +
                     " is sold in several zones at different prices: " + offers +
                     "; accepted: one of these zones given with the type");
  }
  if (!zones.empty()) {
    throw InputError("catalog " + name_ + ": type " + type + " is not in zone \"" + zone +
                     "\"; accepted: " + zones);
  }
  std::vector<std::string> names;
  for (const InstanceType& candidate : types_) {
    if (std::find(names.begin(), names.end(), candidate.name) == names.end()) {
      names.push_back(candidate.name);
    }
  }
  std::string accepted;
  for (const auto& name : names) accepted += (accepted.empty() ? "" : ", ") + name;
  throw InputError("catalog " + name_ + " has no type \"" + type + "\"; accepted: " + accepted);
}

bool Catalog::contains(const std::string& type) const {
  for (const InstanceType& candidate : types_) {
    if (candidate.name == type) return true;
  }
  return false;
}

}  // namespace transient::cloud
