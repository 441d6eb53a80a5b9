#include "transient/core/bounds.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "transient/core/error.h"

namespace transient {
namespace {

TEST(Bound, ContainsOnlyFiniteNumbersWithinItAndWholeOnesWhenAsked) {
  const Bound flops = bounds::kFlopsPerSample;
  EXPECT_TRUE(flops.contains(1.0));
  EXPECT_TRUE(flops.contains(1e18));
  EXPECT_FALSE(flops.contains(0.5));
  EXPECT_FALSE(flops.contains(1.0000001e18));
  EXPECT_FALSE(flops.contains(std::numeric_limits<double>::quiet_NaN()));
  EXPECT_FALSE(flops.contains(std::numeric_limits<double>::infinity()));
  EXPECT_TRUE(bounds::kBatch.contains(128));
  EXPECT_FALSE(bounds::kBatch.contains(128.5));
}

TEST(Bound, SaysWhatIsAcceptedAsPeopleWriteIt) {
  EXPECT_EQ(bounds::kFlopsPerSample.accepted(), "a number from 1 to 1e18 FLOPs");
  EXPECT_EQ(bounds::kBatch.accepted(), "a whole number from 1 to 1e6 samples");
  EXPECT_EQ(bounds::kDurationS.accepted(), "a number from 0 to 2.592e6 s (30 days)");
  EXPECT_EQ((Bound{0.01, 0.999, ""}).accepted(), "a number from 0.01 to 0.999");
  EXPECT_EQ(number_text(1e-6), "1e-6");
  EXPECT_EQ(number_text(12345), "1.2345e4");
  EXPECT_EQ(number_text(-2.5), "-2.5");
  EXPECT_EQ(number_text(std::numeric_limits<double>::infinity()), "inf");
}

TEST(Bound, ANonFiniteResultIsACheckFailureNamingIt) {
  EXPECT_EQ(check_result(0.25, "step time"), 0.25);
  try {
    check_result(std::numeric_limits<double>::infinity(), "step time of 2xk80");
    FAIL() << "expected a CheckFailure";
  } catch (const CheckFailure& failure) {
    EXPECT_EQ(std::string(failure.what()).rfind("the result step time of 2xk80 is inf", 0), 0u)
        << failure.what();
  }
  EXPECT_THROW(check_result(std::nan(""), "cost"), CheckFailure);
}

}  // namespace
}  // namespace transient
