// Line numbers for JSON input. nlohmann-json keeps no source positions, so perf's JSON readers
// find the line of a key in the text themselves, to point errors at it.
#pragma once

#include <string>

namespace transient::perf::internal {

// The 1-based line of the first `"key":` in `text` at or after byte `from`; 0 if there is none.
int json_key_line(const std::string& text, const std::string& key, std::size_t from = 0);
// The byte offset of the first `"key":` at or after `from`; std::string::npos if none.
std::size_t json_key_offset(const std::string& text, const std::string& key, std::size_t from = 0);

}  // namespace transient::perf::internal
