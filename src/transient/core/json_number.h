// Whole numbers read from JSON that others wrote (protocol messages, the job's config, the
// journal, a job's records, a study's output). nlohmann's get<std::int64_t>() converts a float
// such as 1e300 without a check, which is undefined behaviour; these read only a JSON integer
// that fits: whole_number_in() says whether it does, the others throw nlohmann's own type_error
// (302) otherwise, as get<>() does for a string, so that every caller's handling of a malformed
// field stays the same.
#pragma once

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <type_traits>

namespace transient {

namespace internal {

// Throws nlohmann's type_error (302) saying that the field `key` is no whole number in [min, max].
[[noreturn]] inline void throw_not_whole(const nlohmann::json& value, const char* key,
                                         const std::string& min, const std::string& max) {
  std::string shown = value.dump();
  if (shown.size() > 32) shown = shown.substr(0, 32) + "...";
  throw nlohmann::json::type_error::create(302,
                                           std::string("\"") + key +
                                               "\" must be a whole number from " + min + " to " +
                                               max + ", not " + shown,
                                           &value);
}

}  // namespace internal

// The whole number `value` holds, if it is a JSON integer from `min` to `max`.
inline std::optional<std::int64_t> whole_number_in(
    const nlohmann::json& value, std::int64_t min = std::numeric_limits<std::int64_t>::min(),
    std::int64_t max = std::numeric_limits<std::int64_t>::max()) {
  if (value.is_number_unsigned()) {
    const auto number = value.get<std::uint64_t>();
    if (max >= 0 && number <= static_cast<std::uint64_t>(max) &&
        static_cast<std::int64_t>(number) >= min) {
      return static_cast<std::int64_t>(number);
    }
  } else if (value.is_number_integer()) {
    const auto number = value.get<std::int64_t>();
    if (number >= min && number <= max) return number;
  }
  return std::nullopt;
}

// `value` (the field `key`) as a whole number from `min` to `max`.
inline std::int64_t whole_number(const nlohmann::json& value, const char* key,
                                 std::int64_t min = std::numeric_limits<std::int64_t>::min(),
                                 std::int64_t max = std::numeric_limits<std::int64_t>::max()) {
  const auto number = whole_number_in(value, min, max);
  if (!number) internal::throw_not_whole(value, key, std::to_string(min), std::to_string(max));
  return *number;
}

// `value` (the field `key`) as a whole number from 0 to `max`, for the unsigned fields (a seed).
inline std::uint64_t whole_unsigned(const nlohmann::json& value, const char* key,
                                    std::uint64_t max = std::numeric_limits<std::uint64_t>::max()) {
  // A negative integer is stored signed; any other integer converts to uint64 exactly.
  const bool negative =
      !value.is_number_unsigned() && value.is_number_integer() && value.get<std::int64_t>() < 0;
  if (!value.is_number_integer() || negative || value.get<std::uint64_t>() > max) {
    internal::throw_not_whole(value, key, "0", std::to_string(max));
  }
  return value.get<std::uint64_t>();
}

// `value` (the field `key`) as a whole number of the integral type T, from `min` (default: T's
// least) to T's largest: a count kept in an int, a CRC-32 in a uint32_t, a seed in a uint64_t.
template <typename T>
T whole_number_as(const nlohmann::json& value, const char* key,
                  T min = std::numeric_limits<T>::min()) {
  static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>);
  if constexpr (std::is_unsigned_v<T>) {
    const std::uint64_t number = whole_unsigned(value, key, std::numeric_limits<T>::max());
    if (number < min)
      internal::throw_not_whole(value, key, std::to_string(min),
                                std::to_string(std::numeric_limits<T>::max()));
    return static_cast<T>(number);
  } else {
    return static_cast<T>(whole_number(value, key, min, std::numeric_limits<T>::max()));
  }
}

// The whole number at `key` of `object`, from `min` to `max`; a missing key throws as at() does.
inline std::int64_t integer_at(const nlohmann::json& object, const char* key,
                               std::int64_t min = std::numeric_limits<std::int64_t>::min(),
                               std::int64_t max = std::numeric_limits<std::int64_t>::max()) {
  return whole_number(object.at(key), key, min, max);
}

// The whole number at `key` of `object` (from `min` to `max`), or `absent` when there is no
// such key.
inline std::int64_t integer_or(const nlohmann::json& object, const char* key, std::int64_t absent,
                               std::int64_t min = std::numeric_limits<std::int64_t>::min(),
                               std::int64_t max = std::numeric_limits<std::int64_t>::max()) {
  const auto found = object.find(key);
  return found == object.end() ? absent : whole_number(*found, key, min, max);
}

}  // namespace transient
