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

}  // namespace transient
