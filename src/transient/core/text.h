// Small text helpers the parsers and their error lines share: case folding of names people type
// ("V100", "us-West-2a"), trimming, lists in messages ("accepted: a, b, c") and counts of things
// ("1 server", "2 servers"), input quoted in a line. ASCII only: every
// name compared this way is ASCII. Torch-free.
#pragma once

#include <string>
#include <string_view>

namespace transient {

// `text` with ASCII letters made lower (upper) case; other bytes as they are.
std::string lowercase(std::string text);
std::string uppercase(std::string text);

// Whether `a` and `b` are the same but for the case of ASCII letters.
bool same_ignoring_case(std::string_view a, std::string_view b);

// `text` without leading and trailing white space (std::isspace).
std::string trim(std::string_view text);

// `n` and the noun, singular for one: counted(1, "server") == "1 server", counted(4, "server") ==
// "4 servers"; `plural` for nouns not made plural by an "s".
std::string counted(long long n, std::string_view noun, std::string_view plural = {});

// The length of the decimal number `text` starts with, 0 if none: a sign, digits with at most one
// point (a digit on at least one side), then an exponent (e or E, a sign, digits) if one follows.
// What std::strtod reads from there, but for its other forms, hexadecimal ("0x10", "0x1p-1"),
// "inf" and "nan", which no input documents: parsers call strtod on what this has measured.
std::size_t decimal_number_length(std::string_view text);

// `text` with its control characters (a newline, a terminal escape: bytes below 0x20 and 0x7f) as
// '?': what a line quoting input may show, so that printing it is one line and always safe.
std::string printable(std::string text);

// `word` as one word of a POSIX shell command a user can paste: as it is when it holds only
// letters, digits and _ . / : @ % + = , -, else in single quotes (a quote inside as '\''). A
// suggested `--job-dir /tmp/my job` was two words.
std::string shell_word(std::string_view word);

// The reason an error's text gives, in one line: libtorch's errors carry the C++ stack after
// their message ("\nException raised from ... frame #0: ..."), and an error of TorchScript's
// interpreter says "The following operation failed in the TorchScript interpreter." first, its
// TorchScript traceback next and the reason last ("RuntimeError: mat1 and mat2 shapes cannot be
// multiplied ..."). Other text: its first line.
std::string error_reason(std::string_view what);

// The items of a range of strings, separated by `separator`: join({"a", "b"}) == "a, b".
template <typename Range>
std::string join(const Range& items, std::string_view separator = ", ") {
  std::string out;
  bool first = true;
  for (const auto& item : items) {
    if (!first) out += separator;
    out += item;
    first = false;
  }
  return out;
}

}  // namespace transient
