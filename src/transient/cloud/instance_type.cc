#include "transient/cloud/instance_type.h"

#include "transient/core/error.h"

namespace transient::cloud {

std::string_view to_string(Market market) { return market == Market::spot ? "spot" : "on-demand"; }

std::optional<Market> parse_market(std::string_view text) {
  if (text == "spot" || text == "preemptible") return Market::spot;
  if (text == "on-demand" || text == "ondemand" || text == "on_demand") return Market::on_demand;
  return std::nullopt;
}

bool InstanceType::has_market(Market market) const {
  return market == Market::spot ? spot_usd_per_h > 0.0 : on_demand_usd_per_h > 0.0;
}

double InstanceType::price_usd_per_h(Market market) const {
  TRANSIENT_CHECK(has_market(market));
  return market == Market::spot ? spot_usd_per_h : on_demand_usd_per_h;
}

}  // namespace transient::cloud
