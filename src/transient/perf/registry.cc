#include "transient/perf/registry.h"

#include <filesystem>

#include "transient/core/error.h"
#include "transient/perf/table_throughput_model.h"

namespace transient::perf {
namespace {

[[noreturn]] void fail(const ThroughputParams& params, const std::string& message) {
  if (params.file.empty()) throw InputError(message);
  throw InputError(params.file, params.line, message);
}

std::unique_ptr<ThroughputModel> create_table(const ThroughputParams& params) {
  for (const auto& [key, value] : params.values) {
    if (key != "workload" && key != "table") {
      fail(params, "unknown parameter \"" + key +
                       "\" of the table throughput model; accepted: workload, table");
    }
  }
  const auto workload = params.values.find("workload");
  const auto table = params.values.find("table");
  if ((workload == params.values.end()) == (table == params.values.end())) {
    fail(params,
         "the table throughput model needs exactly one of workload (a CM-DARE workload: "
         "resnet-15, resnet-32, shake-shake-small, shake-shake-big) or table (a CSV file "
         "gpu,workers,steps_per_s)");
  }
  try {
    if (workload != params.values.end()) {
      return std::make_unique<TableThroughputModel>(TableThroughputModel::cmdare(workload->second));
    }
    std::filesystem::path path = table->second;
    if (path.is_relative() && !params.base_dir.empty()) path = params.base_dir / path;
    return std::make_unique<TableThroughputModel>(TableThroughputModel::from_csv(path.string()));
  } catch (const InputError& error) {
    if (!error.file().empty()) throw;
    fail(params, error.message());
  }
}

struct Entry {
  ThroughputModelInfo info;
  std::unique_ptr<ThroughputModel> (*create)(const ThroughputParams&);
};

const std::vector<Entry>& entries() {
  static const std::vector<Entry> all = {
      {{"table",
        "measured steps/s by GPU and worker count (CM-DARE's cluster scaling or a CSV table), "
        "interpolated",
        {"workload=resnet-15|resnet-32|shake-shake-small|shake-shake-big",
         "table=CSV file with columns gpu,workers,steps_per_s (instead of workload)"}},
       &create_table},
  };
  return all;
}

}  // namespace

const std::vector<ThroughputModelInfo>& throughput_models() {
  static const std::vector<ThroughputModelInfo> infos = [] {
    std::vector<ThroughputModelInfo> out;
    for (const auto& entry : entries()) out.push_back(entry.info);
    return out;
  }();
  return infos;
}

std::unique_ptr<ThroughputModel> create_throughput_model(const std::string& name,
                                                         const ThroughputParams& params) {
  std::string valid;
  for (const auto& entry : entries()) {
    if (entry.info.name == name) return entry.create(params);
    valid += (valid.empty() ? "" : ", ") + entry.info.name;
  }
  fail(params, "unknown throughput model \"" + name + "\"; accepted: " + valid);
}

}  // namespace transient::perf
