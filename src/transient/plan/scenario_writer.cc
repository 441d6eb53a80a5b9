#include "transient/plan/scenario_writer.h"

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

void write_group(std::string& out, const std::string& table, const sim::ServerGroup& g) {
  out += fmt::format("\n[[cluster.{}]]\ntype = {}\ncount = {}\nmarket = {}\n", table,
                     quoted(g.type.name), g.count, quoted(std::string(cloud::to_string(g.market))));
  if (!g.type.zone.empty()) out += "zone = " + quoted(g.type.zone) + "\n";
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

  out += "\n[throughput]\nmodel = " + quoted(file.models.throughput) + "\n";
  out += "architecture = " + quoted(std::string(perf::to_string(file.architecture))) + "\n";
  for (const auto& [key, value] : file.models.throughput_params) {
    // The throughput model's `model` parameter, a `transient fit` model file, is the scenario's
    // model_file (its `model` names the throughput model).
    out += (key == "model" ? "model_file" : key) + " = " + quoted(value) + "\n";
  }

  out += "\n[cluster]\ncatalog = " + quoted(file.models.catalog) + "\n";
  for (const auto& g : file.configuration.workers) write_group(out, "workers", g);
  for (const auto& g : file.configuration.parameter_servers) {
    write_group(out, "parameter_servers", g);
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
