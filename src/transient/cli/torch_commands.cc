#include "transient/cli/torch_commands.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "transient/core/error.h"

namespace transient::cli {

std::string torch_command_summary(std::string_view name) {
  for (const TorchCommand& command : kTorchCommands) {
    if (command.name == name) return std::string(command.summary);
  }
  TRANSIENT_CHECK_EQ(std::string(name), std::string("a torch command"));
  return {};
}

bool runs_in_torch_program(std::string_view first_argument) {
  if (first_argument == "--version") return true;
  for (const TorchCommand& command : kTorchCommands) {
    if (command.name == first_argument) return true;
  }
  return false;
}

std::string torch_program_tunables(const char* existing) {
  constexpr std::string_view kHugePages = "glibc.malloc.hugetlb=1";
  if (existing == nullptr || *existing == '\0') return std::string(kHugePages);
  const std::string tunables(existing);
  if (tunables.find("glibc.malloc.hugetlb") != std::string::npos) return tunables;
  return tunables + ":" + std::string(kHugePages);
}

std::string exec_torch_program(char** argv) {
  std::error_code error;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) return "cannot find this program's own file (/proc/self/exe): " + error.message();
  const std::string torch_program = (self.parent_path() / "transient-torch").string();
  const std::string tunables = torch_program_tunables(std::getenv("GLIBC_TUNABLES"));
  ::setenv("GLIBC_TUNABLES", tunables.c_str(), 1);
  ::execv(torch_program.c_str(), argv);
  return "`transient " + std::string(argv[1]) + "` runs in transient-torch, which is not at " +
         torch_program + " (" + std::strerror(errno) +
         "); it is built beside `transient` when libtorch is found";
}

}  // namespace transient::cli
