#include "transient/core/duration.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "transient/core/bounds.h"
#include "transient/core/error.h"
#include "transient/core/text.h"

namespace transient {

std::optional<double> parse_duration_s(const std::string& text) {
  std::size_t pos = 0;
  auto skip_spaces = [&] {
    while (pos < text.size() && std::isspace(static_cast<unsigned char>(text[pos]))) ++pos;
  };
  skip_spaces();
  if (pos == text.size()) return std::nullopt;
  double total = 0.0;
  bool any = false;
  while (pos < text.size()) {
    const char* begin = text.c_str() + pos;
    // Decimal only: strtod would read "0x10s" as 16 s.
    const std::size_t length = decimal_number_length(begin);
    if (length == 0) return std::nullopt;
    char* end = nullptr;
    const double value = std::strtod(begin, &end);
    if (end != begin + length || !std::isfinite(value) || value < 0.0) return std::nullopt;
    pos += static_cast<std::size_t>(end - begin);
    std::size_t unit_begin = pos;
    while (pos < text.size() && std::isalpha(static_cast<unsigned char>(text[pos]))) ++pos;
    const std::string unit = text.substr(unit_begin, pos - unit_begin);
    double scale = 0.0;
    if (unit.empty() || unit == "s" || unit == "sec") {
      scale = 1.0;
    } else if (unit == "ms") {
      scale = 1e-3;
    } else if (unit == "m" || unit == "min") {
      scale = 60.0;
    } else if (unit == "h") {
      scale = 3600.0;
    } else if (unit == "d") {
      scale = 86400.0;
    } else {
      return std::nullopt;
    }
    // A bare number is only accepted alone: "1h30" is ambiguous.
    if (unit.empty() && any) return std::nullopt;
    total += value * scale;
    any = true;
    skip_spaces();
    if (unit.empty() && pos != text.size()) return std::nullopt;
  }
  // "1e308d" overflows to infinity: not a duration.
  if (!std::isfinite(total)) return std::nullopt;
  return total;
}

double require_duration_s(const std::string& text, const std::string& what) {
  const auto seconds = parse_duration_s(text);
  if (seconds && *seconds <= bounds::kMaxDurationS) return *seconds;
  throw InputError(what + ": \"" + text +
                   "\" is not a duration up to 30 days; accepted: a number of seconds or a number "
                   "with a unit ms, s, m, h, d, e.g. 90s, 5m, 1.5h, 1h30m, at most 30d");
}

std::string format_duration(double seconds) {
  char buffer[64];
  if (!std::isfinite(seconds)) return "never";
  if (seconds < 60.0) {
    std::snprintf(buffer, sizeof buffer, "%.1f s", seconds);
  } else if (seconds < 3600.0) {
    const long s = std::lround(seconds);
    std::snprintf(buffer, sizeof buffer, "%ld min %02ld s", s / 60, s % 60);
  } else if (seconds < 86400.0) {
    const long m = std::lround(seconds / 60.0);
    std::snprintf(buffer, sizeof buffer, "%ld h %02ld min", m / 60, m % 60);
  } else {
    const long h = std::lround(seconds / 3600.0);
    std::snprintf(buffer, sizeof buffer, "%ld d %02ld h", h / 24, h % 24);
  }
  return buffer;
}

}  // namespace transient
