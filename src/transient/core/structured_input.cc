#define TOML_IMPLEMENTATION
#include "transient/core/structured_input.h"

#include <algorithm>

#include "transient/core/atomic_file.h"
#include "transient/core/error.h"

namespace transient {

toml::table parse_toml(const std::string& text, const std::string& name) {
  try {
    return toml::parse(text, name);
  } catch (const toml::parse_error& error) {
    throw InputError(name, static_cast<int>(error.source().begin.line),
                     "invalid TOML: " + std::string(error.description()));
  }
}

toml::table load_toml_file(const std::string& path) { return parse_toml(read_file(path), path); }

int toml_line(const toml::node& node) { return static_cast<int>(node.source().begin.line); }

nlohmann::json parse_json(const std::string& text, const std::string& name) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& error) {
    const std::size_t end = std::min(error.byte, text.size());
    const int line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + end, '\n'));
    std::string reason = error.what();
    // nlohmann prefixes its own location ("[json.exception.parse_error.101] parse error at
    // line 1, column 2: "); keep only the reason, the location is ours.
    const auto colon = reason.find(": ");
    if (colon != std::string::npos) reason = reason.substr(colon + 2);
    throw InputError(name, line, "invalid JSON: " + reason);
  } catch (const nlohmann::json::out_of_range& error) {
    // A number beyond a double's range (1e400): nlohmann names the literal but no position,
    // so the line is that of the literal's first appearance.
    std::string literal = error.what();
    const auto open = literal.find('\'');
    const auto close = literal.rfind('\'');
    literal = open != std::string::npos && close > open ? literal.substr(open + 1, close - open - 1)
                                                        : std::string();
    const std::size_t at = literal.empty() ? std::string::npos : text.find(literal);
    const int line = at == std::string::npos
                         ? 0
                         : 1 + static_cast<int>(std::count(text.begin(), text.begin() + at, '\n'));
    throw InputError(name, line,
                     "the number " + (literal.empty() ? std::string("given") : literal) +
                         " is out of range; accepted: numbers of magnitude up to 1.7e308");
  }
}

nlohmann::json load_json_file(const std::string& path) { return parse_json(read_file(path), path); }

std::string json_text(const nlohmann::json& object, const std::string& key,
                      const std::string& fallback, const std::string& where) {
  if (!object.is_object()) return fallback;
  const auto found = object.find(key);
  if (found == object.end()) return fallback;
  if (!found->is_string()) throw InputError(where + ": \"" + key + "\" must be a string");
  return found->get<std::string>();
}

}  // namespace transient
