// Duration strings (core/duration): what parse_duration_s accepts is a finite number of seconds
// >= 0, and require_duration_s keeps to 30 days.
#include <cmath>

#include "fuzz_input.h"
#include "transient/core/bounds.h"
#include "transient/core/duration.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = transient::fuzz::as_text(data, size);
  if (const auto seconds = transient::parse_duration_s(text)) {
    if (!std::isfinite(*seconds) || *seconds < 0) {
      transient::fuzz::finding("a duration out of range", text.c_str());
    }
  }
  transient::fuzz::accept_or_input_error([&] {
    const double seconds = transient::require_duration_s(text, "--deadline");
    if (!transient::bounds::kDurationS.contains(seconds)) {
      transient::fuzz::finding("a duration beyond 30 days", text.c_str());
    }
    transient::format_duration(seconds);
  });
  return 0;
}
