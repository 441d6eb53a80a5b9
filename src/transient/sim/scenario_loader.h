// Reads a scenario file (TOML; the format is docs/scenarios.md) into a Scenario, building its
// models through the perf and market registries. Every bad field is one InputError naming the
// file, the line and what is accepted.
#pragma once

#include <string>

#include "transient/sim/scenario.h"

namespace transient::sim {

struct ScenarioLoadOptions {
  // The shared data directory (market/data_dir.h); empty = resolve_data_dir's defaults.
  std::string data_dir;
};

Scenario load_scenario(const std::string& path, const ScenarioLoadOptions& options = {});

// The same from TOML text; `name` stands for the path in messages and relative files are looked
// up in `base_dir`.
Scenario parse_scenario(const std::string& text, const std::string& name,
                        const std::string& base_dir, const ScenarioLoadOptions& options = {});

}  // namespace transient::sim
