// Durations as people write them on a command line or in a scenario file: "90s", "5m", "1.5h",
// "1h30m", "2d", "250ms". A bare number is seconds.
#pragma once

#include <optional>
#include <string>

namespace transient {

// Hours in a second: a price per hour times this is a price per second.
inline constexpr double kHoursPerSecond = 1.0 / 3600.0;

// Seconds in `text`, or nullopt if it is not a duration. Negative durations are not accepted.
std::optional<double> parse_duration_s(const std::string& text);

// Like parse_duration_s, but bounded to 30 days (bounds::kMaxDurationS); throws
// InputError("<what>: \"text\" is not a duration up to 30 days; ...") otherwise.
double require_duration_s(const std::string& text, const std::string& what);

// "3.2 s", "4 min 05 s", "1 h 02 min", "2 d 03 h": short and unambiguous, for people.
std::string format_duration(double seconds);

}  // namespace transient
