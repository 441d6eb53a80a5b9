#include "transient/core/error.h"

namespace transient {
namespace {
std::string locate(const std::string& file, int line, const std::string& message) {
  if (file.empty()) return message;
  if (line <= 0) return file + ": " + message;
  return file + ":" + std::to_string(line) + ": " + message;
}
}  // namespace

InputError::InputError(const std::string& message)
    : std::runtime_error(message), message_(message) {}

InputError::InputError(const std::string& file, int line, const std::string& message)
    : std::runtime_error(locate(file, line, message)),
      file_(file),
      line_(line),
      message_(message) {}

namespace internal {
void check_failed(const char* file, int line, const std::string& what) {
  throw CheckFailure(std::string("internal check failed at ") + file + ":" + std::to_string(line) +
                     ": " + what);
}
}  // namespace internal

}  // namespace transient
