// The programme on its own: options, counts and objectives checked by hand (test_catalog.h's
// figures: k80 spot 1 step/s at $0.20/h, v100 spot 4 steps/s at $1.00/h, $0.10/h fixed).
#include "transient/plan/cluster_mip.h"

#include <gtest/gtest.h>

namespace transient::plan {
namespace {

std::vector<MipOption> options() {
  MipOption k80{0.20, {}}, v100{1.00, {}};
  for (int n = 1; n <= 4; ++n) {
    k80.steps_per_s.push_back(n);
    v100.steps_per_s.push_back(4.0 * n);
  }
  return {k80, v100};
}

TEST(ClusterMip, CheapestPerStepUnderASpeedFloor) {
  ClusterMip mip(options(), 0.10, 1e9, 4, false);
  MipConstraints c;
  c.min_steps_per_s = 36000.0 / 3900.0;  // 65 min
  const auto best = mip.cheapest(c);
  ASSERT_TRUE(best);
  EXPECT_EQ(best->counts, (std::vector<int>{2, 2}));  // 2 K80 + 2 V100: 10 steps/s, $2.50/h
  EXPECT_DOUBLE_EQ(best->steps_per_s, 10.0);
  EXPECT_NEAR(best->usd_per_h, 2.50, 1e-12);
}

TEST(ClusterMip, NoGoodCutsGiveTheNextBest) {
  ClusterMip mip(options(), 0.10, 1e9, 4, false);
  MipConstraints c;
  c.min_steps_per_s = 36000.0 / 3900.0;
  c.excluded.push_back({2, 2});
  const auto second = mip.cheapest(c);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->counts, (std::vector<int>{1, 3}));  // $3.30/h for 13 steps/s: $2.54
  c.excluded.push_back(second->counts);
  const auto third = mip.cheapest(c);
  ASSERT_TRUE(third);
  EXPECT_EQ(third->counts, (std::vector<int>{0, 4}));  // $4.10/h for 16 steps/s: $2.5625
}

TEST(ClusterMip, HomogeneousKeepsOneOption) {
  ClusterMip mip(options(), 0.10, 1e9, 4, true);
  MipConstraints c;
  c.min_steps_per_s = 36000.0 / 3900.0;
  const auto best = mip.cheapest(c);
  ASSERT_TRUE(best);
  EXPECT_EQ(best->counts, (std::vector<int>{0, 4}));
}

// K80s in region 0, V100s in region 1, and V100s at $1.20/h in region 0 (one kind with the
// others: the same type in another region).
std::vector<MipOption> two_regions() {
  std::vector<MipOption> out = options();
  out[0].region = 0;
  out[1].region = 1;
  out[1].kind = 1;
  MipOption dear_v100 = out[1];
  dear_v100.usd_per_h = 1.20;
  dear_v100.region = 0;
  out.push_back(dear_v100);
  return out;
}

TEST(ClusterMip, OneRegionUnlessMoreAreAllowed) {
  MipConstraints c;
  c.min_steps_per_s = 36000.0 / 3900.0;  // 65 min
  ClusterMip one(two_regions(), 0.10, 1e9, 4, false, 1);
  const auto best = one.cheapest(c);
  ASSERT_TRUE(best);
  // Region 0's best (2 K80 + 2 dear V100, $2.90 per 10 steps/s) loses to region 1's 4 V100.
  EXPECT_EQ(best->counts, (std::vector<int>{0, 4, 0}));
  ClusterMip two(two_regions(), 0.10, 1e9, 4, false, 2);
  const auto spread = two.cheapest(c);
  ASSERT_TRUE(spread);
  EXPECT_EQ(spread->counts, (std::vector<int>{2, 2, 0}));
  ClusterMip any(two_regions(), 0.10, 1e9, 4, false, 0);
  EXPECT_EQ(any.cheapest(c)->counts, (std::vector<int>{2, 2, 0}));
}

TEST(ClusterMip, OneKindIsBoughtInOneRegionAtMost) {
  MipConstraints c;
  c.min_steps_per_s = 21.0;  // more than 4 V100 and 4 K80
  ClusterMip mip(two_regions(), 0.10, 1e9, 8, false, 0);
  EXPECT_FALSE(mip.cheapest(c));
  std::vector<MipOption> kindless = two_regions();
  for (auto& o : kindless) o.kind = -1;
  ClusterMip free(kindless, 0.10, 1e9, 8, false, 0);
  const auto both = free.cheapest(c);
  ASSERT_TRUE(both);
  EXPECT_GT(both->counts[1] * both->counts[2], 0);
}

TEST(ClusterMip, FastestWithinABudget) {
  ClusterMip mip(options(), 0.10, 1e9, 4, false);
  MipConstraints c;
  c.max_usd_per_step = 2.45 / 36000.0;
  const auto best = mip.fastest(c);
  ASSERT_TRUE(best);
  EXPECT_EQ(best->counts, (std::vector<int>{3, 1}));  // 7 steps/s for $1.70/h: $2.43
}

TEST(ClusterMip, FastestPrefersTheCheaperOfEquallyFastChoices) {
  MipOption spot{1.0, {4, 8}}, on_demand{3.0, {4, 8}};
  ClusterMip mip({on_demand, spot}, 0.0, 8.0, 2, false);  // capped at 8 steps/s
  const auto best = mip.fastest({});
  ASSERT_TRUE(best);
  EXPECT_EQ(best->counts, (std::vector<int>{0, 2}));
}

TEST(ClusterMip, InfeasibleIsNoChoice) {
  ClusterMip mip(options(), 0.10, 1e9, 4, false);
  MipConstraints c;
  c.min_steps_per_s = 20.0;  // more than 4 V100s
  EXPECT_FALSE(mip.cheapest(c));
  EXPECT_FALSE(mip.fastest(c));
  MipConstraints budget;
  budget.max_usd_per_step = 2.0 / 36000.0;  // below the cheapest $2.25
  EXPECT_FALSE(mip.fastest(budget));
}

}  // namespace
}  // namespace transient::plan
