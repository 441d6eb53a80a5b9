// CLI11 validators shared by the subcommands, with messages that say what is accepted.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <charconv>
#include <cstdint>
#include <string>
#include <system_error>

#include "transient/core/bounds.h"
#include "transient/core/csv_table.h"
#include "transient/core/text.h"
#include "transient/train/option_names.h"

namespace transient::cli {

// A seed: decimal digits of a whole number from 0 to 2^64 - 1, read as one (a double loses the
// last digits of a large seed, and CLI11 would wrap "-1" around and read "010" as octal). It is
// handed on as its digits, so add it with ->transform().
inline const CLI::Validator kSeed(
    [](std::string& text) {
      std::uint64_t value = 0;
      const char* end = text.data() + text.size();
      const auto [at, error] = std::from_chars(text.data(), end, value);
      if (text.empty() || error != std::errc() || at != end) {
        return "\"" + text +
               "\"; accepted: a whole number from 0 to 2^64 - 1 (18446744073709551615)";
      }
      text = std::to_string(value);
      return std::string();
    },
    "SEED");

// A path the job's records can name: UTF-8 (job.json, the journal and the workers' messages are
// JSON, which holds nothing else; a path of other bytes stopped the job with an internal failure
// once some of its records were written).
inline const CLI::Validator kUtf8Path(
    [](const std::string& text) {
      try {
        static_cast<void>(nlohmann::json(text).dump());
        return std::string();
      } catch (const nlohmann::json::type_error&) {
        return "\"" + printable(text) +
               "\" is not UTF-8; accepted: a path of UTF-8 characters (the job's records are "
               "JSON, which holds no other)";
      }
    },
    "PATH");

// A whole number of steps >= 1 (at most 1e12).
inline const CLI::Validator kSteps(
    [](std::string& text) {
      const auto value = parse_number(text);
      return value && *value >= 1.0 && *value <= 1e12 &&
                     *value == static_cast<double>(static_cast<long long>(*value))
                 ? std::string()
                 : "\"" + text + "\"; accepted: a whole number of steps from 1 to 1e12";
    },
    "STEPS");

// A number within `bound` (core/bounds.h), checked where the flag enters; the message says the
// bound. A whole number may be written as the bound is ("1e5"): it is handed on as digits, which
// an integer option can read; so add it with ->transform(), which lets a validator rewrite the
// text (->check() would not).
inline CLI::Validator within(const Bound& bound) {
  return CLI::Validator(
      [bound](std::string& text) {
        const auto value = parse_number(text);
        if (!value || !bound.contains(*value)) {
          return "\"" + text + "\"; accepted: " + bound.accepted();
        }
        if (bound.whole) text = std::to_string(static_cast<long long>(*value));
        return std::string();
      },
      "");
}

// One of the names of an option enum E (train/option_names.h). It is handed on as the value's
// number, which an option bound to an E reads (add_named_option below).
template <typename E>
CLI::Validator one_of() {
  return CLI::Validator(
      [](std::string& text) {
        const auto value = train::parse_name<E>(text);
        if (!value) return "\"" + text + "\"; accepted: " + train::accepted_names<E>();
        text = std::to_string(static_cast<int>(*value));
        return std::string();
      },
      "");
}

// Adds `flag`, bound to `value`, taking one of E's names (one_of), its default shown by name.
template <typename E>
CLI::Option* add_named_option(CLI::App& app, const std::string& flag, E& value,
                              const std::string& description) {
  return app.add_option(flag, value, description)
      ->transform(one_of<E>())
      ->type_name("NAME")
      ->default_str(train::name_of(value));
}

}  // namespace transient::cli
