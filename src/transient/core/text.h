// Small text helpers the parsers and their error lines share: case folding of names people type
// ("V100", "us-West-2a"), trimming, and lists in messages ("accepted: a, b, c"). ASCII only: every
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
