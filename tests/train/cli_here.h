// Runs a torch command of `transient` in the test's own process (cli/torch_program.h), for
// commands the tests expect refused before any job starts: a flag, a data set, a model file, a
// job directory. The same code parses the command line and refuses it as in transient-torch;
// what a process of its own added was 0.15-0.2 s of CPU starting libtorch to print one line
// (docs/benchmarks.md, "Refusals in the test's process"). A command that starts a job runs in a
// process of its own (cli_process.h: run_cli): it forks, installs signal handlers and exits.
#pragma once

#include <gtest/gtest.h>

#include <iostream>
#include <string>
#include <vector>

#include "train/cli_process.h"
#include "transient/cli/torch_program.h"

namespace transient::train::testing {

// `transient args...` in this process: its exit code, and what it wrote to stdout and stderr.
inline CliResult run_here(const std::vector<std::string>& args) {
  std::vector<std::string> words{"transient"};
  for (const auto& arg : on_test_device(args)) words.push_back(arg);
  std::vector<char*> argv;
  for (auto& word : words) argv.push_back(word.data());
  argv.push_back(nullptr);

  // GoogleTest's capture, as the other tests of printed output use it.
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  CliResult result;
  result.exit_code =
      cli::run_torch_program(static_cast<int>(words.size()), argv.data(), /*fork_server=*/nullptr);
  std::cout.flush();
  std::cerr.flush();
  result.out = ::testing::internal::GetCapturedStdout();
  result.err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(result.exit_code, 0) << "a job ran to its end in the test's process (run_cli runs "
                                    "one in its own): "
                                 << result.out;
  return result;
}

}  // namespace transient::train::testing
