// The registry of revocation models: their names, one-line descriptions and parameters, and the
// factory that builds one from a name and text parameters (a scenario's TOML table, CLI flags).
//
// Models read measured data (lifetimes, hazards, traces) from the shared data directory at
// construction; the built model is immutable and may be shared between threads. Every bad name,
// parameter or data file is an InputError that names where the parameter came from and what is
// accepted. Nothing here aborts.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <toml++/toml.h>

#include "transient/core/registry.h"
#include "transient/market/revocation_model.h"

namespace transient::market {

// A model's parameters as text, as a user wrote them, e.g. {"gpu": "K80", "zone": "us-east1-c"}
// or {"file": "us-west-2a_k80_1", "offset": "2h"}. Durations accept parse_duration_s's forms.
using ModelParams = PluginParams;

// Where models find their data.
struct ModelContext {
  // The shared data directory (see data_dir.h: resolve_data_dir).
  std::string data_dir;
  // Relative trace files are looked up here first (e.g. the scenario file's directory), then
  // under data_dir. Empty = the current directory.
  std::string base_dir;
};

// Every registered model, in a stable order.
const std::vector<PluginInfo>& revocation_models();

// Builds the model called `name` with `params`. Throws InputError for an unknown name (listing
// the valid ones), an unknown or bad parameter (listing what is accepted), or missing or bad data
// files (naming the path and the --data-dir flag).
std::unique_ptr<RevocationModel> create_revocation_model(const std::string& name,
                                                         const ModelParams& params,
                                                         const ModelContext& context);

// The parameters in a TOML table, e.g. a scenario's `[market]` table: every key except those in
// `skip` (typically {"model"}), with strings, numbers and booleans turned into text. Nested tables
// and arrays are an InputError at their line. `file` is used in messages.
ModelParams params_from_toml(const toml::table& table, const std::string& file,
                             const std::vector<std::string>& skip = {"model"});

// The parameters written as KEY=VALUE words on the command line, e.g. {"gpu=K80", "offset=2h"}.
// Throws InputError naming `what` (the flag, "market parameter") for a word that is not KEY=VALUE
// and for a KEY given twice (the last would win, the first be ignored).
ModelParams params_from_words(const std::vector<std::string>& words, const std::string& what);

}  // namespace transient::market
