// A named list of instance types one can rent, with the source of its facts: a built-in catalog
// (catalog_registry.h) or a CSV file. Lookups by type name (and zone) that fail are InputErrors
// listing what the catalog has. Immutable after construction; safe to share between threads.
//
// CSV format (one row per type and zone; columns matched case-insensitively, in any order):
//   type,gpu,gpus,gpu_tflops,vcpus,memory_gib,network_gbps,on_demand_usd_h,spot_usd_h,region,zone
// `type` and at least one price column are required; the others default to empty / 0. Aliases:
// name/instance_type; accelerator/AcceleratorName; gpu_count/AcceleratorCount; tflops;
// vcpu/vCPU; memory/memory_gb; network/network_bandwidth; on_demand/ondemand_price/OnDemandPrice;
// spot/preemptible/spot_price/SpotPrice; AvailabilityZone. A price left empty means the type is
// not sold in that market. Instead of the two price columns, a long form is accepted: a `market`
// column (spot, preemptible, on-demand) and a `price_usd_h` (or price) column, one row per type,
// zone and market.
#pragma once

#include <string>
#include <vector>

#include "transient/cloud/instance_type.h"

namespace transient::cloud {

// The least price a market may have: a hundredth of a cent an hour. Below it (1e-303) a price's
// FLOPs per dollar overflow, and it is no price a cloud charges; 0 or nothing says "not sold".
inline constexpr double kLeastPriceUsdPerH = 1e-4;

class Catalog {
 public:
  // REQUIRES: no two types with the same name and zone (built-in tables are checked by tests).
  Catalog(std::string name, std::string source, std::vector<InstanceType> types);

  // Reads and validates a CSV catalog. Every bad row is an InputError naming the file, the line,
  // the column and what is accepted: a non-number, a negative count, a price <= 0, a type with
  // no price at all, an unknown market, a duplicate type and zone, two type names that differ
  // only in case (a cluster spec finds a type ignoring case), GPUs without a GPU model.
  static Catalog read_csv(const std::string& path);

  const std::string& name() const { return name_; }
  // Where the facts come from, one line.
  const std::string& source() const { return source_; }
  const std::vector<InstanceType>& types() const { return types_; }

  // The type called `type`, in `zone` if not empty; without a zone, its first row if every row
  // of that name has the same prices. Throws InputError listing the catalog's types, the zones
  // that have `type`, or (no zone given) each zone's prices when they differ.
  const InstanceType& find(const std::string& type, const std::string& zone = "") const;
  // Whether the catalog has `type` (in any zone).
  bool contains(const std::string& type) const;

 private:
  std::string name_;
  std::string source_;
  std::vector<InstanceType> types_;
};

}  // namespace transient::cloud
