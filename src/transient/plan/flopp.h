// DeepVM's FLOPP ranking: GPU FLOPs per dollar of every (instance type, market, zone) of a
// catalog that has GPUs. The planner's candidate list, and the "cost first" baseline (the
// highest-FLOPP offer).
#pragma once

#include <string>
#include <vector>

#include "transient/cloud/catalog.h"

namespace transient::plan {

struct FloppEntry {
  cloud::InstanceType type;                    // the server (its zone is the offer's)
  cloud::Market market = cloud::Market::spot;  // how it is bought
  double tflops = 0.0;                         // GPU TFLOPS of the whole server
  double usd_per_h = 0.0;                      // price in `market`
  double pflop_per_usd = 0.0;                  // FLOPP: PFLOP of GPU work per dollar
};

// Whether `type` is in one of `zones` (zone or region names; empty = every zone).
bool in_zones(const cloud::InstanceType& type, const std::vector<std::string>& zones);

// Every GPU type of `catalog` sold in a zone of `zones` (empty = every zone), in both markets
// where it is sold, best FLOPP first (ties: cheaper first, then by name). Throws InputError for a
// GPU type without TFLOPS, or a `zones` list that matches nothing (listing the catalog's zones).
std::vector<FloppEntry> rank_by_flopp(const cloud::Catalog& catalog,
                                      const std::vector<std::string>& zones);

}  // namespace transient::plan
