// The `transient` program's own handling of what no subcommand handles: an unknown command.
#include <gtest/gtest.h>

#include "common/cli_run.h"

namespace transient {
namespace {

TEST(CliMain, UnknownCommandIsOneLineListingTheCommands) {
  const auto result = testing::run_cli("simulat x.toml");
  EXPECT_EQ(result.exit_code, 2) << result.out;
  EXPECT_EQ(testing::count_lines(result.out), 1) << result.out;
  EXPECT_EQ(result.out.rfind("error: unknown command \"simulat\"; accepted: ", 0), 0u)
      << result.out;
  EXPECT_NE(result.out.find("simulate"), std::string::npos) << result.out;
#ifdef TRANSIENT_WITH_TORCH
  EXPECT_NE(result.out.find("coordinator, worker"), std::string::npos) << result.out;
#else
  // A torch-free build has no trainer: the list ends with the planner.
  EXPECT_NE(result.out.find("predict, plan\n"), std::string::npos) << result.out;
#endif
}

TEST(CliMain, DirectoryGivenAsAFileIsOneLine) {
  const auto result =
      testing::run_cli(std::string("simulate ") + TRANSIENT_SOURCE_DIR + "/examples");
  EXPECT_EQ(result.exit_code, 2) << result.out;
  EXPECT_EQ(testing::count_lines(result.out), 1) << result.out;
  EXPECT_NE(result.out.find("is a directory"), std::string::npos) << result.out;
}

}  // namespace
}  // namespace transient
