#include "transient/plan/scenario_writer.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "transient/core/error.h"
#include "transient/sim/scenario.h"

namespace transient::plan {
namespace {

// A TOML basic string.
std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned char>(c));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// Seconds as a duration the loader reads back exactly.
std::string seconds(double s) { return quoted(fmt::format("{}s", s)); }

bool same_type(const cloud::InstanceType& a, const cloud::InstanceType& b) {
  return a.name == b.name && a.gpu == b.gpu && a.gpus == b.gpus && a.gpu_tflops == b.gpu_tflops &&
         a.vcpus == b.vcpus && a.memory_gib == b.memory_gib && a.network_gbps == b.network_gbps &&
         a.on_demand_usd_per_h == b.on_demand_usd_per_h && a.spot_usd_per_h == b.spot_usd_per_h &&
         a.region == b.region && a.zone == b.zone;
}

// Whether the loader, given `type`'s name and zone, finds `type` among `rows`: the row of that
// name in that zone, or the first of that name when the zone is empty (cloud::Catalog::find).
bool catalog_row(const cloud::InstanceType& type, const std::vector<cloud::InstanceType>& rows) {
  for (const auto& row : rows) {
    if (row.name == type.name && (type.zone.empty() || row.zone == type.zone)) {
      return same_type(row, type);
    }
  }
  return false;
}

void write_instance_type(std::string& out, const cloud::InstanceType& t) {
  out += "\n[[instance_types]]\nname = " + quoted(t.name) + "\n";
  if (!t.gpu.empty()) out += "gpu = " + quoted(t.gpu) + "\n";
  out += fmt::format("gpus = {}\ngpu_tflops = {}\nvcpus = {}\nmemory_gib = {}\nnetwork_gbps = {}\n",
                     t.gpus, t.gpu_tflops, t.vcpus, t.memory_gib, t.network_gbps);
  out += fmt::format("on_demand_usd_per_h = {}\nspot_usd_per_h = {}\n", t.on_demand_usd_per_h,
                     t.spot_usd_per_h);
  if (!t.region.empty()) out += "region = " + quoted(t.region) + "\n";
  if (!t.zone.empty()) out += "zone = " + quoted(t.zone) + "\n";
}

// A group by its type's name; `zone` picks the catalog's row (a type of [[instance_types]] is
// found by its name alone).
void write_group(std::string& out, const std::string& table, const sim::ServerGroup& g,
                 bool in_catalog) {
  out += fmt::format("\n[[cluster.{}]]\ntype = {}\ncount = {}\nmarket = {}\n", table,
                     quoted(g.type.name), g.count, quoted(std::string(cloud::to_string(g.market))));
  if (in_catalog && !g.type.zone.empty()) out += "zone = " + quoted(g.type.zone) + "\n";
}

}  // namespace

std::string scenario_toml(const ScenarioFile& file) {
  if (!(file.total_steps > 0.0) || file.total_steps != std::floor(file.total_steps)) {
    throw InputError(fmt::format(
        "a scenario needs a whole number of steps, the plan has {}; accepted: --steps N",
        file.total_steps));
  }
  const RunPolicy& policy = file.policy;
  std::string out;
  for (std::size_t from = 0; from <= file.comment.size();) {
    const std::size_t end = std::min(file.comment.find('\n', from), file.comment.size());
    out += "# " + file.comment.substr(from, end - from) + "\n";
    from = end + 1;
  }
  out += "name = " + quoted(file.name) + "\n";

  out += fmt::format("\n[job]\nsteps = {:.0f}\n", file.total_steps);
  if (file.deadline_s != sim::kNoDeadline) out += "deadline = " + seconds(file.deadline_s) + "\n";
  // "Stop renting at $B" is a budget stop of the simulator (sim::Scenario::budget_usd).
  if (policy.stop_at_usd > 0.0) out += fmt::format("budget = {}\n", policy.stop_at_usd);

  out += "\n[throughput]\nmodel = " + quoted(file.models.throughput) + "\n";
  out += "architecture = " + quoted(std::string(perf::to_string(file.architecture))) + "\n";
  for (const auto& [key, value] : file.models.throughput_params) {
    // The throughput model's `model` parameter, a `transient fit` model file, is the scenario's
    // model_file (its `model` names the throughput model).
    out += (key == "model" ? "model_file" : key) + " = " + quoted(value) + "\n";
  }

  // Types the catalog lacks are defined in the file. The loader looks a name up in
  // [[instance_types]] before the catalog, so a name is one or the other, and one type.
  std::vector<cloud::InstanceType> defined;
  std::vector<std::string> from_catalog;
  for (const auto* groups : {&file.configuration.workers, &file.configuration.parameter_servers}) {
    for (const auto& g : *groups) {
      const bool in_catalog = catalog_row(g.type, file.models.catalog_types);
      const auto same_name = [&](const cloud::InstanceType& t) { return t.name == g.type.name; };
      const auto earlier = std::find_if(defined.begin(), defined.end(), same_name);
      const bool clash =
          in_catalog ? earlier != defined.end()
                     : (earlier != defined.end() && !same_type(*earlier, g.type)) ||
                           std::count(from_catalog.begin(), from_catalog.end(), g.type.name) > 0;
      if (clash) {
        throw InputError("the plan holds two servers called \"" + g.type.name +
                         "\" that differ, one of them not a row of catalog " + file.models.catalog +
                         "; a scenario names a type once");
      }
      if (in_catalog) {
        from_catalog.push_back(g.type.name);
      } else if (earlier == defined.end()) {
        defined.push_back(g.type);
      }
    }
  }
  for (const auto& t : defined) write_instance_type(out, t);

  out += "\n[cluster]\ncatalog = " + quoted(file.models.catalog) + "\n";
  for (const auto& g : file.configuration.workers) {
    write_group(out, "workers", g, catalog_row(g.type, file.models.catalog_types));
  }
  for (const auto& g : file.configuration.parameter_servers) {
    write_group(out, "parameter_servers", g, catalog_row(g.type, file.models.catalog_types));
  }

  out += "\n[market]\nmodel = " + quoted(file.models.market) + "\n";
  for (const auto& [key, value] : file.models.market_params) {
    out += key + " = " + quoted(value) + "\n";
  }
  out += "notice = " + seconds(file.models.notice_s) + "\n";

  out += fmt::format("\n[startup]\nspot = {0}\non_demand = {0}\n", quoted(file.models.startup));

  out += "\n[recovery]\nmodel = " + quoted(policy.recovery) + "\n";

  const double checkpoint_s =
      policy.advice ? policy.advice->checkpoint_interval_s : policy.checkpoint_interval_s;
  out += "\n[checkpoint]\ninterval = " + seconds(checkpoint_s) + "\n";

  out += "\n[policy]\nreplacement = " +
         quoted(policy.replacement == "none" ? std::string(sim::Scenario{}.replacement)
                                             : policy.replacement) +
         "\n";
  out += "market = " + quoted(policy.market_policy) + "\n";
  if (policy.fallback) {
    out += "decision_interval = " + seconds(policy.fallback->decision_interval_s) + "\n";
  }
  return out;
}

}  // namespace transient::plan
