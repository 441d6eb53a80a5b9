#include "transient/cloud/instance_type.h"

#include <gtest/gtest.h>

namespace transient::cloud {
namespace {

TEST(InstanceType, PricesByMarket) {
  InstanceType k80;
  k80.gpus = 1;
  k80.gpu_tflops = 4.37;
  k80.on_demand_usd_per_h = 0.723;
  k80.spot_usd_per_h = 0.256;
  EXPECT_EQ(k80.price_usd_per_h(Market::spot), 0.256);
  EXPECT_EQ(k80.price_usd_per_h(Market::on_demand), 0.723);
  EXPECT_DOUBLE_EQ(k80.total_tflops(), 4.37);
}

TEST(InstanceType, MarketNames) {
  EXPECT_EQ(parse_market("preemptible"), Market::spot);
  EXPECT_EQ(parse_market("on-demand"), Market::on_demand);
  EXPECT_EQ(parse_market("reserved"), std::nullopt);
  EXPECT_EQ(to_string(Market::on_demand), "on-demand");
}

}  // namespace
}  // namespace transient::cloud
