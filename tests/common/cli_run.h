// Runs the built `transient` program (TRANSIENT_CLI_PATH, set by transient_add_test) as a real
// process with a shell command line, and captures what it prints, for tests of the CLI.
// (tests/train/cli_process.h is the richer runner for long-lived, signalled trainer processes.)
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

namespace transient::testing {

struct CliResult {
  int exit_code = -1;  // -1 if the process did not exit normally
  std::string out;     // standard output (with standard error too, from run_cli)
  std::string err;     // standard error, from run_cli_split only
};

// `transient ARGS 2>&1`: the exit code and everything printed, in order.
inline CliResult run_cli(const std::string& args) {
  const std::string command = std::string(TRANSIENT_CLI_PATH) + " " + args + " 2>&1";
  CliResult result;
  std::FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return result;
  char buffer[4096];
  std::size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) result.out.append(buffer, n);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

// `transient ARGS`, with standard output and standard error kept apart.
inline CliResult run_cli_split(const std::string& args) {
  static std::atomic<int> calls{0};
  const std::string stem = ::testing::TempDir() + "/transient_cli_" + std::to_string(::getpid()) +
                           "_" + std::to_string(calls++);
  const std::string out_path = stem + ".out";
  const std::string err_path = stem + ".err";
  const std::string command =
      std::string(TRANSIENT_CLI_PATH) + " " + args + " >" + out_path + " 2>" + err_path;
  const int status = std::system(command.c_str());
  CliResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::stringstream out, err;
  out << std::ifstream(out_path).rdbuf();
  err << std::ifstream(err_path).rdbuf();
  result.out = out.str();
  result.err = err.str();
  std::remove(out_path.c_str());
  std::remove(err_path.c_str());
  return result;
}

// The number of lines in `text` (newline characters).
inline int count_lines(const std::string& text) {
  int count = 0;
  for (char c : text) count += c == '\n';
  return count;
}

// `result` is a refusal: exit code 2 and one line that contains `needle`.
// A file holding `contents` in the system's temporary folder, removed when this goes out of scope.
class TempFile {
 public:
  TempFile(const std::string& name, const std::string& contents)
      : path_((std::filesystem::temp_directory_path() / name).string()) {
    std::ofstream(path_) << contents;
  }
  ~TempFile() { std::remove(path_.c_str()); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Workload profiles of issue 18, item 11: 1e100 FLOPs per sample (on line 3), which aborted CBC
// and made predict print "inf"; and every figure at its upper bound, which must give numbers.
inline const char* const kProfileFlops1e100 =
    "{\n  \"name\": \"net\",\n  \"forward_flops_per_sample\": 1e100,\n  \"parameters\": "
    "1000000\n}\n";
inline const char* const kProfileAtTheBounds =
    "{\"name\": \"net\", \"forward_flops_per_sample\": 1e18, \"batch_per_worker\": 1000000, "
    "\"parameters\": 1e13}\n";

inline void expect_one_line_error(const CliResult& result, const std::string& needle) {
  EXPECT_EQ(result.exit_code, 2) << result.out;
  EXPECT_NE(result.out.find(needle), std::string::npos) << result.out;
  EXPECT_EQ(count_lines(result.out), 1) << result.out;
}

}  // namespace transient::testing
