// A damage found while reading a record file: the reader skips what it cannot read and says where
// and why, so that a job directory cut short by a crash can still be shown.
#pragma once

#include <string>

#include "transient/core/text.h"

namespace transient::records {

struct ReadProblem {
  std::string file;  // the path of the file
  int line = 0;      // 1-based line; 0 = the whole file
  std::string what;  // what is wrong there

  // "file:line: what" (or "file: what" for the whole file).
  std::string text() const {
    return file + (line > 0 ? ":" + std::to_string(line) : std::string()) + ": " + what;
  }
};

// The start of a damaged line as shown in a problem: at most 60 characters, control characters
// (a garbled byte, a terminal escape) as '?', so that printing a problem is always safe.
inline std::string excerpt(const std::string& line) {
  constexpr std::size_t kShown = 60;
  return printable(line.size() <= kShown ? line : line.substr(0, kShown) + "...");
}

}  // namespace transient::records
