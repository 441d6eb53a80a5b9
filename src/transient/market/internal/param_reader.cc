#include "transient/market/internal/param_reader.h"

#include <cmath>
#include <limits>

#include "transient/core/bounds.h"
#include "transient/core/csv_table.h"
#include "transient/core/duration.h"
#include "transient/core/error.h"

namespace transient::market::internal {

ParamReader::ParamReader(std::string model, const ModelParams& params,
                         std::vector<std::string> accepted)
    : model_(std::move(model)), params_(params), accepted_(std::move(accepted)) {}

bool ParamReader::has(const std::string& key) const { return params_.values.count(key) > 0; }

std::string ParamReader::text(const std::string& key, const std::string& fallback) {
  used_.insert(key);
  const auto it = params_.values.find(key);
  return it == params_.values.end() ? fallback : it->second;
}

double ParamReader::duration_s(const std::string& key, double fallback, bool allow_never) {
  if (!has(key)) {
    used_.insert(key);
    return fallback;
  }
  const std::string value = text(key);
  if (allow_never && (value == "none" || value == "never")) {
    return std::numeric_limits<double>::infinity();
  }
  const auto seconds = parse_duration_s(value);
  if (seconds && *seconds <= bounds::kMaxDurationS) return *seconds;
  fail(key, "\"" + value + "\" is not a duration up to 30 days; accepted: a number of seconds " +
                "or a number with a unit ms, s, m, h, d, e.g. 90s, 1.5h, at most 30d" +
                (allow_never ? ", or none" : ""));
}

double ParamReader::number(const std::string& key, double fallback, double lo, double hi) {
  if (!has(key)) {
    used_.insert(key);
    return fallback;
  }
  const std::string value = text(key);
  const auto parsed = parse_number(value);
  if (!parsed || *parsed < lo || *parsed > hi) {
    fail(key, "\"" + value + "\" is not accepted; accepted: a number in [" + number_text(lo) +
                  ", " + number_text(hi) + "]");
  }
  return *parsed;
}

void ParamReader::fail(const std::string& key, const std::string& message) const {
  std::string what = "market model \"" + model_ + "\"";
  if (!key.empty()) what += ", parameter " + key;
  throw InputError(params_.file, params_.line, what + ": " + message);
}

void ParamReader::finish() const {
  for (const auto& [key, value] : params_.values) {
    if (used_.count(key)) continue;
    std::string names;
    for (const auto& name : accepted_) names += (names.empty() ? "" : ", ") + name;
    fail("", "unknown parameter \"" + key +
                 "\"; accepted: " + (names.empty() ? std::string("none") : names));
  }
}

}  // namespace transient::market::internal
