// The `transient catalog` and `transient market` commands through the real binary: bad input is
// one `error: ...` line and exit code 2.
#include <gtest/gtest.h>

#include "common/cli_run.h"

#include <cstdio>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace {

using transient::testing::CliResult;
using transient::testing::count_lines;
using transient::testing::run_cli;

void expect_one_error_line(const std::string& args, const std::string& expected) {
  const CliResult result = run_cli(args);
  EXPECT_EQ(result.exit_code, 2) << args << "\n" << result.out;
  EXPECT_EQ(count_lines(result.out), 1) << args << "\n" << result.out;
  EXPECT_EQ(result.out, expected + "\n") << args;
}

const std::string kDataDir = std::string(" --data-dir ") + TRANSIENT_SHARED_DATA_DIR;

TEST(MarketCli, CapMustBeAMinuteOrMore) {
  for (const std::string cap : {"0", "1ms", "59s"}) {
    expect_one_error_line("market show exponential mean=5h cap=" + cap,
                          "error: market model \"exponential\", parameter cap: accepted: a "
                          "duration of 1m or more (e.g. 24h), or never");
  }
}

TEST(CatalogCli, ListAndShow) {
  const CliResult list = run_cli("catalog list");
  EXPECT_EQ(list.exit_code, 0);
  EXPECT_NE(list.out.find("gce-2019"), std::string::npos);
  EXPECT_NE(list.out.find("aws-gpu"), std::string::npos);
  const CliResult show = run_cli("catalog show gce-2019");
  EXPECT_EQ(show.exit_code, 0) << show.out;
  EXPECT_NE(show.out.find("n1-standard-4+k80"), std::string::npos);
  const CliResult json = run_cli("catalog show aws-deepvm --json");
  EXPECT_EQ(json.exit_code, 0) << json.out;
  EXPECT_NE(json.out.find("\"flopp_spot\""), std::string::npos);
}

// A type without spot in its zone (aws-gpu's p4d.24xlarge in ap-south-1) shows "-" for the
// spot price and FLOPP, and null for both in JSON, not a FLOPP of 0.
TEST(CatalogCli, AMarketNotOfferedIsADashAndNull) {
  const CliResult show = run_cli("catalog show aws-gpu");
  ASSERT_EQ(show.exit_code, 0) << show.out;
  const auto row_at = show.out.find("ap-south-1/aps1-az1\n");
  ASSERT_NE(row_at, std::string::npos) << show.out;
  const std::string row =
      show.out.substr(show.out.rfind('\n', row_at) + 1, row_at - show.out.rfind('\n', row_at));
  std::istringstream words(row);
  std::vector<std::string> fields{std::istream_iterator<std::string>(words), {}};
  // type, GPU (3 words), TFLOPS, od $/h, spot $/h, FLOPP od, FLOPP sp, region/zone
  ASSERT_EQ(fields.size(), 10u) << row;
  EXPECT_EQ(fields[0], "p4d.24xlarge") << row;
  EXPECT_NE(fields[5], "-") << row;
  EXPECT_EQ(fields[6], "-") << row;
  EXPECT_NE(fields[7], "-") << row;
  EXPECT_EQ(fields[8], "-") << row;

  const CliResult json = run_cli("catalog show aws-gpu --json");
  ASSERT_EQ(json.exit_code, 0);
  const auto types = nlohmann::json::parse(json.out).at("types");
  bool seen = false;
  for (const auto& type : types) {
    if (type.at("type") != "p4d.24xlarge" || type.at("zone") != "aps1-az1") continue;
    seen = true;
    EXPECT_TRUE(type.at("spot_usd_per_h").is_null()) << type.dump();
    EXPECT_TRUE(type.at("flopp_spot").is_null()) << type.dump();
    EXPECT_GT(type.at("flopp_on_demand").get<double>(), 0) << type.dump();
  }
  EXPECT_TRUE(seen) << json.out.substr(0, 400);
}

// `catalog show aws-gpu` said "77 types": it has 6, in 77 rows (a row per type and zone); a
// catalog of one row said "1 types".
TEST(CatalogCli, CountsTypesAndRowsApart) {
  const CliResult aws = run_cli("catalog show aws-gpu");
  ASSERT_EQ(aws.exit_code, 0) << aws.out;
  EXPECT_EQ(aws.out.substr(0, aws.out.find('\n')),
            "catalog aws-gpu: 6 types in 77 rows (a row per type and zone)");
  const std::string path = ::testing::TempDir() + "/one_type.csv";
  std::FILE* f = std::fopen(path.c_str(), "w");
  std::fputs("type,gpu,gpus,on_demand_usd_h\nk80,K80,1,0.7\n", f);
  std::fclose(f);
  const CliResult one = run_cli("catalog show " + path);
  ASSERT_EQ(one.exit_code, 0) << one.out;
  EXPECT_EQ(one.out.substr(0, one.out.find('\n')), "catalog one_type.csv: 1 type");
  const CliResult gce = run_cli("catalog show gce-2019");
  EXPECT_EQ(gce.out.substr(0, gce.out.find('\n')), "catalog gce-2019: 4 types");
}

TEST(CatalogCli, UnknownCatalogIsOneLine) {
  expect_one_error_line("catalog show gce-2020",
                        "error: unknown catalog \"gce-2020\"; accepted: gce-2019, aws-deepvm, "
                        "aws-gpu, or a CSV file (FILE.csv)");
}

