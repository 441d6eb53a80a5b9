// The `transient` program's own handling of what no subcommand handles: an unknown command, and
// the hand-over of the torch commands to transient-torch.
#include <cstdlib>

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
  // A torch-free build has no trainer: the planner and the reports, no coordinator or worker.
  EXPECT_NE(result.out.find(", plan"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find(", status"), std::string::npos) << result.out;
  EXPECT_EQ(result.out.find("coordinator"), std::string::npos) << result.out;
#endif
}

#ifdef TRANSIENT_WITH_TORCH
// `transient` runs the torch-free commands without loading libtorch and becomes transient-torch
// for the others (cli/torch_commands.h). The dynamic loader says which libraries it loads.
TEST(CliMain, OnlyTheTorchCommandsLoadLibtorch) {
  ASSERT_EQ(::setenv("LD_DEBUG", "libs", 1), 0);
  const auto catalog = testing::run_cli("catalog list");
  const auto version = testing::run_cli("--version");
  const auto train_help = testing::run_cli("train --help");
  ::unsetenv("LD_DEBUG");
  EXPECT_EQ(catalog.exit_code, 0) << catalog.out;
  EXPECT_NE(catalog.out.find("gce-2019"), std::string::npos) << catalog.out;
  EXPECT_EQ(catalog.out.find("libtorch"), std::string::npos) << catalog.out;
  EXPECT_EQ(version.exit_code, 0) << version.out;
  EXPECT_NE(version.out.find("libtorch_cpu.so"), std::string::npos) << version.out;
  EXPECT_EQ(train_help.exit_code, 0) << train_help.out;
  EXPECT_NE(train_help.out.find("libtorch_cpu.so"), std::string::npos) << train_help.out;
  EXPECT_NE(train_help.out.find("Usage: transient train"), std::string::npos) << train_help.out;
  EXPECT_NE(train_help.out.find("--workers"), std::string::npos) << train_help.out;
}
#endif

TEST(CliMain, DirectoryGivenAsAFileIsOneLine) {
  const auto result =
      testing::run_cli(std::string("simulate ") + TRANSIENT_SOURCE_DIR + "/examples");
  EXPECT_EQ(result.exit_code, 2) << result.out;
  EXPECT_EQ(testing::count_lines(result.out), 1) << result.out;
  EXPECT_NE(result.out.find("is a directory"), std::string::npos) << result.out;
}

}  // namespace
}  // namespace transient
