// The launcher's progress line and the lines printed beside it, as a log (not a terminal: the
// terminal's case is Trainer.ATerminalShowsEachLineWholeAndTheProgressLineLast).
#include "transient/train/progress_line.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

namespace transient::train {
namespace {

TEST(ProgressLine, InALogTheFirstStepHasNoSpeedYetAndTheLastIsAlwaysPrinted) {
  ASSERT_EQ(::isatty(STDERR_FILENO), 0) << "the test's stderr must not be a terminal";
  ::testing::internal::CaptureStderr();
  {
    ProgressLine progress(3600);
    progress.update(1, 40, 0, 2.3263, 0, -1);
    progress.update(2, 40, 0, 2.1, 1500, 3.0);  // within the interval: not printed
    progress.update(40, 40, 1, 0.4547, 35659.4, 0);
    progress.clear();  // nothing is open in a log
    progress.finish();
  }
  EXPECT_EQ(::testing::internal::GetCapturedStderr(),
            "step 1/40  epoch 1  loss 2.3263  - samples/s  ETA -\n"
            "step 40/40  epoch 2  loss 0.4547  35659 samples/s  ETA 0.0 s\n");
}

TEST(ProgressLine, ALineBesideItIsPrintedWholeAndAsIsInALog) {
  ::testing::internal::CaptureStderr();
  print_line("transient worker %s: left the job after step %lld (%s)\n", "w1", 16LL, "preempted");
  EXPECT_EQ(::testing::internal::GetCapturedStderr(),
            "transient worker w1: left the job after step 16 (preempted)\n");
}

// What a line quotes (a reason a peer sent, a file's name) cannot break it or steer a terminal.
TEST(ProgressLine, ALineShowsTheControlCharactersItQuotesAsQuestionMarks) {
  ::testing::internal::CaptureStderr();
  print_line("transient: refused a worker: %s\n", "wrong job token (\x1b[2J\nfake line)");
  EXPECT_EQ(::testing::internal::GetCapturedStderr(),
            "transient: refused a worker: wrong job token (?[2J?fake line)\n");
}

}  // namespace
}  // namespace transient::train
