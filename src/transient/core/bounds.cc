#include "transient/core/bounds.h"

#include <cmath>
#include <cstdio>

#include "transient/core/error.h"

namespace transient {

bool Bound::contains(double value) const {
  return std::isfinite(value) && value >= lo && value <= hi &&
         (!whole || value == std::floor(value));
}

std::string Bound::accepted() const {
  std::string text = std::string(whole ? "a whole number" : "a number") + " from " +
                     number_text(lo) + " to " + number_text(hi);
  if (unit[0] != '\0') text += std::string(" ") + unit;
  return text;
}

double check_result(double value, const std::string& what) {
  if (std::isfinite(value)) return value;
  throw CheckFailure("the result " + what + " is " + number_text(value) +
                     ", not a finite number; its inputs were within bounds, so this is a bug");
}

std::string number_text(double value) {
  // Large magnitudes as people write bounds: 1e4, 2.592e6, 1e18 (not 10000 or 1e+18).
  const bool large = std::isfinite(value) && std::fabs(value) >= 1e4;
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, large ? "%.5e" : "%.6g", value);
  std::string text = buffer;
  const auto e = text.find('e');
  if (e == std::string::npos) return text;
  std::string mantissa = text.substr(0, e);
  if (mantissa.find('.') != std::string::npos) {
    mantissa.erase(mantissa.find_last_not_of('0') + 1);
    if (mantissa.back() == '.') mantissa.pop_back();
  }
  std::string exponent = text.substr(e + 1);
  const bool negative = exponent[0] == '-';
  if (exponent[0] == '+' || exponent[0] == '-') exponent.erase(0, 1);
  while (exponent.size() > 1 && exponent[0] == '0') exponent.erase(0, 1);
  return mantissa + "e" + (negative ? "-" : "") + exponent;
}

}  // namespace transient
