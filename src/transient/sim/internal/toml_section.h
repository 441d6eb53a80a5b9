// Checked, typed access to one table of a scenario file, with every error located at the line of
// the offending key and naming what is accepted. Keys not in the accepted list are rejected when
// the section is opened, so a misspelt key is an error rather than silently ignored.
#pragma once

#include <string>
#include <vector>

#include <toml++/toml.h>

namespace transient::sim::internal {

class TomlSection {
 public:
  // `table` may be null (an absent section: every key is absent). `name` is the section's name
  // in messages, e.g. "[job]". An empty `accepted` leaves the keys unchecked (a plug-in's table,
  // checked by its factory). REQUIRES: `table` outlives the section.
  TomlSection(const toml::table* table, std::string file, std::string name,
              std::vector<std::string> accepted);

  bool has(const std::string& key) const;
  int line(const std::string& key) const;  // the key's line, or the section's
  const toml::node* node(const std::string& key) const;

  std::string text(const std::string& key, const std::string& fallback) const;
  std::string require_text(const std::string& key) const;
  // A number in [lo, hi].
  double number(const std::string& key, double fallback, double lo, double hi) const;
  // A whole number in [lo, hi].
  int integer(const std::string& key, int fallback, int lo, int hi) const;
  // A duration: a string in parse_duration_s's forms ("90s", "1.5h") or a number of seconds.
  double duration_s(const std::string& key, double fallback) const;
  bool boolean(const std::string& key, bool fallback) const;

  [[noreturn]] void fail(const std::string& key, const std::string& message) const;
  const std::string& file() const { return file_; }
  const std::string& name() const { return name_; }
  int section_line() const { return line_; }

 private:
  const toml::table* table_;
  std::string file_;
  std::string name_;
  int line_ = 0;
};

}  // namespace transient::sim::internal
