#include "transient/core/csv_table.h"

#include <gtest/gtest.h>

#include "transient/core/error.h"

namespace transient {
namespace {

TEST(CsvTable, ReadsHeaderRowsAndLineNumbers) {
  const auto table = CsvTable::parse("a,b\n1,2\n\n\"x,y\",4\n", "mem.csv");
  ASSERT_EQ(table.header(), (std::vector<std::string>{"a", "b"}));
  ASSERT_EQ(table.rows().size(), 2u);
  EXPECT_EQ(table.rows()[0].line, 2);
  EXPECT_EQ(table.rows()[1].line, 4);
  EXPECT_EQ(table.rows()[1].fields[0], "x,y");
  EXPECT_DOUBLE_EQ(table.number(table.rows()[0], 1), 2.0);
}

TEST(CsvTable, WrongFieldCountNamesFileAndLine) {
  try {
    CsvTable::parse("a,b\n1,2\n3\n", "cat.csv");
    FAIL() << "expected an InputError";
  } catch (const InputError& error) {
    EXPECT_EQ(error.file(), "cat.csv");
    EXPECT_EQ(error.line(), 3);
    EXPECT_NE(std::string(error.what()).find("expected 2 fields"), std::string::npos);
  }
}

TEST(CsvTable, NonNumberNamesColumn) {
  const auto table = CsvTable::parse("price\nabc\n", "p.csv");
  try {
    table.number(table.rows()[0], 0);
    FAIL() << "expected an InputError";
  } catch (const InputError& error) {
    EXPECT_EQ(std::string(error.what()), "p.csv:2: column \"price\": \"abc\" is not a number");
  }
}

TEST(CsvTable, MissingColumnListsHeader) {
  const auto table = CsvTable::parse("x,y\n1,2\n", "t.csv");
  EXPECT_EQ(table.require_column({"y"}), 1);
  EXPECT_THROW(table.require_column({"z", "zz"}), InputError);
}

TEST(CsvTable, MissingFileIsInputError) {
  EXPECT_THROW(CsvTable::read_file("/nonexistent/file.csv"), InputError);
}

TEST(CsvTable, UnclosedQuoteIsAnErrorAtItsLine) {
  try {
    CsvTable::parse("a,b\n1,\"x\n", "q.csv");
    FAIL() << "expected an InputError";
  } catch (const InputError& error) {
    EXPECT_EQ(error.file(), "q.csv");
    EXPECT_NE(std::string(error.what()).find("malformed CSV"), std::string::npos) << error.what();
  }
}

TEST(CsvTable, DirectoryIsAnInputError) {
  try {
    CsvTable::read_file("/tmp");
    FAIL() << "expected an InputError";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("is a directory"), std::string::npos);
  }
}

TEST(ParseNumber, RejectsTrailingText) {
  EXPECT_EQ(parse_number("1.5"), 1.5);
  EXPECT_EQ(parse_number(" 2 "), 2.0);
  EXPECT_FALSE(parse_number("1.5x"));
  EXPECT_FALSE(parse_number(""));
  EXPECT_FALSE(parse_number("nan"));
}

// strtod reads hexadecimal too: a catalog price 0x1p-1 was $0.50 an hour and `plan --steps
// 0x3e8` 1000 steps. Every number is decimal, as documented; so are inf and nan refused.
TEST(ParseNumber, AcceptsDecimalsOnly) {
  EXPECT_EQ(parse_number("1e3"), 1000.0);
  EXPECT_EQ(parse_number("-2.5E-1"), -0.25);
  EXPECT_EQ(parse_number(".5"), 0.5);
  EXPECT_EQ(parse_number("5."), 5.0);
  EXPECT_EQ(parse_number("+7"), 7.0);
  for (const char* text : {"0x3e8", "0x1p-1", "0X10", "-0x10", "inf", "-infinity", "nan", "1e",
                           "1e+", ".", "e5", "0x"}) {
    EXPECT_FALSE(parse_number(text)) << text;
  }
}

}  // namespace
}  // namespace transient
