#include "transient/sim/internal/toml_section.h"

#include <algorithm>
#include <cmath>

#include "transient/core/bounds.h"
#include "transient/core/duration.h"
#include "transient/core/error.h"
#include "transient/core/structured_input.h"
#include "transient/core/text.h"

namespace transient::sim::internal {
TomlSection::TomlSection(const toml::table* table, std::string file, std::string name,
                         std::vector<std::string> accepted)
    : table_(table), file_(std::move(file)), name_(std::move(name)) {
  if (!table_) return;
  line_ = toml_line(*table_);
  if (accepted.empty()) return;
  for (const auto& [key, value] : *table_) {
    const std::string k(key.str());
    if (std::find(accepted.begin(), accepted.end(), k) == accepted.end()) {
      throw InputError(file_, toml_line(value),
                       "unknown key \"" + k + "\" in " + name_ + "; accepted: " + join(accepted));
    }
  }
}

bool TomlSection::has(const std::string& key) const {
  return table_ && table_->get(key) != nullptr;
}

const toml::node* TomlSection::node(const std::string& key) const {
  return table_ ? table_->get(key) : nullptr;
}

int TomlSection::line(const std::string& key) const {
  const toml::node* n = node(key);
  return n ? toml_line(*n) : line_;
}

void TomlSection::fail(const std::string& key, const std::string& message) const {
  throw InputError(file_, line(key), name_ + (key.empty() ? "" : " " + key) + ": " + message);
}

std::string TomlSection::text(const std::string& key, const std::string& fallback) const {
  const toml::node* n = node(key);
  if (!n) return fallback;
  if (const auto* s = n->as_string()) return s->get();
  fail(key, "expected a string in quotes");
}

std::string TomlSection::require_text(const std::string& key) const {
  if (!has(key)) fail(key, "missing; it is required");
  return text(key, "");
}

double TomlSection::number(const std::string& key, double fallback, double lo, double hi) const {
  const toml::node* n = node(key);
  if (!n) return fallback;
  double value = 0.0;
  if (const auto* i = n->as_integer()) {
    value = static_cast<double>(i->get());
  } else if (const auto* f = n->as_floating_point()) {
    value = f->get();
  } else {
    fail(key, "expected a number; accepted: a number in [" + number_text(lo) + ", " +
                  number_text(hi) + "]");
  }
  if (!std::isfinite(value) || value < lo || value > hi) {
    fail(key, number_text(value) + " is out of range; accepted: a number in [" + number_text(lo) +
                  ", " + number_text(hi) + "]");
  }
  return value;
}

int TomlSection::integer(const std::string& key, int fallback, int lo, int hi) const {
  const toml::node* n = node(key);
  if (!n) return fallback;
  const auto* i = n->as_integer();
  if (!i || i->get() < lo || i->get() > hi) {
    fail(key,
         "accepted: a whole number in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  return static_cast<int>(i->get());
}

double TomlSection::duration_s(const std::string& key, double fallback) const {
  const toml::node* n = node(key);
  if (!n) return fallback;
  if (const auto* s = n->as_string()) {
    const auto seconds = parse_duration_s(s->get());
    if (seconds && *seconds <= bounds::kMaxDurationS) return *seconds;
    fail(key, "\"" + s->get() +
                  "\" is not a duration up to 30 days; accepted: e.g. \"90s\", \"5m\", "
                  "\"1.5h\", \"1h30m\", \"2d\", or a number of seconds from 0 to 2592000");
  }
  return number(key, fallback, 0.0, bounds::kMaxDurationS);
}

bool TomlSection::boolean(const std::string& key, bool fallback) const {
  const toml::node* n = node(key);
  if (!n) return fallback;
  if (const auto* b = n->as_boolean()) return b->get();
  fail(key, "accepted: true or false");
}

}  // namespace transient::sim::internal
