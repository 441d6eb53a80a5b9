#include "transient/market/data_dir.h"

#include <filesystem>
#include <system_error>

#include "transient/core/error.h"

namespace transient::market {
namespace {

bool is_directory(const std::string& path) {
  std::error_code error;
  return std::filesystem::is_directory(path, error);
}

}  // namespace

std::string resolve_data_dir(const std::string& flag_value) {
  if (!flag_value.empty()) {
    if (!is_directory(flag_value)) {
      throw InputError("--data-dir " + flag_value +
                       ": not a directory; accepted: the directory holding gce-2019/, cmdare/, "
                       "aws-catalog/ and spot-traces/ (../shared/data beside the project)");
    }
    return flag_value;
  }
  const std::string built_in = TRANSIENT_SHARED_DATA_DIR;
  for (const std::string& candidate :
       {built_in, std::string("shared/data"), std::string("../shared/data")}) {
    if (is_directory(candidate)) return candidate;
  }
  return built_in;
}

std::string require_data_file(const std::string& data_dir, const std::string& relative) {
  const std::string path = (std::filesystem::path(data_dir) / relative).string();
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) {
    throw InputError(path, 0,
                     "data file not found; give the shared data directory with --data-dir DIR "
                     "(it holds gce-2019/, cmdare/, spot-traces/)");
  }
  return path;
}

}  // namespace transient::market
