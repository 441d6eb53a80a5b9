// run_app (cli/run_app.h) in process: what CLI11 refuses comes out as one line in the project's
// words, pointing at the help of the command that was run.
#include "transient/cli/run_app.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace transient::cli {
namespace {

// Runs `transient WORDS...` on an app with a `train` command of an integer, a floating-point and
// an unsigned option; returns the exit code and what it wrote on standard error.
std::pair<int, std::string> run(std::vector<std::string> words) {
  CLI::App app{"test", "transient"};
  CLI::App* train = app.add_subcommand("train", "a command");
  int workers = 0;
  double lr = 0;
  unsigned seed = 0;
  train->add_option("--workers", workers);
  train->add_option("--lr", lr);
  train->add_option("--seed", seed);
  train->add_option("--epochs", workers)->excludes("--lr");
  words.insert(words.begin(), "transient");
  std::vector<char*> argv;
  for (auto& word : words) argv.push_back(word.data());
  ::testing::internal::CaptureStderr();
  const int code = run_app(app, static_cast<int>(argv.size()), argv.data());
  return {code, ::testing::internal::GetCapturedStderr()};
}

TEST(RunApp, AValueThatIsNoNumberIsRefusedAsEveryOtherBadValue) {
  EXPECT_EQ(run({"train", "--workers", "abc"}),
            std::make_pair(2, std::string("error: --workers: \"abc\"; accepted: a whole number "
                                          "(see `transient train --help`)\n")));
  EXPECT_EQ(run({"train", "--lr", "fast"}),
            std::make_pair(2, std::string("error: --lr: \"fast\"; accepted: a number (see "
                                          "`transient train --help`)\n")));
  EXPECT_EQ(run({"train", "--seed", "-1"}),
            std::make_pair(2, std::string("error: --seed: \"-1\"; accepted: a whole number from 0 "
                                          "(see `transient train --help`)\n")));
}

TEST(RunApp, OtherRefusalsPointAtTheCommandsOwnHelp) {
  EXPECT_EQ(run({"train", "--epochs", "2", "--lr", "1"}),
            std::make_pair(2, std::string("error: --lr excludes --epochs (see `transient train "
                                          "--help`)\n")));
  EXPECT_EQ(run({"train", "extra"}).second,
            "error: The following argument was not expected: extra (see `transient train "
            "--help`)\n");
  EXPECT_EQ(run({"train", "--workers", "3"}), std::make_pair(0, std::string()));
}

}  // namespace
}  // namespace transient::cli
