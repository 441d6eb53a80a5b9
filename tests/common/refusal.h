// The refusal a reader gives, as text, for tests of bad input read without a process.
#pragma once

#include <string>

#include "transient/core/error.h"

namespace transient::testing {

// The what() of the InputError `read()` throws, or "accepted" if it throws none.
template <typename Read>
std::string refusal_of(Read read) {
  try {
    read();
    return "accepted";
  } catch (const InputError& error) {
    return error.what();
  }
}

}  // namespace transient::testing
