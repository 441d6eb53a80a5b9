// Whole numbers read from the JSON the trainer's processes exchange and keep (protocol messages,
// the job's config, the journal). nlohmann's get<std::int64_t>() converts a float such as 1e300
// without a check, which is undefined behaviour; these read only a JSON integer that fits, and
// throw nlohmann's own type_error (302) otherwise, as get<>() does for a string, so that every
// caller's handling of a malformed field stays the same. Torch-free.
#pragma once

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

namespace transient::train {

// `value` (the field `key`) as a whole number from `min` to `max`.
inline std::int64_t whole_number(const nlohmann::json& value, const char* key,
                                 std::int64_t min = std::numeric_limits<std::int64_t>::min(),
                                 std::int64_t max = std::numeric_limits<std::int64_t>::max()) {
  bool fits = false;
  std::int64_t number = 0;
  if (value.is_number_unsigned()) {
    const auto unsigned_number = value.get<std::uint64_t>();
    fits = max >= 0 && unsigned_number <= static_cast<std::uint64_t>(max);
    number = fits ? static_cast<std::int64_t>(unsigned_number) : 0;
  } else if (value.is_number_integer()) {
    number = value.get<std::int64_t>();
    fits = number >= min && number <= max;
  }
  if (!fits) {
    std::string shown = value.dump();
    if (shown.size() > 32) shown = shown.substr(0, 32) + "...";
    throw nlohmann::json::type_error::create(
        302,
        std::string("\"") + key + "\" must be a whole number from " + std::to_string(min) + " to " +
            std::to_string(max) + ", not " + shown,
        &value);
  }
  return number;
}

// `value` (the field `key`) as a whole number from 0 to `max`, for the unsigned fields (a seed).
inline std::uint64_t whole_unsigned(const nlohmann::json& value, const char* key,
                                    std::uint64_t max = std::numeric_limits<std::uint64_t>::max()) {
  const bool fits =
      (value.is_number_unsigned() && value.get<std::uint64_t>() <= max) ||
      (value.is_number_integer() && !value.is_number_unsigned() && value.get<std::int64_t>() >= 0 &&
       static_cast<std::uint64_t>(value.get<std::int64_t>()) <= max);
  if (!fits) {
    std::string shown = value.dump();
    if (shown.size() > 32) shown = shown.substr(0, 32) + "...";
    throw nlohmann::json::type_error::create(302,
                                             std::string("\"") + key +
                                                 "\" must be a whole number from 0 to " +
                                                 std::to_string(max) + ", not " + shown,
                                             &value);
  }
  return value.is_number_unsigned() ? value.get<std::uint64_t>()
                                    : static_cast<std::uint64_t>(value.get<std::int64_t>());
}

// The whole number at `key` of `object`; a missing key throws as at() does.
inline std::int64_t integer_at(const nlohmann::json& object, const char* key) {
  return whole_number(object.at(key), key);
}

// The whole number at `key` of `object`, or `absent` when there is no such key.
inline std::int64_t integer_or(const nlohmann::json& object, const char* key, std::int64_t absent) {
  const auto found = object.find(key);
  return found == object.end() ? absent : whole_number(*found, key);
}

}  // namespace transient::train
