// Runs the built `transient` program as a real process for the trainer's tests.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

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

// A fresh, empty directory for one test.
inline std::string fresh_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("transient-train-test-" + std::to_string(::getpid())) / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

// `transient args...` started in a process group of its own (so that a test can SIGKILL it
// together with its workers), stdout and stderr to files.
class CliProcess {
 public:
  explicit CliProcess(const std::vector<std::string>& args, const std::string& log_prefix)
      : out_path_(log_prefix + ".out"), err_path_(log_prefix + ".err") {
    std::vector<std::string> storage{TRANSIENT_CLI_PATH};
    storage.insert(storage.end(), args.begin(), args.end());
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
      ::execv(TRANSIENT_CLI_PATH, argv.data());
      ::_exit(127);
    }
    ::setpgid(pid_, pid_);
  }
  ~CliProcess() {
    if (!reaped_) kill_group();
  }

  void kill_group() {
    ::kill(-pid_, SIGKILL);
    ::kill(pid_, SIGKILL);
    wait();
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

inline CliResult run_cli(const std::vector<std::string>& args, const std::string& log_prefix) {
  CliProcess process(args, log_prefix);
  return process.wait();
}

}  // namespace transient::train::testing
