#include "transient/core/structured_input.h"

#include <gtest/gtest.h>

#include "transient/core/error.h"

namespace transient {
namespace {

TEST(StructuredInput, TomlErrorNamesLine) {
  try {
    parse_toml("a = 1\nb = = 2\n", "s.toml");
    FAIL() << "expected an InputError";
  } catch (const InputError& error) {
    EXPECT_EQ(error.file(), "s.toml");
    EXPECT_EQ(error.line(), 2);
  }
}

// Found by tests/fuzz/toml_fuzz: these reached an unreachable point in toml++ 3.3.0's whitespace
// check (undefined behaviour); a non-whitespace code point is now just not whitespace.
TEST(StructuredInput, NonAsciiCodePointsAfterALineEndingBackslashOrAtTheTopAreDefined) {
  const toml::table table = parse_toml("s = \"\"\"\\\n\xc2\xa7\"\"\"\n", "s.toml");
  EXPECT_EQ(table["s"].value_or(std::string()), "\xc2\xa7");
  try {
    parse_toml("\xcc\xaa", "t.toml");
    FAIL() << "expected an InputError";
  } catch (const InputError& error) {
    EXPECT_EQ(error.file(), "t.toml");
    EXPECT_EQ(error.line(), 1);
  }
}

TEST(StructuredInput, TomlNodeLine) {
  const auto table = parse_toml("a = 1\n\n[job]\nsteps = 64000\n", "s.toml");
  EXPECT_EQ(toml_line(*table["job"]["steps"].node()), 4);
}

TEST(StructuredInput, JsonErrorNamesLine) {
  try {
    parse_json("{\n \"a\": 1,\n \"b\": ]\n}", "x.json");
    FAIL() << "expected an InputError";
  } catch (const InputError& error) {
    EXPECT_EQ(error.line(), 3);
  }
}

// A number beyond a double's range is bad input naming its line, not an internal failure
// (issue 18: 1e400 in any JSON input ended the program with exit 1).
TEST(StructuredInput, AnOverflowingJsonNumberIsAnInputErrorNamingItsLine) {
  try {
    parse_json("{\n \"a\": 1,\n \"b\": 1e400\n}", "x.json");
    FAIL() << "expected an InputError";
  } catch (const InputError& error) {
    EXPECT_EQ(error.line(), 3);
    EXPECT_NE(std::string(error.what()).find("the number 1e400 is out of range"), std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace transient
