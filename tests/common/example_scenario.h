// An example scenario (examples/NAME.toml) edited for a test: the CLI tests of simulate and of
// report run the real examples with a deadline, a market or a region changed.
#pragma once

#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace transient::testing {

// Writes examples/NAME.toml to `path` with the first `from` of each edit replaced by its `to`;
// false (and a test failure naming it) where the example has no `from`, and then writes nothing.
inline bool write_example_with(const std::string& name,
                               const std::vector<std::pair<std::string, std::string>>& edits,
                               const std::string& path) {
  std::ifstream in(std::string(TRANSIENT_SOURCE_DIR) + "/examples/" + name + ".toml");
  std::stringstream scenario;
  scenario << in.rdbuf();
  std::string text = scenario.str();
  for (const auto& [from, to] : edits) {
    const auto at = text.find(from);
    if (at == std::string::npos) {
      ADD_FAILURE() << name << ".toml has no " << from;
      return false;
    }
    text.replace(at, from.size(), to);
  }
  std::ofstream out(path);
  out << text;
  out.close();
  if (!out) ADD_FAILURE() << "could not write " << path;
  return static_cast<bool>(out);
}

}  // namespace transient::testing
