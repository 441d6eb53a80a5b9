#include "transient/records/internal/record_file.h"

#include <filesystem>

#include "transient/core/atomic_file.h"

namespace transient::records::internal {

RecordFile read_record_file(const std::string& path) {
  if (!std::filesystem::exists(path)) return {std::nullopt, ReadProblem{path, 0, "missing"}};
  try {
    return {read_file(path), std::nullopt};
  } catch (const std::exception& error) {
    return {std::nullopt, ReadProblem{path, 0, error.what()}};
  }
}

}  // namespace transient::records::internal