TEST(CatalogCli, BadCsvIsOneLineWithFileAndLine) {
  const std::string path = ::testing::TempDir() + "/cli_bad_catalog.csv";
  std::FILE* f = std::fopen(path.c_str(), "w");
  std::fputs("type,gpu,gpus,on_demand_usd_h,spot_usd_h\nk80,K80,1,0.7,abc\n", f);
  std::fclose(f);
  expect_one_error_line("catalog show " + path,
                        "error: " + path +
                            ":2: column \"spot_usd_h\": \"abc\" is not accepted; accepted: a "
                            "price from 0.0001 to 1e4 in $ per hour, or empty when the type has "
                            "no spot market");
}

// Issue 18: every number is bounded where it enters, the bound in the one line.
TEST(MarketCli, NumbersAreBoundedWhereTheyEnter) {
  const CliResult draws = run_cli("market sample exponential mean=5h --n 1e9");
  EXPECT_EQ(draws.exit_code, 2) << draws.out;
  EXPECT_EQ(count_lines(draws.out), 1) << draws.out;
  EXPECT_NE(draws.out.find("accepted: a whole number from 1 to 1e7 draws"), std::string::npos)
      << draws.out;
  // A whole number may be written as the bound is written.
  const CliResult thousand = run_cli("market sample exponential mean=5h --n 1e3");
  EXPECT_EQ(thousand.exit_code, 0) << thousand.out;
  EXPECT_EQ(count_lines(thousand.out), 1001) << thousand.out.substr(0, 200);
  const CliResult seed = run_cli("market sample exponential mean=5h --n 3 --seed -1");
  EXPECT_EQ(seed.exit_code, 2) << seed.out;
  EXPECT_NE(seed.out.find("accepted: a whole number from 0 to 2^64 - 1"), std::string::npos)
      << seed.out;
  expect_one_error_line("market show exponential mean=1e308d",
                        "error: market model \"exponential\", parameter mean: \"1e308d\" is not a "
                        "duration up to 30 days; accepted: a number of seconds or a number with a "
                        "unit ms, s, m, h, d, e.g. 90s, 1.5h, at most 30d");
}

TEST(MarketCli, UnknownModelListsTheValidOnes) {
  expect_one_error_line("market show weibull" + kDataDir,
                        "error: unknown market model \"weibull\"; accepted: lifetime, "
                        "hour-of-day, exponential, trace");
}

TEST(MarketCli, BadParameterIsOneLine) {
  expect_one_error_line("market sample lifetime gpu --n 3" + kDataDir,
                        "error: market parameter \"gpu\": accepted: key=value, e.g. gpu=K80 or "
                        "offset=2h (see `transient market list`)");
  expect_one_error_line("market show lifetime gpus=K80" + kDataDir,
                        "error: market model \"lifetime\": unknown parameter \"gpus\"; accepted: "
                        "gpu, zone, cdf, availability, availability_offset, cap");
}

// A market parameter given twice was the last one, the first ignored (`market show lifetime
// gpu=K80 gpu=P100` showed P100's); `plan --market-param` likewise. Both are refused.
TEST(MarketCli, AParameterGivenTwiceIsRefused) {
  expect_one_error_line("market show lifetime gpu=K80 gpu=P100" + kDataDir,
                        "error: market parameter \"gpu=P100\": gpu is given twice (first "
                        "gpu=K80); accepted: each parameter once");
  expect_one_error_line(
      "plan --workload resnet-32 --steps 64000 --market lifetime --market-param gpu=P100 "
      "--market-param gpu=V100" +
          kDataDir,
      "error: --market-param \"gpu=V100\": gpu is given twice (first gpu=P100); accepted: each "
      "parameter once");
}

TEST(MarketCli, MissingDataDirIsOneLine) {
  expect_one_error_line("market show lifetime --data-dir /nonexistent/data",
                        "error: --data-dir /nonexistent/data: not a directory; accepted: the "
                        "directory holding gce-2019/, cmdare/, aws-catalog/ and spot-traces/ "
                        "(../shared/data beside the project)");
}

TEST(MarketCli, SampleIsDeterministic) {
  const CliResult a = run_cli("market sample lifetime gpu=K80 --n 5 --seed 3" + kDataDir);
  const CliResult b = run_cli("market sample lifetime gpu=K80 --n 5 --seed 3" + kDataDir);
  EXPECT_EQ(a.exit_code, 0) << a.out;
  EXPECT_EQ(a.out, b.out);
  EXPECT_EQ(count_lines(a.out), 6);
  const CliResult json = run_cli("market sample trace file=p3 --n 4 --json" + kDataDir);
  EXPECT_EQ(json.exit_code, 0) << json.out;
  EXPECT_NE(json.out.find("\"lifetimes_s\""), std::string::npos);
}

TEST(MarketCli, ShowPrintsTheSummary) {
  const CliResult show = run_cli("market show lifetime gpu=K80 --n 20000" + kDataDir);
  EXPECT_EQ(show.exit_code, 0) << show.out;
  EXPECT_NE(show.out.find("revoked within 2 h"), std::string::npos);
  EXPECT_NE(show.out.find("measured (64 servers)"), std::string::npos);
  const CliResult startup = run_cli("market startup --market on-demand" + kDataDir);
  EXPECT_EQ(startup.exit_code, 0) << startup.out;
  EXPECT_NE(startup.out.find("55 servers"), std::string::npos);
}

}  // namespace
