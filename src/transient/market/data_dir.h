// Where the shared measurements and traces live (see ../shared/data/README.md), and checked access
// to the files in it. The CLI takes `--data-dir DIR`; when it is absent resolve_data_dir("")
// tries, in order, the directory configured at build time (CMake's TRANSIENT_SHARED_DATA_DIR),
// then ./shared/data and ../shared/data relative to the current directory.
#pragma once

#include <string>

namespace transient::market {

// `flag_value` if not empty (it must be a directory: InputError otherwise), else the first of the
// defaults above that exists. If none exists, returns the build-time directory anyway, so that the
// error for the first missing file names a concrete path.
std::string resolve_data_dir(const std::string& flag_value);

// `data_dir`/`relative`, which must be a readable file; InputError naming the path and the
// --data-dir flag otherwise.
std::string require_data_file(const std::string& data_dir, const std::string& relative);

}  // namespace transient::market
