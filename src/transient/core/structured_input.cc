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
  }
}

nlohmann::json load_json_file(const std::string& path) { return parse_json(read_file(path), path); }

}  // namespace transient
