// Paths of the shared data for the market tests (TRANSIENT_SHARED_DATA_DIR from CMake).
#pragma once

#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "transient/core/error.h"
#include "transient/market/registry.h"

namespace transient::market::testing {

inline std::string data_path(const std::string& relative) {
  return std::string(TRANSIENT_SHARED_DATA_DIR) + "/" + relative;
}

inline ModelContext data_context() { return ModelContext{TRANSIENT_SHARED_DATA_DIR, ""}; }

// Writes `text` to the test temporary folder's `name` and reads it with `read(path)`: the
// InputError's what(), or "accepted" when `read` accepted the file.
template <typename Read>
std::string error_of_file(const std::string& name, const std::string& text, Read read) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  try {
    read(path);
  } catch (const InputError& error) {
    return error.what();
  }
  return "accepted";
}

}  // namespace transient::market::testing
