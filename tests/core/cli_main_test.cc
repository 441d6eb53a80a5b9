// The `transient` program's own handling of what no subcommand handles: an unknown command, and
// the hand-over of the torch commands to transient-torch.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "common/cli_run.h"
#include "transient/cli/torch_commands.h"

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

// transient-torch runs with glibc's malloc on transparent huge pages, beside the user's own
// tunables (torch_commands.h): a coordinator, which waits for its workers, is looked at in /proc
// once `transient` has become it.
TEST(CliMain, TheTorchProgramRunsWithMallocOnHugePagesBesideTheUsersTunables) {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("transient-cli-tunables-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  ASSERT_EQ(::setenv("GLIBC_TUNABLES", "glibc.malloc.arena_max=2", 1), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::freopen("/dev/null", "w", stdout);
    std::freopen("/dev/null", "w", stderr);
    ::execl(TRANSIENT_CLI_PATH, "transient", "coordinator", "--job-dir", dir.c_str(), "--port", "0",
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::unsetenv("GLIBC_TUNABLES");
  const auto read_text = [](const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  };
  const fs::path proc = fs::path("/proc") / std::to_string(pid);
  std::string environment;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    if (read_text(proc / "comm") == "transient-torch\n") {
      environment = read_text(proc / "environ");
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  fs::remove_all(dir);
  ASSERT_FALSE(environment.empty()) << "`transient coordinator` never became transient-torch";
  // The dynamic loader splits the variable where it reads it (in place: /proc shows a NUL or
  // the ':' between the two).
  const std::string users = "GLIBC_TUNABLES=glibc.malloc.arena_max=2";
  const auto at = environment.find(users);
  ASSERT_NE(at, std::string::npos) << environment;
  EXPECT_EQ(environment.substr(at + users.size() + 1, 23),
            std::string("glibc.malloc.hugetlb=1") + '\0')
      << environment;
}
#endif

TEST(CliMain, TheTorchProgramsTunablesAddHugePagesUnlessTheUserSetThem) {
  EXPECT_EQ(cli::torch_program_tunables(nullptr), "glibc.malloc.hugetlb=1");
  EXPECT_EQ(cli::torch_program_tunables(""), "glibc.malloc.hugetlb=1");
  EXPECT_EQ(cli::torch_program_tunables("glibc.malloc.arena_max=2"),
            "glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1");
  EXPECT_EQ(cli::torch_program_tunables("glibc.malloc.hugetlb=0"), "glibc.malloc.hugetlb=0");
  EXPECT_EQ(cli::torch_program_tunables("glibc.malloc.hugetlb=2:glibc.malloc.arena_max=2"),
            "glibc.malloc.hugetlb=2:glibc.malloc.arena_max=2");
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
