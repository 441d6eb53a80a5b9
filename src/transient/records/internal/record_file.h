// The text of one record file, or the problem that stops it being read (missing, unreadable, not a
// regular file, too large). Never throws: a path the file system refuses (a symlink loop, a name
// too long) is a problem naming it, as a damaged line is.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "transient/records/read_problem.h"

namespace transient::records::internal {

// The largest record file read: a job's steps.csv of a million steps of 16 workers is about
// 1 GiB; anything larger is damage (or /dev/zero behind a symlink), refused before it is read.
inline constexpr std::uintmax_t kMaxRecordFileBytes = std::uintmax_t{4} << 30;

struct RecordFile {
  std::optional<std::string> text;     // the whole file, if it could be read
  std::optional<ReadProblem> problem;  // otherwise why not
};

// Reads `path` if it is a regular file (or a symlink to one) of at most kMaxRecordFileBytes; a
// FIFO, a device or a directory is a problem, never opened.
RecordFile read_record_file(const std::string& path);

// Whether there is something at `path` (even something that cannot be read, such as a symlink
// loop, which read_record_file() then names as a problem). Never throws.
bool record_file_present(const std::string& path);

}  // namespace transient::records::internal
