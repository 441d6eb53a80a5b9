// Reading TOML and JSON input files with errors that name the file and the line.
//
// toml++ and nlohmann-json do the parsing; these helpers turn their errors into InputError and
// give the line of any TOML node, so that a later check ("unknown policy") can point at it.
#pragma once

#include <toml++/toml.h>
#include <nlohmann/json.hpp>
#include <string>

namespace transient {

// Parses the TOML file at `path`; throws InputError("path:line: <parser's reason>").
toml::table load_toml_file(const std::string& path);
// Parses TOML text; `name` stands for the path in messages.
toml::table parse_toml(const std::string& text, const std::string& name);

// The 1-based line where `node` starts in its file (0 if unknown).
int toml_line(const toml::node& node);

// Parses the JSON file at `path`; throws InputError("path:line: <parser's reason>").
nlohmann::json load_json_file(const std::string& path);
// Parses JSON text; `name` stands for the path in messages.
nlohmann::json parse_json(const std::string& text, const std::string& name);

// The string at `key` of the JSON object `object`, or `fallback` when the key is absent. Throws
// InputError("<where>: \"key\" must be a string") when it is there but not a string (nlohmann's
// value() would throw its own type_error instead).
std::string json_text(const nlohmann::json& object, const std::string& key,
                      const std::string& fallback, const std::string& where);

}  // namespace transient
