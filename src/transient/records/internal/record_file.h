// The text of one record file, or the problem that stops it being read (missing, unreadable).
#pragma once

#include <optional>
#include <string>

#include "transient/records/read_problem.h"

namespace transient::records::internal {

struct RecordFile {
  std::optional<std::string> text;     // the whole file, if it could be read
  std::optional<ReadProblem> problem;  // otherwise why not
};

RecordFile read_record_file(const std::string& path);

}  // namespace transient::records::internal
