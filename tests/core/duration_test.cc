#include "transient/core/duration.h"

#include <gtest/gtest.h>

#include "transient/core/error.h"

namespace transient {
namespace {

TEST(Duration, ParsesUnitsAndSums) {
  EXPECT_EQ(parse_duration_s("90"), 90.0);
  EXPECT_EQ(parse_duration_s("90s"), 90.0);
  EXPECT_EQ(parse_duration_s("5m"), 300.0);
  EXPECT_EQ(parse_duration_s("1.5h"), 5400.0);
  EXPECT_EQ(parse_duration_s("1h30m"), 5400.0);
  EXPECT_EQ(parse_duration_s("250ms"), 0.25);
  EXPECT_EQ(parse_duration_s("2d"), 172800.0);
}

TEST(Duration, RejectsNonsense) {
  EXPECT_FALSE(parse_duration_s(""));
  EXPECT_FALSE(parse_duration_s("abc"));
  EXPECT_FALSE(parse_duration_s("5y"));
  EXPECT_FALSE(parse_duration_s("-5s"));
  EXPECT_FALSE(parse_duration_s("1h30"));
  EXPECT_THROW(require_duration_s("soon", "--deadline"), InputError);
}

TEST(Duration, FormatsForPeople) {
  EXPECT_EQ(format_duration(3.25), "3.2 s");
  EXPECT_EQ(format_duration(245), "4 min 05 s");
  EXPECT_EQ(format_duration(3720), "1 h 02 min");
}

// strtod reads hexadecimal too: deadline = "0x10s" was 16 s. A duration's number is decimal.
TEST(Duration, RejectsHexadecimalAndNonFiniteNumbers) {
  for (const char* text :
       {"0x10s", "0x10", "0x1p4m", "1h0x10m", "infs", "inf", "nan", "infinityh"}) {
    EXPECT_FALSE(parse_duration_s(text)) << text;
  }
  EXPECT_EQ(parse_duration_s("1e2s"), 100.0);
  EXPECT_EQ(parse_duration_s(".5m"), 30.0);
  EXPECT_EQ(parse_duration_s("0s"), 0.0);
}

}  // namespace
}  // namespace transient
