#include "transient/plan/request.h"

#include <cmath>

#include <fmt/format.h>

namespace transient::plan {

std::string Request::text() const {
  return fmt::format("{}{}{}", format_step_count(total_steps),
                     has_deadline() ? " in " + format_hours(deadline_s) : "",
                     has_budget() ? " for " + format_usd(budget_usd) : "");
}

std::string format_steps(double steps) {
  std::string digits = fmt::format("{:.0f}", steps);
  std::string out;
  const int n = static_cast<int>(digits.size());
  for (int i = 0; i < n; ++i) {
    out += digits[i];
    if ((n - i - 1) % 3 == 0 && i != n - 1) out += ',';
  }
  return out;
}

std::string format_step_count(double steps) {
  return format_steps(steps) + (steps == 1.0 ? " step" : " steps");
}

std::string format_hours(double seconds) {
  if (!std::isfinite(seconds)) return "never";
  // Under a minute, whole minutes would read "0 min" (a 20 s deadline).
  if (seconds < 59.5) return fmt::format("{:.0f} s", seconds);
  if (seconds < 3600.0) return fmt::format("{:.0f} min", seconds / 60.0);
  return fmt::format("{:.2f} h", seconds / 3600.0);
}

std::string format_usd(double usd) { return fmt::format("${:.2f}", usd); }

std::string format_quantile(double share) {
  // Three decimals of a percent (--confidence 0.9995), the trailing zeros dropped: 0.996 is
  // "p99.6", not the "p100" that rounding to a whole percent made of it.
  std::string digits = fmt::format("{:.3f}", share * 100);
  digits.erase(digits.find_last_not_of('0') + 1);
  if (digits.back() == '.') digits.pop_back();
  return "p" + digits;
}

}  // namespace transient::plan
