// One shape for every plug-in point of the project (revocation models, throughput models,
// recovery models, replacement and market policies, built-in catalogs, the trainer's models): a
// registry of a kind of plug-in holds its entries in a stable order, each a PluginInfo (the name,
// one line for people, the parameters it accepts) and a factory; an unknown name is an InputError
// listing the valid ones, never an abort (simgrid's model registries are the example). Each part
// keeps one registry per plug-in point in the file of its implementations and answers
// `list`/`--help` from infos().
//
// Immutable once built; safe to share between threads.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "transient/core/error.h"

namespace transient {

struct PluginInfo {
  std::string name;                 // registry name, e.g. "greedy"
  std::string description;          // one line for people
  std::vector<std::string> params;  // "name=accepted values (default)" lines, for list/--help
};

// A plug-in's parameters as text, as a user wrote them, e.g. {"gpu": "K80"} or
// {"file": "us-west-2a_k80_1", "offset": "2h"}: the one parameters type of every plug-in point.
struct PluginParams {
  std::map<std::string, std::string> values;  // parameter name -> value as text
  std::string file;      // where the parameters were written, for messages; empty for flags
  int line = 0;          // line of the parameters in `file` (0 = unknown)
  std::string base_dir;  // relative file names are resolved here (a scenario's directory)
};

template <typename Factory>
class Registry {
 public:
  struct Entry {
    PluginInfo info;
    Factory create;
  };

  // `kind` names the plug-ins in messages, e.g. "market policy".
  Registry(std::string kind, std::vector<Entry> entries)
      : kind_(std::move(kind)), entries_(std::move(entries)) {
    for (const auto& entry : entries_) infos_.push_back(entry.info);
  }

  // Every plug-in, in the registry's order.
  const std::vector<PluginInfo>& infos() const { return infos_; }

  // The entry called `name`, or nullptr (for a caller that accepts more than names, e.g. files).
  const Entry* find(const std::string& name) const {
    for (const auto& entry : entries_) {
      if (entry.info.name == name) return &entry;
    }
    return nullptr;
  }

  // The names, "a, b, c", for messages.
  std::string names() const {
    std::string valid;
    for (const auto& entry : entries_) valid += (valid.empty() ? "" : ", ") + entry.info.name;
    return valid;
  }

  // The entry called `name`. Throws InputError("unknown KIND \"NAME\"; accepted: a, b, c"),
  // located at `file`:`line` when given, for any other name.
  const Entry& at(const std::string& name, const std::string& file = "", int line = 0) const {
    if (const Entry* entry = find(name)) return *entry;
    throw InputError(file, line, "unknown " + kind_ + " \"" + name + "\"; accepted: " + names());
  }

 private:
  std::string kind_;
  std::vector<Entry> entries_;
  std::vector<PluginInfo> infos_;
};

// The registry of a plug-in point whose implementations are built with no arguments: each entry
// makes a new Impl behind the interface Base.
template <typename Base>
using NoArgumentRegistry = Registry<std::unique_ptr<Base> (*)()>;

// The entry of `Impl` under `name`, described by Impl's own describe().
template <typename Base, typename Impl>
typename NoArgumentRegistry<Base>::Entry no_argument_entry(const char* name) {
  return {{name, Impl().describe(), {}},
          []() -> std::unique_ptr<Base> { return std::make_unique<Impl>(); }};
}

}  // namespace transient
