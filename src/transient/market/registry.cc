#include "transient/market/registry.h"

#include <filesystem>
#include <functional>
#include <sstream>

#include "transient/core/error.h"
#include "transient/core/structured_input.h"
#include "transient/market/data_dir.h"
#include "transient/market/internal/param_reader.h"
#include "transient/market/lifetime_model.h"

namespace transient::market {
namespace {

constexpr double kGceCapS = 24.0 * 3600.0;

using Factory =
    std::function<std::unique_ptr<RevocationModel>(internal::ParamReader&, const ModelContext&)>;

struct Entry {
  ModelInfo info;
  Factory create;
};

std::vector<std::string> names_of(const std::vector<std::string>& params) {
  std::vector<std::string> names;
  for (const auto& param : params) names.push_back(param.substr(0, param.find('=')));
  return names;
}

std::unique_ptr<RevocationModel> create_lifetime(internal::ParamReader& params,
                                                 const ModelContext& context) {
  const double cap_s = params.duration_s("cap", kGceCapS, /*allow_never=*/true);
  if (params.has("cdf")) {
    if (params.has("gpu") || params.has("zone")) {
      params.fail("cdf", "gpu and zone select rows of the gce-2019 data; a cdf file is used whole");
    }
    std::string cdf = params.text("cdf");
    params.finish();
    if (std::filesystem::path(cdf).extension().empty()) cdf += ".txt";
    std::error_code error;
    const std::string path =
        std::filesystem::is_regular_file(cdf, error)
            ? cdf
            : require_data_file(context.data_dir, "spot-traces/gcp-preemptible-lifetimes/" + cdf);
    return LifetimeModel::from_cdf_file(path, cap_s);
  }
  const std::string gpu = params.text("gpu");
  const std::string zone = params.text("zone");
  params.finish();
  const std::string path = require_data_file(context.data_dir, "gce-2019/lifetimes_2019.csv");
  return LifetimeModel::fit_gce_2019(path, gpu == "any" ? "" : gpu, zone == "any" ? "" : zone,
                                     cap_s);
}

const std::vector<Entry>& entries() {
  static const std::vector<Entry> kEntries = {
      {{"lifetime",
        "empirical lifetimes of GCE preemptible servers (2019 GPU measurements or scispot CDFs), "
        "capped at 24 h; always available",
        {"gpu=K80|P100|V100|any (default any; gce-2019 data)",
         "zone=a zone of the gce-2019 data, e.g. us-east1-c, or any (default any)",
         "cdf=a file of spot-traces/gcp-preemptible-lifetimes, e.g. All_data (instead of gpu/zone)",
         "cap=the longest lifetime, a duration or none (default 24h)"}},
       create_lifetime},
  };
  return kEntries;
}

}  // namespace

const std::vector<ModelInfo>& revocation_models() {
  static const std::vector<ModelInfo> kInfos = [] {
    std::vector<ModelInfo> infos;
    for (const Entry& entry : entries()) infos.push_back(entry.info);
    return infos;
  }();
  return kInfos;
}

std::unique_ptr<RevocationModel> create_revocation_model(const std::string& name,
                                                         const ModelParams& params,
                                                         const ModelContext& context) {
  for (const Entry& entry : entries()) {
    if (entry.info.name != name) continue;
    internal::ParamReader reader(name, params, names_of(entry.info.params));
    return entry.create(reader, context);
  }
  std::string names;
  for (const Entry& entry : entries()) names += (names.empty() ? "" : ", ") + entry.info.name;
  throw InputError(params.file, params.line,
                   "unknown market model \"" + name + "\"; accepted: " + names);
}

ModelParams params_from_toml(const toml::table& table, const std::string& file,
                             const std::vector<std::string>& skip) {
  ModelParams params;
  params.file = file;
  params.line = toml_line(table);
  for (const auto& [key, node] : table) {
    const std::string name(key.str());
    bool skipped = false;
    for (const auto& s : skip) skipped = skipped || s == name;
    if (skipped) continue;
    std::ostringstream text;
    if (auto value = node.value_exact<std::string>()) {
      text << *value;
    } else if (auto integer = node.value_exact<int64_t>()) {
      text << *integer;
    } else if (auto real = node.value_exact<double>()) {
      text.precision(17);
      text << *real;
    } else if (auto flag = node.value_exact<bool>()) {
      text << (*flag ? "true" : "false");
    } else {
      throw InputError(file, toml_line(node),
                       "market parameter " + name +
                           ": accepted: a string, a number or a boolean, not a table or an array");
    }
    params.values[name] = text.str();
  }
  return params;
}

}  // namespace transient::market
