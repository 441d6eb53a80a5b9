// Paths of the shared data for the market tests (TRANSIENT_SHARED_DATA_DIR from CMake).
#pragma once

#include <string>

#include "transient/market/registry.h"

namespace transient::market::testing {

inline std::string data_path(const std::string& relative) {
  return std::string(TRANSIENT_SHARED_DATA_DIR) + "/" + relative;
}

inline ModelContext data_context() { return ModelContext{TRANSIENT_SHARED_DATA_DIR, ""}; }

}  // namespace transient::market::testing
