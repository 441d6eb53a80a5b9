// Runs the built `transient` program as a real process for the trainer's tests.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "transient/launch/worker_process.h"

namespace transient::train::testing {

struct CliResult {
  int exit_code = -1;  // -1 if killed by a signal
  std::string out;
  std::string err;
};

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// This process's scratch directory, removed at the end when every test passed (kept otherwise,
// for a look at the job directories).
inline std::filesystem::path scratch_root() {
  return std::filesystem::temp_directory_path() /
         ("transient-train-test-" + std::to_string(::getpid()));
}

class ScratchCleanup : public ::testing::Environment {
 public:
  void TearDown() override {
    if (::testing::UnitTest::GetInstance()->Passed()) std::filesystem::remove_all(scratch_root());
  }
};

inline ::testing::Environment* const kScratchCleanup =
    ::testing::AddGlobalTestEnvironment(new ScratchCleanup);

// A fresh, empty directory for one test.
inline std::string fresh_dir(const std::string& name) {
  const auto dir = scratch_root() / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

// `args` with `--device D` added to a `train` or `coordinator` command that names none, when the
// environment says TRANSIENT_TEST_DEVICE=D: the process tests then train on that device, e.g.
// `TRANSIENT_TEST_DEVICE=cuda ctest -R Elastic` on a GPU machine (docs/benchmarks.md, "GPUs").
inline std::vector<std::string> on_test_device(std::vector<std::string> args) {
  const char* device = std::getenv("TRANSIENT_TEST_DEVICE");
  if (device == nullptr || *device == '\0' || args.empty()) return args;
  if (args[0] != "train" && args[0] != "coordinator") return args;
  for (const auto& arg : args) {
    if (arg == "--device" || arg == "--help" || arg == "-h") return args;
  }
  args.insert(args.begin() + 1, {"--device", device});
  return args;
}

// `transient args...` started in a process group of its own (so that a test can SIGKILL it
// together with its workers), stdout and stderr to files. `through` is a command that runs it
// (e.g. `ip netns exec HOST`, which execs it in the same process), or empty.
class CliProcess {
 public:
  explicit CliProcess(const std::vector<std::string>& args, const std::string& log_prefix,
                      const std::vector<std::string>& through = {})
      : out_path_(log_prefix + ".out"), err_path_(log_prefix + ".err") {
    std::vector<std::string> storage = through;
    storage.push_back(TRANSIENT_CLI_PATH);
    const auto given = on_test_device(args);
    storage.insert(storage.end(), given.begin(), given.end());
    std::vector<char*> argv;
    for (auto& arg : storage) argv.push_back(arg.data());
    argv.push_back(nullptr);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setpgid(0, 0);
      if (!std::freopen(out_path_.c_str(), "w", stdout) ||
          !std::freopen(err_path_.c_str(), "w", stderr)) {
        ::_exit(126);
      }
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::setpgid(pid_, pid_);
  }
  ~CliProcess() {
    if (!reaped_) kill_group();
  }

  pid_t pid() const { return pid_; }

  void kill_group() {
    ::kill(-pid_, SIGKILL);
    ::kill(pid_, SIGKILL);
    wait();
  }

  // Whether the process has exited (it is reaped then), without waiting.
  bool exited() {
    if (reaped_) return true;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) != pid_) return false;
    status_ = status;
    reaped_ = true;
    return true;
  }

  // How it stands, for a failure's message: "running (state S)", "ended: exit code 2", "ended:
  // killed by signal 11 (Segmentation fault)".
  std::string how() {
    if (!exited()) {
      const std::string stat = slurp("/proc/" + std::to_string(pid_) + "/stat");
      const auto name_end = stat.rfind(") ");
      return "running (state " +
             (name_end == std::string::npos ? std::string("?") : stat.substr(name_end + 2, 1)) +
             ")";
    }
    return "ended: " + launch::describe_wait_status(status_);
  }

  CliResult wait() {
    if (!reaped_) {
      int status = 0;
      while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
      status_ = status;
      reaped_ = true;
    }
    CliResult result;
    result.exit_code = WIFEXITED(status_) ? WEXITSTATUS(status_) : -1;
    result.out = slurp(out_path_);
    result.err = slurp(err_path_);
    return result;
  }

 private:
  std::string out_path_;
  std::string err_path_;
  pid_t pid_ = -1;
  int status_ = 0;
  bool reaped_ = false;
};

// The fields of /proc/PID/stat after the command's name (proc(5)'s fields 3 on: [0] the state,
// [1] the parent, [11] and [12] the user and system CPU time in ticks); empty once it has gone.
inline std::vector<std::string> stat_fields(long pid) {
  const std::string stat = slurp("/proc/" + std::to_string(pid) + "/stat");
  const auto name_end = stat.rfind(") ");  // the name may hold spaces and parentheses
  std::vector<std::string> fields;
  if (name_end == std::string::npos) return fields;
  std::istringstream words(stat.substr(name_end + 2));
  for (std::string word; words >> word;) fields.push_back(word);
  return fields;
}

// The processes whose parent is `parent`, from /proc.
inline std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> children;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const auto fields = stat_fields(std::stol(name));
    if (fields.size() > 1 && std::stol(fields[1]) == parent) {
      children.push_back(static_cast<pid_t>(std::stol(name)));
    }
  }
  return children;
}

// The words of process `pid`'s command line (empty once it has gone).
inline std::vector<std::string> command_words(pid_t pid) {
  const std::string line = slurp("/proc/" + std::to_string(pid) + "/cmdline");
  std::vector<std::string> words;
  for (std::size_t at = 0; at < line.size();) {
    const std::size_t end = std::min(line.find('\0', at), line.size());
    if (end > at) words.push_back(line.substr(at, end - at));
    at = end + 1;
  }
  return words;
}

// The children of a launcher that run `command` (`worker`, or `fork-server`, which starts the
// workers where the launcher has one: launch/fork_server.h).
inline std::vector<pid_t> children_running(pid_t launcher, const std::string& command) {
  std::vector<pid_t> found;
  for (const pid_t child : children_of(launcher)) {
    const auto words = command_words(child);
    if (words.size() > 1 && words[1] == command) found.push_back(child);
  }
  return found;
}

inline CliResult run_cli(const std::vector<std::string>& args, const std::string& log_prefix) {
  CliProcess process(args, log_prefix);
  return process.wait();
}

}  // namespace transient::train::testing
