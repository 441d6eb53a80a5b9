#include "transient/report/svg_raster.h"

#include <gtest/gtest.h>

#include "common/png_header.h"
#include "transient/core/error.h"

namespace transient::report {
namespace {

TEST(SvgRaster, RendersAtTheDocumentsSizeTimesScale) {
  const std::string svg =
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"40\" height=\"30\">"
      "<rect x=\"0\" y=\"0\" width=\"20\" height=\"30\" fill=\"#000\"/></svg>";
  const std::string png = svg_to_png(svg, "test.svg", 2.0);
  const auto header = testing::read_png_header(png);
  ASSERT_TRUE(header.valid);
  EXPECT_EQ(header.width_px, 80u);
  EXPECT_EQ(header.height_px, 60u);
}

TEST(SvgRaster, NotAnSvgIsAnInputErrorNamingTheDocument) {
  try {
    svg_to_png("this is not svg", "front.svg");
    FAIL() << "expected an InputError";
  } catch (const InputError& error) {
    EXPECT_EQ(error.file(), "front.svg");
  }
}

TEST(SvgRaster, WantsPngBySuffix) {
  EXPECT_TRUE(wants_png("a/front.png"));
  EXPECT_TRUE(wants_png("FRONT.PNG"));
  EXPECT_FALSE(wants_png("front.svg"));
  EXPECT_FALSE(wants_png("png"));
}

}  // namespace
}  // namespace transient::report
