#include "transient/records/internal/record_file.h"

#include <filesystem>
#include <system_error>

#include "transient/core/atomic_file.h"

namespace transient::records::internal {

namespace fs = std::filesystem;

RecordFile read_record_file(const std::string& path) {
  std::error_code error;
  const fs::file_status status = fs::status(path, error);
  if (status.type() == fs::file_type::not_found) {
    return {std::nullopt, ReadProblem{path, 0, "missing"}};
  }
  if (error) {
    return {std::nullopt, ReadProblem{path, 0, "cannot be read: " + error.message()}};
  }
  // A FIFO would block the reader until a writer came, a device (/dev/zero) never ends.
  if (!fs::is_regular_file(status)) {
    return {std::nullopt,
            ReadProblem{path, 0,
                        "not a regular file (a directory, FIFO or device); accepted: a "
                        "regular file"}};
  }
  const std::uintmax_t bytes = fs::file_size(path, error);
  if (error) return {std::nullopt, ReadProblem{path, 0, "cannot be read: " + error.message()}};
  if (bytes > kMaxRecordFileBytes) {
    return {std::nullopt, ReadProblem{path, 0,
                                      "is " + std::to_string(bytes) +
                                          " bytes; accepted: a record file of at most 4 GiB"}};
  }
  try {
    return {read_file(path), std::nullopt};
  } catch (const std::exception& failure) {
    return {std::nullopt, ReadProblem{path, 0, failure.what()}};
  }
}

bool record_file_present(const std::string& path) {
  std::error_code error;
  return fs::status(path, error).type() != fs::file_type::not_found;
}

}  // namespace transient::records::internal
