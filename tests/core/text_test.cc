#include "transient/core/text.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace transient {
namespace {

TEST(Text, CaseFoldsAsciiLettersOnly) {
  EXPECT_EQ(lowercase("us-West-2A_V100"), "us-west-2a_v100");
  EXPECT_EQ(uppercase("v100 x8"), "V100 X8");
  EXPECT_EQ(lowercase("\xc3\x89t\xc3\xa9"), "\xc3\x89t\xc3\xa9");  // UTF-8 bytes stay as they are
  EXPECT_EQ(lowercase(""), "");
}

TEST(Text, ComparesIgnoringTheCaseOfAsciiLettersOnly) {
  EXPECT_TRUE(same_ignoring_case("V100", "v100"));
  EXPECT_TRUE(same_ignoring_case("", ""));
  EXPECT_FALSE(same_ignoring_case("v100", "v1000"));
  EXPECT_FALSE(same_ignoring_case("k80", "k8o"));
  EXPECT_FALSE(same_ignoring_case("\xc3\x89", "\xc3\xa9"));  // not UTF-8's É and é
}

TEST(Text, TrimsWhiteSpaceAtBothEndsOnly) {
  EXPECT_EQ(trim("  4 x K80\t\n"), "4 x K80");
  EXPECT_EQ(trim(" \t "), "");
  EXPECT_EQ(trim("a"), "a");
}

TEST(Text, JoinsAnyRangeOfStrings) {
  EXPECT_EQ(join(std::vector<std::string>{"a", "b", "c"}), "a, b, c");
  EXPECT_EQ(join(std::set<std::string>{"z", "y"}, " | "), "y | z");
  EXPECT_EQ(join(std::vector<std::string>{}), "");
  // An empty item keeps its separators: the list's length can be read from the text.
  EXPECT_EQ(join(std::vector<std::string>{"", "b"}), ", b");
}

TEST(Text, PrintableShowsControlCharactersAsQuestionMarks) {
  EXPECT_EQ(printable("a\nb\r\x1b[31m\x7f\tc"), "a?b??[31m??c");
  EXPECT_EQ(printable("us-west-2a \xc3\xa9"), "us-west-2a \xc3\xa9");  // UTF-8 is kept
}

TEST(Text, CountsAreSingularForOneOnly) {
  EXPECT_EQ(counted(1, "server"), "1 server");
  EXPECT_EQ(counted(0, "server"), "0 servers");
  EXPECT_EQ(counted(4, "revocation"), "4 revocations");
  EXPECT_EQ(counted(2, "process", "processes"), "2 processes");
  EXPECT_EQ(counted(1, "process", "processes"), "1 process");
  EXPECT_EQ(counted(-1, "step"), "-1 steps");
}

// A path in a command the user is told to run is one word of it, whatever it holds.
TEST(Text, AShellWordIsQuotedOnlyWhereItMustBe) {
  EXPECT_EQ(shell_word("/jobs/20261130-r32_a.b:c@d%e+f=g,h-i"),
            "/jobs/20261130-r32_a.b:c@d%e+f=g,h-i");
  EXPECT_EQ(shell_word("/tmp/my job"), "'/tmp/my job'");
  EXPECT_EQ(shell_word("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_word("$HOME;rm"), "'$HOME;rm'");
  EXPECT_EQ(shell_word(""), "''");
}

// libtorch's errors as a user's model raised them: the reason without libtorch's C++ stack (an
// error line of 8 KiB and 60 frames) and, from TorchScript's interpreter, the reason it gives
// last (the first line only said that an operation failed).
TEST(Text, AnErrorsReasonIsOneLineWithoutItsStack) {
  EXPECT_EQ(error_reason("element 0 of tensors does not require grad and does not have a "
                         "grad_fn\nException raised from run_backward at "
                         "/pytorch/torch/csrc/autograd/autograd.cpp:104 (most recent call "
                         "first):\nframe #0: c10::Error::Error(...)\nframe #1: ..."),
            "element 0 of tensors does not require grad and does not have a grad_fn");
  EXPECT_EQ(error_reason("The following operation failed in the TorchScript interpreter.\n"
                         "Traceback of TorchScript, serialized code (most recent call last):\n"
                         "  File \"code/__torch__.py\", line 9, in forward\n"
                         "    x = torch.matmul(x, w)  # Error: not this one\n"
                         "RuntimeError: mat1 and mat2 shapes cannot be multiplied (2x768 and "
                         "784x3)\n"),
            "mat1 and mat2 shapes cannot be multiplied (2x768 and 784x3)");
  EXPECT_EQ(error_reason("a plain error\nand more"), "a plain error");
  EXPECT_EQ(error_reason(""), "");
}

}  // namespace
}  // namespace transient
