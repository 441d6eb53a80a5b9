#include "transient/market/registry.h"

#include <cmath>
#include <filesystem>
#include <functional>
#include <sstream>

#include "transient/core/duration.h"
#include "transient/core/error.h"
#include "transient/core/registry.h"
#include "transient/core/structured_input.h"
#include "transient/market/availability_trace_model.h"
#include "transient/market/data_dir.h"
#include "transient/market/exponential_model.h"
#include "transient/market/hour_of_day_model.h"
#include "transient/market/internal/param_reader.h"
#include "transient/market/internal/with_availability.h"
#include "transient/market/lifetime_model.h"
#include "transient/market/node_trace_model.h"

namespace transient::market {
namespace {

constexpr double kGceCapS = 24.0 * 3600.0;

using Factory =
    std::function<std::unique_ptr<RevocationModel>(internal::ParamReader&, const ModelContext&)>;

using Entry = Registry<Factory>::Entry;

std::vector<std::string> names_of(const std::vector<std::string>& params) {
  std::vector<std::string> names;
  for (const auto& param : params) names.push_back(param.substr(0, param.find('=')));
  return names;
}

// The cloud's cap on a server's life (`cap`): a positive duration, or never.
double read_cap_s(internal::ParamReader& params, double default_s) {
  const double cap_s = params.duration_s("cap", default_s, /*allow_never=*/true);
  // Servers capped at less than a minute would be requested without end.
  if (cap_s < 60.0) params.fail("cap", "accepted: a duration of 1m or more (e.g. 24h), or never");
  return cap_s;
}

std::unique_ptr<RevocationModel> create_lifetime(internal::ParamReader& params,
                                                 const ModelContext& context) {
  const double cap_s = read_cap_s(params, kGceCapS);
  if (params.has("cdf")) {
    if (params.has("gpu") || params.has("zone")) {
      params.fail("cdf", "gpu and zone select rows of the gce-2019 data; a cdf file is used whole");
    }
    std::string cdf = params.text("cdf");
    params.finish();
    if (std::filesystem::path(cdf).extension().empty()) cdf += ".txt";
    namespace fs = std::filesystem;
    std::error_code error;
    const fs::path given = fs::path(cdf).is_absolute() || context.base_dir.empty()
                               ? fs::path(cdf)
                               : fs::path(context.base_dir) / cdf;
    const std::string path =
        fs::is_regular_file(given, error)
            ? given.string()
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

std::unique_ptr<RevocationModel> create_exponential(internal::ParamReader& params,
                                                    const ModelContext& /*context*/) {
  const double cap_s = read_cap_s(params, kNever);
  const int given = params.has("mean") + params.has("rate_per_h") + params.has("bucket");
  if (given != 1) {
    params.fail("",
                "give exactly one of mean (a duration), rate_per_h (revocations per hour) "
                "or bucket (<5%, 5-10%, 10-15%, 15-20%, >20%)");
  }
  double mean_s = 0.0;
  std::ostringstream description;
  description << "exponential lifetimes (constant hazard), ";
  if (params.has("mean")) {
    mean_s = params.duration_s("mean", 0.0);
    if (mean_s < 1.0) params.fail("mean", "accepted: a duration of 1s or more");
    description << "mean " << mean_s / 3600.0 << " h";
  } else if (params.has("rate_per_h")) {
    // At most one an hour-second: a server lives a second on average.
    const double rate = params.number("rate_per_h", 0.0, 1e-12, 3600.0);
    mean_s = 3600.0 / rate;
    description << rate << " revocations per hour";
  } else {
    const std::string bucket = params.text("bucket");
    const auto mean = ExponentialModel::mean_for_bucket_s(bucket);
    if (!mean) {
      params.fail("bucket", "\"" + bucket + "\"; accepted: <5%, 5-10%, 10-15%, 15-20%, >20%");
    }
    mean_s = *mean;
    description << "AWS interruption bucket " << bucket << " of instances per month (mean "
                << std::round(mean_s / 3600.0) << " h)";
  }
  params.finish();
  description << (std::isfinite(cap_s) ? ", capped" : ", no cap");
  return std::make_unique<ExponentialModel>(mean_s, cap_s, description.str());
}

// The exposure estimate of the mean lifetime from the gce-2019 lifetimes of `gpu` (empty = all):
// hours lived / servers revoked before the cap.
double gce_mean_lifetime_s(const std::string& path, const std::string& gpu, double cap_s) {
  const auto fitted = LifetimeModel::fit_gce_2019(path, gpu, "", cap_s);
  const auto& cdf = fitted->distribution();
  const double revoked = 1.0 - cdf.share_at_cap();
  if (revoked <= 0.0) throw InputError(path, 0, "no revocations to fit a mean lifetime on");
  return cdf.mean_s() / revoked;
}

std::unique_ptr<RevocationModel> create_hour_of_day(internal::ParamReader& params,
                                                    const ModelContext& context) {
  std::string gpu = params.text("gpu");
  if (gpu == "any") gpu.clear();
  const double cap_s = read_cap_s(params, kGceCapS);
  const double start_hour = params.number("start_hour", -1.0, 0.0, 24.0);
  const bool has_mean = params.has("mean");
  double mean_s = params.duration_s("mean", 0.0);
  if (has_mean && mean_s < 1.0) params.fail("mean", "accepted: a duration of 1s or more");
  params.finish();
  const auto weights = HourOfDayModel::read_weights(
      require_data_file(context.data_dir, "cmdare/figures/revocations_by_hour_of_day.csv"), gpu);
  if (!has_mean) {
    mean_s = gce_mean_lifetime_s(require_data_file(context.data_dir, "gce-2019/lifetimes_2019.csv"),
                                 gpu, kGceCapS);
  }
  std::ostringstream description;
  description.precision(3);
  description << "hazard by hour of day from CM-DARE's " << (gpu.empty() ? "GPU" : gpu)
              << " revocation counts, mean lifetime " << mean_s / 3600.0 << " h"
              << (has_mean ? "" : " (fitted on gce-2019)")
              << (std::isfinite(cap_s) ? ", capped" : ", no cap");
  return std::make_unique<HourOfDayModel>(weights, mean_s, cap_s, start_hour, description.str());
}

// A trace file: as given (absolute, or relative to base_dir), else under the data directory,
// where the spot-traces folders are searched and ".json" / "-trace.csv" may be left out.
std::string find_trace(const std::string& file, internal::ParamReader& params,
                       const ModelContext& context, const std::string& key = "file") {
  namespace fs = std::filesystem;
  std::error_code error;
  const fs::path given(file);
  std::vector<fs::path> candidates;
  candidates.push_back(
      given.is_absolute() || context.base_dir.empty() ? given : fs::path(context.base_dir) / given);
  const fs::path data(context.data_dir);
  for (const fs::path& dir : {data, data / "spot-traces/aws-availability-2022-10",
                              data / "spot-traces/aws-node-events"}) {
    candidates.push_back(dir / given);
    candidates.push_back(dir / (file + ".json"));
    candidates.push_back(dir / (file + "-trace.csv"));
  }
  for (const auto& candidate : candidates) {
    if (fs::is_regular_file(candidate, error)) return candidate.string();
  }
  params.fail(key, "\"" + file + "\" not found as given nor under " + context.data_dir +
                       "/spot-traces (set the data directory with --data-dir DIR); accepted: "
                       "a SkyPilot availability JSON (e.g. us-west-2a_k80_1) or a node event "
                       "CSV (e.g. p3)");
}

// A trace's `offset` (or `availability_offset`): inside the trace at `path`, `duration_s` long.
void require_offset_inside(const internal::ParamReader& params, const std::string& key,
                           double offset_s, double duration_s, const std::string& path) {
  if (offset_s < duration_s) return;
  params.fail(key, format_duration(offset_s) + " is beyond the end of the trace " +
                       std::filesystem::path(path).filename().string() + " (" +
                       format_duration(duration_s) + " long); accepted: an offset inside it, or " +
                       "random");
}

std::unique_ptr<RevocationModel> create_trace(internal::ParamReader& params,
                                              const ModelContext& context) {
  if (!params.has("file")) {
    params.fail("file",
                "missing; accepted: a SkyPilot availability JSON (e.g. us-west-2a_k80_1) "
                "or a node event CSV (e.g. p3)");
  }
  const std::string file = params.text("file");
  const std::string offset = params.text("offset", "random");
  double offset_s = -1.0;
  if (offset != "random") offset_s = params.duration_s("offset", 0.0);
  const double cap_s = read_cap_s(params, kNever);
  params.finish();
  const std::string path = find_trace(file, params, context);
  // Read from a random offset, then placed at the one given, checked here so that an offset past
  // the end is refused at the parameter (a scenario's line, --market-param), not in the trace.
  if (std::filesystem::path(path).extension() == ".json") {
    auto model = AvailabilityTraceModel::read(path, -1.0, cap_s);
    if (offset_s < 0.0) return model;
    require_offset_inside(params, "offset", offset_s, model->duration_s(), path);
    return model->with_offset(offset_s);
  }
  auto model = NodeTraceModel::read(path, -1.0, cap_s);
  if (offset_s < 0.0) return model;
  if (model->duration_s() > 0.0) {
    require_offset_inside(params, "offset", offset_s, model->duration_s(), path);
  }
  return model->with_offset(offset_s);
}

const Registry<Factory>& registry() {
  static const Registry<Factory> kRegistry(
      "market model",
      {
          {{"lifetime",
            "empirical lifetimes of GCE preemptible servers (2019 GPU measurements or scispot "
            "CDFs), "
            "capped at 24 h; always available unless given an availability trace",
            {"gpu=K80|P100|V100|any (default any; gce-2019 data)",
             "zone=a zone of the gce-2019 data, e.g. us-east1-c, or any (default any)",
             "cdf=a file of spot-traces/gcp-preemptible-lifetimes, e.g. All_data (instead of "
             "gpu/zone)",
             "availability=a SkyPilot availability trace for when servers can be had (default: "
             "always)",
             "availability_offset=where runs start in it, a duration or random (default random)",
             "cap=the longest lifetime, a duration or none (default 24h)"}},
           create_lifetime},
          {{"hour-of-day",
            "hazard by hour of day from CM-DARE's revocation counts, scaled to a mean lifetime, "
            "capped at 24 h; always available unless given an availability trace",
            {"gpu=K80|P100|V100|any (default any)",
             "mean=mean lifetime before the cap, a duration (default: fitted on gce-2019)",
             "start_hour=hour of day of a fresh run for sampling, 0..24 (default random)",
             "availability=a SkyPilot availability trace for when servers can be had (default: "
             "always)",
             "availability_offset=where runs start in it, a duration or random (default random)",
             "cap=the longest lifetime, a duration or none (default 24h)"}},
           create_hour_of_day},
          {{"exponential",
            "constant hazard (memoryless lifetimes) from a mean, a rate or an AWS interruption "
            "bucket; always available unless given an availability trace",
            {"mean=mean lifetime, a duration", "rate_per_h=revocations per server-hour",
             "bucket=AWS interruption frequency per month: <5%|5-10%|10-15%|15-20%|>20%",
             "availability=a SkyPilot availability trace for when servers can be had (default: "
             "always)",
             "availability_offset=where runs start in it, a duration or random (default random)",
             "cap=the longest lifetime, a duration or none (default none)"}},
           create_exponential},
          {{"trace",
            "replay of a real spot trace: SkyPilot availability ticks (JSON) or Bamboo node "
            "add/remove events (CSV); availability from the same trace",
            {"file=trace file or name, e.g. us-west-2a_k80_1, p3, or a path",
             "offset=where runs start in the trace, a duration or random (default random)",
             "cap=the longest lifetime, a duration or none (default none)"}},
           create_trace},
      });
  return kRegistry;
}

}  // namespace

const std::vector<PluginInfo>& revocation_models() { return registry().infos(); }

std::unique_ptr<RevocationModel> create_revocation_model(const std::string& name,
                                                         const ModelParams& params,
                                                         const ModelContext& context) {
  {
    const Entry& entry = registry().at(name, params.file, params.line);
    // `availability` and `availability_offset` are handled here for every model but trace
    // (whose availability is its own trace); the model's factory sees the other parameters.
    ModelParams own = params;
    ModelParams overlay;
    overlay.file = params.file;
    overlay.line = params.line;
    if (name != "trace") {
      for (const char* key : {"availability", "availability_offset"}) {
        const auto it = own.values.find(key);
        if (it == own.values.end()) continue;
        overlay.values[key] = it->second;
        own.values.erase(it);
      }
    }
    internal::ParamReader reader(name, own, names_of(entry.info.params));
    auto model = entry.create(reader, context);
    if (overlay.values.empty()) return model;
    internal::ParamReader overlay_reader(name, overlay, names_of(entry.info.params));
    if (!overlay_reader.has("availability")) {
      overlay_reader.fail("availability_offset", "needs an availability trace (availability=)");
    }
    const std::string file = overlay_reader.text("availability");
    double offset_s = -1.0;
    if (overlay_reader.text("availability_offset", "random") != "random") {
      offset_s = overlay_reader.duration_s("availability_offset", 0.0);
    }
    const std::string path = find_trace(file, overlay_reader, context, "availability");
    if (std::filesystem::path(path).extension() != ".json") {
      overlay_reader.fail("availability", "\"" + file +
                                              "\" is not an availability trace; "
                                              "accepted: a SkyPilot availability JSON, e.g. "
                                              "us-west-2a_k80_1");
    }
    auto availability = AvailabilityTraceModel::read(path, -1.0, kNever);
    if (offset_s >= 0.0) {
      require_offset_inside(overlay_reader, "availability_offset", offset_s,
                            availability->duration_s(), path);
      availability = availability->with_offset(offset_s);
    }
    return std::make_unique<internal::WithAvailability>(std::move(model), std::move(availability));
  }
}

ModelParams params_from_words(const std::vector<std::string>& words, const std::string& what) {
  ModelParams params;
  for (const std::string& word : words) {
    const auto eq = word.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw InputError(what + " \"" + word +
                       "\": accepted: key=value, e.g. gpu=K80 or offset=2h (see `transient "
                       "market list`)");
    }
    const std::string key = word.substr(0, eq);
    if (const auto given = params.values.find(key); given != params.values.end()) {
      // The last would win and the first be ignored.
      throw InputError(what + " \"" + word + "\": " + key + " is given twice (first " + key + "=" +
                       given->second + "); accepted: each parameter once");
    }
    params.values[key] = word.substr(eq + 1);
  }
  return params;
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
