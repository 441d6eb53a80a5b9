#include "transient/sim/scenario_loader.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include "transient/cloud/catalog_registry.h"
#include "transient/core/bounds.h"
#include "transient/core/duration.h"
#include "transient/core/error.h"
#include "transient/core/structured_input.h"
#include "transient/core/text.h"
#include "transient/market/data_dir.h"
#include "transient/market/registry.h"
#include "transient/perf/job_batch.h"
#include "transient/perf/registry.h"
#include "transient/perf/workload.h"
#include "transient/sim/internal/toml_section.h"
#include "transient/sim/market_policy.h"
#include "transient/sim/region_simulator.h"
#include "transient/sim/replacement_policy.h"
#include "transient/sim/simulator.h"

namespace transient::sim {
namespace {

using internal::TomlSection;

// Regions a scenario may describe (Can't Be Late's multi-region setting has up to 9).
constexpr std::size_t kMostRegions = 64;

// A duration that must be above 0 (a deadline, a horizon), with one accepted range in every
// refusal: a number out of range said "[0, 2.592e6]", where 0 is refused too.
double positive_duration_s(const TomlSection& section, const std::string& key, double fallback) {
  double seconds = -1.0;
  try {
    seconds = section.duration_s(key, fallback);
  } catch (const InputError&) {
  }
  if (seconds > 0.0) return seconds;
  const toml::node* node = section.node(key);
  std::string given = "the value";
  if (const auto* text = node->as_string()) {
    given = "\"" + text->get() + "\"";
  } else if (const auto number = node->value<double>()) {
    given = number_text(*number);
  }
  section.fail(key, given +
                        " is not a duration above 0 and up to 30 days; accepted: e.g. \"90s\", "
                        "\"5m\", \"1.5h\", \"1h30m\", \"2d\", or a number of seconds above 0 "
                        "and up to 2592000");
}

// Runs `build`, relocating an InputError without a file to `section`'s `key`.
template <typename F>
auto located(const TomlSection& section, const std::string& key, F build) -> decltype(build()) {
  try {
    return build();
  } catch (const InputError& error) {
    if (!error.file().empty()) throw;
    section.fail(key, error.message());
  }
}

class Loader {
 public:
  Loader(const toml::table& root, std::string file, std::string base_dir,
         const ScenarioLoadOptions& options)
      : root_(root), file_(std::move(file)), base_dir_(std::move(base_dir)), options_(options) {}

  Scenario load() {
    TomlSection top(&root_, file_, "the scenario",
                    {"name", "job", "throughput", "cluster", "instance_types", "market", "regions",
                     "move", "startup", "recovery", "checkpoint", "policy"});
    Scenario s;
    s.name = top.text("name", std::filesystem::path(file_).stem().string());
    read_instance_types();
    read_job(s);
    read_throughput(s);
    read_cluster(s);
    read_market(s);
    read_regions(s);
    read_startup(s);
    read_recovery(s);
    read_checkpoint(s);
    read_policy(s);
    // The simulator's own checks (policy restrictions) are reported at the [policy] table.
    TomlSection policy(table("policy"), file_, "[policy]",
                       {"replacement", "market", "decision_interval"});
    if (s.regions.empty()) {
      if (s.market && s.market_policy != "none" &&
          create_market_policy(s.market_policy)->needs_offline_market() && !optimum_is_a_bound(s)) {
        int workers = 0;
        for (const auto& group : s.workers) workers += group.count;
        policy.fail("market", s.market_policy +
                                  " needs a market where the optimum knows what each server "
                                  "meets: spot that comes and goes with the time alone (a "
                                  "SkyPilot availability trace, no cap), or one worker on a market "
                                  "that draws each server on its own (lifetime, hour-of-day, "
                                  "exponential, a capped trace, a fleet's node events); the " +
                                  s.market->name() + " model here revokes each of the " +
                                  std::to_string(workers) + " workers on its own; accepted here: " +
                                  online_policies() + ", or the market as [[regions]]");
      }
      located(policy, "market", [&] { return Simulator(s).scenario().total_steps; });
      return s;
    }
    if (s.market_policy == "none") {
      std::vector<std::string> names;
      for (const auto& info : market_policies()) names.push_back(info.name);
      policy.fail("market",
                  "several regions ([[regions]]) need a market policy; accepted: " + join(names));
    }
    if (!s.checkpoint_on_notice) {
      TomlSection checkpoint(table("checkpoint"), file_, "[checkpoint]",
                             {"interval", "write", "on_notice"});
      checkpoint.fail("on_notice",
                      "several regions are simulated on the optimum's accounting, which writes a "
                      "checkpoint at every notice; accepted: true");
    }
    located(policy, "market", [&] { return RegionSimulator(s).scenario().total_steps; });
    return s;
  }

 private:
  // The market policies that decide as a run goes, comma-separated.
  static std::string online_policies() {
    std::vector<std::string> names;
    for (const auto& info : market_policies()) {
      if (!create_market_policy(info.name)->needs_offline_market()) names.push_back(info.name);
    }
    return join(names);
  }

  const toml::table* table(const std::string& key) const {
    const toml::node* node = root_.get(key);
    if (!node) return nullptr;
    if (const auto* t = node->as_table()) return t;
    throw InputError(file_, toml_line(*node), "\"" + key + "\" must be a table [" + key + "]");
  }

  void read_instance_types() {
    const toml::node* node = root_.get("instance_types");
    if (!node) return;
    const auto* array = node->as_array();
    if (!array) {
      throw InputError(file_, toml_line(*node),
                       "instance_types must be an array of tables [[instance_types]]");
    }
    for (const auto& element : *array) {
      const auto* t = element.as_table();
      if (!t) throw InputError(file_, toml_line(element), "[[instance_types]]: expected a table");
      TomlSection section(
          t, file_, "[[instance_types]]",
          {"name", "gpu", "gpus", "gpu_tflops", "vcpus", "memory_gib", "network_gbps",
           "on_demand_usd_per_h", "spot_usd_per_h", "region", "zone"});
      cloud::InstanceType type;
      type.name = section.require_text("name");
      type.gpu = section.text("gpu", "");
      type.gpus = section.integer("gpus", type.gpu.empty() ? 0 : 1, 0, 64);
      type.gpu_tflops = section.number("gpu_tflops", 0.0, 0.0, bounds::kGpuTflops.hi);
      type.vcpus = section.integer("vcpus", 0, 0, 100000);
      type.memory_gib = section.number("memory_gib", 0.0, 0.0, bounds::kMemoryGib.hi);
      type.network_gbps = section.number("network_gbps", 0.0, 0.0, bounds::kBandwidthGbps.hi);
      // A price, or 0 when the type is not sold in that market.
      auto price = [&](const char* key) {
        const double usd = section.number(key, 0.0, 0.0, bounds::kPriceUsdPerH.hi);
        if (usd > 0.0 && usd < cloud::kLeastPriceUsdPerH) {
          section.fail(key, "a price from " + number_text(cloud::kLeastPriceUsdPerH) +
                                " $ per hour, or 0 when the type has no such market");
        }
        return usd;
      };
      type.on_demand_usd_per_h = price("on_demand_usd_per_h");
      type.spot_usd_per_h = price("spot_usd_per_h");
      type.region = section.text("region", "");
      type.zone = section.text("zone", "");
      if (type.on_demand_usd_per_h <= 0.0 && type.spot_usd_per_h <= 0.0) {
        section.fail("", "\"" + type.name +
                             "\" has no price; accepted: on_demand_usd_per_h "
                             "and/or spot_usd_per_h > 0");
      }
      if (!type.gpu.empty() && type.gpus == 0) {
        // Priced and timed as a GPU server, it had none.
        section.fail("gpus", "0 GPUs of model " + type.gpu + "; accepted: a count >= 1");
      }
      if (types_.count(type.name) > 0) {
        // The last table of a name silently replaced the first.
        section.fail("name", "\"" + type.name +
                                 "\" is defined by an earlier [[instance_types]] table; accepted: "
                                 "one table per name");
      }
      types_[type.name] = type;
    }
  }

  // A type by name: the scenario's [[instance_types]] first, then its catalog (in `zone` if
  // given).
  cloud::InstanceType resolve_type(const TomlSection& section, const std::string& key,
                                   const std::string& name, const std::string& zone) {
    const auto it = types_.find(name);
    if (it != types_.end()) return it->second;
    if (catalog_) {
      return located(section, key, [&] { return catalog_->find(name, zone); });
    }
    std::vector<std::string> names;
    for (const auto& [n, type] : types_) names.push_back(n);
    section.fail(key, "unknown instance type \"" + name + "\"; accepted: " +
                          (names.empty() ? "none defined (add [[instance_types]] or [cluster] "
                                           "catalog)"
                                         : join(names)));
  }

  void read_job(Scenario& s) {
    TomlSection job(table("job"), file_, "[job]",
                    {"steps", "deadline", "budget", "horizon", "start_hour"});
    if (!table("job")) throw InputError(file_, 0, "missing the [job] table; it needs steps");
    s.total_steps = job.number("steps", 0.0, 1.0, 1e12);
    if (!(s.total_steps > 0.0) || s.total_steps != std::floor(s.total_steps)) {
      job.fail("steps", "accepted: a whole number of steps in [1, 1e12]");
    }
    if (job.has("deadline")) s.deadline_s = positive_duration_s(job, "deadline", kNoDeadline);
    s.horizon_s = positive_duration_s(job, "horizon", s.horizon_s);
    if (s.horizon_s < s.deadline_s && s.deadline_s != kNoDeadline) {
      // Every run would be cut before its deadline and counted as missing it.
      job.fail("horizon", format_duration(s.horizon_s) + " ends the runs before the deadline (" +
                              format_duration(s.deadline_s) +
                              "); accepted: a horizon at or after the deadline");
    }
    s.start_hour_of_day = job.number("start_hour", 0.0, 0.0, 24.0);
    if (job.has("budget")) {
      s.budget_usd = job.number("budget", kNoBudget, bounds::kBudgetUsd.lo, bounds::kBudgetUsd.hi);
      if (root_.get("regions")) {
        job.fail("budget",
                 "several regions ([[regions]]) are simulated without a budget stop; "
                 "accepted: a budget in one region ([market]), or none");
      }
    }
  }

  void read_throughput(Scenario& s) {
    const toml::table* t = table("throughput");
    if (!t) {
      throw InputError(file_, 0,
                       "missing the [throughput] table; it needs a workload, a table or a profile");
    }
    // Besides model and architecture, the throughput model's own parameters (perf/registry.h),
    // which it checks: the job's batch among them (perf/job_batch.h). `model` names the throughput
    // model, so the `transient fit` model file the analytic and fitted ones may take (their
    // parameter `model`) is `model_file` here.
    TomlSection section(t, file_, "[throughput]",
                        {"model", "architecture", "workload", "table", "profile", "model_file",
                         "global_batch", "per_worker_batch"});
    const std::string arch = section.text("architecture", "allreduce");
    if (!perf::parse_architecture(arch, s.architecture)) {
      section.fail("architecture", "\"" + arch + "\"; accepted: async-ps, allreduce");
    }
    perf::ThroughputParams params;
    params.file = file_;
    params.line = section.section_line();
    params.base_dir = base_dir_;
    for (const auto& [key, value] : *t) {
      const std::string k(key.str());
      if (k == "model" || k == "architecture") continue;
      // A number (the batch: global_batch = 512, or 512.0) is passed on as its text, a whole one
      // as a whole number; the model checks it.
      const toml::node* node = t->get(k);
      std::string text;
      if (node != nullptr && node->is_integer()) {
        text = std::to_string(node->as_integer()->get());
      } else if (node != nullptr && node->is_floating_point()) {
        const double number = node->as_floating_point()->get();
        text = std::isfinite(number) && number == std::floor(number) && std::fabs(number) < 1e15
                   ? std::to_string(static_cast<long long>(number))
                   : number_text(number);
      } else {
        text = section.text(k, "");
      }
      const std::string name = k == "model_file" ? "model" : k;
      params.values[name] = text;
      // A bad parameter is reported at its own line; what is wrong with them together (neither
      // workload nor profile) at the first parameter's.
      params.lines[name] = section.line(k);
      if (params.line == section.section_line() || section.line(k) < params.line) {
        params.line = section.line(k);
      }
    }
    const std::string model = section.text("model", "table");
    std::vector<std::string> names;
    for (const auto& info : perf::throughput_models()) names.push_back(info.name);
    if (std::find(names.begin(), names.end(), model) == names.end()) {
      section.fail("model", "unknown throughput model \"" + model + "\"; accepted: " + join(names));
    }
    s.throughput =
        located(section, "model", [&] { return perf::create_throughput_model(model, params); });
    // The job's batch as the model read it, for read_cluster's check that every worker gets a
    // sample; the workload's own batch where none is given and the workload is a built-in one.
    const auto given =
        params.values.find(section.has("global_batch") ? "global_batch" : "per_worker_batch");
    if (given != params.values.end()) {
      batch_.mode = given->first == "global_batch" ? perf::JobBatch::Mode::global
                                                   : perf::JobBatch::Mode::per_worker;
      batch_.samples = static_cast<int>(std::stoll(given->second));
      batch_line_ = section.line(given->first);
    } else {
      batch_line_ = section.section_line();
    }
    if (const auto workload = params.values.find("workload"); workload != params.values.end()) {
      if (const perf::Workload* w = perf::find_workload_or_null(workload->second)) {
        batch_reference_ = w->batch_per_worker;
      }
    }
  }

  void read_groups(const toml::table* cluster, const std::string& key, Scenario& s,
                   std::vector<ServerGroup>& out, bool workers) {
    const toml::node* node = cluster ? cluster->get(key) : nullptr;
    if (!node) return;
    const auto* array = node->as_array();
    if (!array) {
      throw InputError(file_, toml_line(*node),
                       "[cluster] " + key + " must be an array of tables [[cluster." + key + "]]");
    }
    for (const auto& element : *array) {
      const auto* t = element.as_table();
      if (!t)
        throw InputError(file_, toml_line(element), "[[cluster." + key + "]]: expected a table");
      TomlSection section(t, file_, "[[cluster." + key + "]]", {"type", "count", "market", "zone"});
      ServerGroup group;
      const std::string zone = section.text("zone", "");
      group.type = resolve_type(section, "type", section.require_text("type"), zone);
      // A type of [[instance_types]] is where that table puts it: another zone would be ignored.
      if (!zone.empty() && types_.count(group.type.name) != 0 && group.type.zone != zone) {
        section.fail("zone", "\"" + zone + "\": type " + group.type.name +
                                 " of [[instance_types]] is " +
                                 (group.type.zone.empty() ? std::string("in no zone")
                                                          : "in zone " + group.type.zone) +
                                 "; accepted: its own zone there, or no zone");
      }
      group.count = section.integer("count", 1, 1, 100000);
      const std::string market = section.text("market", workers ? "spot" : "on-demand");
      const auto parsed = cloud::parse_market(market);
      if (!parsed) section.fail("market", "\"" + market + "\"; accepted: spot, on-demand");
      group.market = *parsed;
      if (!workers && group.market != cloud::Market::on_demand) {
        section.fail("market",
                     "parameter servers are never revoked in the simulator; "
                     "accepted: on-demand");
      }
      if (!group.type.has_market(group.market)) {
        section.fail("market", "\"" + group.type.name + "\" has no " +
                                   std::string(cloud::to_string(group.market)) + " price");
      }
      if (workers) {
        perf::ClusterShape shape;
        shape.architecture = s.architecture;
        shape.workers.push_back({group.type, 1});
        located(section, "type", [&] { return s.throughput->predict(shape).steps_per_s; });
      }
      out.push_back(group);
    }
  }

  void read_cluster(Scenario& s) {
    const toml::table* t = table("cluster");
    TomlSection section(t, file_, "[cluster]",
                        {"catalog", "workers", "parameter_servers", "replacement_types"});
    if (section.has("catalog")) {
      std::string catalog = section.text("catalog", "");
      const std::filesystem::path path = std::filesystem::path(base_dir_) / catalog;
      if (catalog.size() > 4 && catalog.substr(catalog.size() - 4) == ".csv" &&
          std::filesystem::path(catalog).is_relative() && std::filesystem::exists(path)) {
        catalog = path.string();
      }
      catalog_ = located(section, "catalog", [&] {
        return std::make_shared<const cloud::Catalog>(cloud::load_catalog(catalog));
      });
    }
    read_groups(t, "workers", s, s.workers, true);
    if (s.workers.empty()) {
      throw InputError(file_, section.section_line(),
                       "the scenario has no workers; add [[cluster.workers]] with type and count");
    }
    read_groups(t, "parameter_servers", s, s.parameter_servers, false);
    if (s.architecture == perf::Architecture::allreduce &&
        (batch_.samples > 0 || batch_reference_ > 0)) {
      perf::ClusterShape shape;
      for (const auto& group : s.workers) shape.workers.push_back({group.type, group.count});
      try {
        batch_.require_a_sample_per_worker(
            shape.total_workers(), std::max(1, batch_reference_),
            batch_.samples > 0 ? "[throughput] global_batch"
                               : "[throughput] global_batch (not given: the workload's batch)");
      } catch (const InputError& error) {
        throw InputError(file_, batch_line_, error.message());
      }
    }
    if (const toml::node* node = section.node("replacement_types")) {
      const auto* array = node->as_array();
      if (!array) section.fail("replacement_types", "expected an array of instance type names");
      for (const auto& element : *array) {
        const auto* name = element.as_string();
        if (!name) section.fail("replacement_types", "expected an array of instance type names");
        // A replacement is rented where the workers run: in their zone if it is sold there.
        std::string zone;
        if (catalog_ && !s.workers.front().type.zone.empty()) {
          for (const cloud::InstanceType& row : catalog_->types()) {
            if (row.name == name->get() && row.zone == s.workers.front().type.zone) zone = row.zone;
          }
        }
        s.replacement_types.push_back(
            resolve_type(section, "replacement_types", name->get(), zone));
        // A replacement the throughput model cannot price fails here, not in the run that
        // first draws it.
        perf::ClusterShape shape;
        shape.architecture = s.architecture;
        shape.workers.push_back({s.replacement_types.back(), 1});
        located(section, "replacement_types",
                [&] { return s.throughput->predict(shape).steps_per_s; });
      }
    }
  }

  void read_market(Scenario& s) {
    const toml::table* t = table("market");
    if (!t) return;
    if (root_.get("regions")) {
      // Each region names its market; the notice is the cloud's, the same everywhere.
      if (const toml::node* model = t->get("model")) {
        throw InputError(file_, toml_line(*model),
                         "[market] model: with [[regions]] each region names its market model; "
                         "accepted in [market]: notice");
      }
      TomlSection section(t, file_, "[market]", {"notice"});
      s.notice_s = section.duration_s("notice", s.notice_s);
      return;
    }
    TomlSection section(t, file_, "[market]", {});  // the model's keys: its factory checks them
    const toml::node* model_node = t->get("model");
    if (!model_node || !model_node->as_string()) {
      throw InputError(file_, section.section_line(),
                       "[market] model: missing; accepted: a revocation model name (transient "
                       "market list) or \"none\"");
    }
    const std::string model = model_node->as_string()->get();
    s.notice_s = section.duration_s("notice", s.notice_s);
    if (model == "none") return;
    refuse_a_second_start_hour(section, model);
    const market::ModelParams params = market::params_from_toml(*t, file_, {"model", "notice"});
    market::ModelContext context;
    context.data_dir = market::resolve_data_dir(options_.data_dir);
    context.base_dir = base_dir_;
    s.market = located(section, "model",
                       [&] { return market::create_revocation_model(model, params, context); });
  }

  // The hour-of-day model's start_hour beside [job] start_hour: both say the hour of day a run
  // starts at, and the model's won without a word.
  void refuse_a_second_start_hour(const TomlSection& section, const std::string& model) const {
    if (model != "hour-of-day" || !section.has("start_hour")) return;
    const TomlSection job(table("job"), file_, "[job]", {});
    if (!job.has("start_hour")) return;
    section.fail("start_hour", "the hour of day the runs start at is [job] start_hour (line " +
                                   std::to_string(job.line("start_hour")) +
                                   "), given too; accepted: one of the two");
  }

  // [[regions]]: each a name and a market model with its parameters (as [market] has them);
  // [move]: what moving the checkpoint to another region costs.
  void read_regions(Scenario& s) {
    const toml::node* node = root_.get("regions");
    const toml::table* move = table("move");
    if (!node) {
      if (move) {
        throw InputError(file_, toml_line(*move),
                         "[move] is the cost of moving between regions; add [[regions]] (each a "
                         "name and a market model) or remove [move]");
      }
      return;
    }
    const auto* array = node->as_array();
    if (!array || array->empty()) {
      throw InputError(file_, toml_line(*node),
                       "regions must be an array of tables [[regions]], each with a name and a "
                       "market model");
    }
    if (array->size() > kMostRegions) {
      throw InputError(file_, toml_line(*node),
                       "regions: " + std::to_string(array->size()) + " given; accepted: 1 to " +
                           std::to_string(kMostRegions));
    }
    market::ModelContext context;
    context.data_dir = market::resolve_data_dir(options_.data_dir);
    context.base_dir = base_dir_;
    for (const auto& element : *array) {
      const auto* t = element.as_table();
      if (!t) {
        throw InputError(file_, toml_line(element),
                         "[[regions]]: expected a table with a name and a market model");
      }
      TomlSection section(t, file_, "[[regions]]", {});  // the model's keys: its factory checks
      Region region;
      if (!section.has("name")) {
        section.fail("name",
                     "missing; accepted: the region's or zone's name, e.g. name = "
                     "\"us-west-2a\"");
      }
      region.name = section.text("name", "");
      if (region.name.empty()) section.fail("name", "accepted: a region or zone name, not empty");
      for (const Region& other : s.regions) {
        if (other.name == region.name) {
          section.fail("name", "\"" + region.name +
                                   "\" is already a region; accepted: a name "
                                   "not given before");
        }
      }
      if (section.has("notice")) {
        section.fail("notice",
                     "the notice is the cloud's, set in [market]; accepted in [[regions]]: name, "
                     "model and the model's parameters");
      }
      const toml::node* model_node = t->get("model");
      if (!model_node || !model_node->as_string()) {
        section.fail("model",
                     "missing; accepted: a revocation model name (transient market list), e.g. "
                     "model = \"trace\" with file = \"us-west-2a_k80_1\"");
      }
      const std::string model = model_node->as_string()->get();
      const market::ModelParams params = market::params_from_toml(*t, file_, {"model", "name"});
      if (model == "none") {
        section.fail("model",
                     "\"none\": a region without a spot market adds nothing (on-demand "
                     "servers can be had in every region); accepted: a revocation model "
                     "name (transient market list)");
      }
      refuse_a_second_start_hour(section, model);
      region.market = located(section, "model", [&] {
        return market::create_revocation_model(model, params, context);
      });
      s.regions.push_back(std::move(region));
    }
    TomlSection section(move, file_, "[move]", {"checkpoint", "usd"});
    s.move_s = section.duration_s("checkpoint", 0.0);
    if (!(s.move_s >= 0.0)) section.fail("checkpoint", "accepted: a duration >= 0");
    s.move_usd = section.number("usd", 0.0, 0.0, bounds::kPriceUsdPerH.hi);
  }

  void read_startup(Scenario& s) {
    const toml::table* t = table("startup");
    TomlSection section(t, file_, "[startup]",
                        {"spot", "spot_std", "on_demand", "on_demand_std", "gpu", "region"});
    const std::string gpu = section.text("gpu", "");
    const std::string region = section.text("region", "");
    auto read = [&](const std::string& key, cloud::Market market, double& mean_s,
                    std::shared_ptr<const market::StartupModel>& model) {
      const toml::node* node = section.node(key);
      if (node && node->as_string() && node->as_string()->get() == "cmdare") {
        model = located(section, key, [&] {
          return std::make_shared<const market::StartupModel>(market::StartupModel::load_cmdare(
              market::resolve_data_dir(options_.data_dir), market, gpu, region));
        });
        return;
      }
      if (node && node->as_string() && node->as_string()->get() == "default") {
        model = std::make_shared<const market::StartupModel>(
            market::StartupModel::builtin_default(market));
        return;
      }
      mean_s = section.duration_s(key, 0.0);
    };
    read("spot", cloud::Market::spot, s.startup.spot_mean_s, s.startup.spot_model);
    read("on_demand", cloud::Market::on_demand, s.startup.on_demand_mean_s,
         s.startup.on_demand_model);
    // Keys that only qualify another are refused where that other makes them mean nothing.
    const auto measured = [&](const std::string& key) {
      const toml::node* node = section.node(key);
      return node && node->as_string() &&
             (node->as_string()->get() == "cmdare" || node->as_string()->get() == "default");
    };
    const auto cmdare = [&](const std::string& key) {
      const toml::node* node = section.node(key);
      return node && node->as_string() && node->as_string()->get() == "cmdare";
    };
    for (const std::string key : {"gpu", "region"}) {
      if (section.has(key) && !cmdare("spot") && !cmdare("on_demand")) {
        section.fail(key,
                     "selects CM-DARE's measured start-up times, and neither spot nor "
                     "on_demand is \"cmdare\"; accepted: " +
                         key + " with spot or on_demand = \"cmdare\", or no " + key);
      }
    }
    for (const std::string key : {"spot", "on_demand"}) {
      if (section.has(key + "_std") && measured(key)) {
        section.fail(key + "_std", "the deviation of a start-up given as a duration, and " + key +
                                       " is \"" + section.node(key)->as_string()->get() +
                                       "\" (a start-up model, not a duration); accepted: " + key +
                                       "_std with a duration for " + key + ", or no " + key +
                                       "_std");
      }
    }
    s.startup.spot_std_s = section.duration_s("spot_std", 0.0);
    s.startup.on_demand_std_s = section.duration_s("on_demand_std", 0.0);
  }

  void read_recovery(Scenario& s) {
    TomlSection section(table("recovery"), file_, "[recovery]",
                        {"model", "reform", "restart", "chief_loss"});
    s.recovery = section.text("model", s.recovery);
    located(section, "model", [&] { return create_recovery_model(s.recovery, {})->name(); });
    s.recovery_options.reform_s = section.duration_s("reform", s.recovery_options.reform_s);
    s.recovery_options.restart_s = section.duration_s("restart", s.recovery_options.restart_s);
    const std::string chief = section.text("chief_loss", "wait");
    if (chief != "wait" && chief != "fail") {
      section.fail("chief_loss", "\"" + chief + "\"; accepted: wait, fail");
    }
    s.recovery_options.chief_loss_fails = chief == "fail";
    if (section.has("chief_loss") && s.recovery != "async-ps-chief") {
      section.fail("chief_loss",
                   "what async-ps-chief recovery does when the chief is lost, and "
                   "the model here is \"" +
                       s.recovery +
                       "\"; accepted: chief_loss with model = \"async-ps-chief\", "
                       "or no chief_loss");
    }
  }

  void read_checkpoint(Scenario& s) {
    TomlSection section(table("checkpoint"), file_, "[checkpoint]",
                        {"interval", "write", "on_notice"});
    s.checkpoint_interval_s = section.duration_s("interval", 0.0);
    // From a second: a checkpoint a millisecond is billions of events a run.
    if (s.checkpoint_interval_s != 0.0 && !(s.checkpoint_interval_s >= 1.0)) {
      section.fail("interval",
                   "accepted: \"0s\" (no periodic checkpoints) or a duration of at "
                   "least 1 s");
    }
    s.checkpoint_write_s = section.duration_s("write", 0.0);
    if (s.checkpoint_write_s > 0.0 && s.checkpoint_interval_s == 0.0) {
      section.fail("write",
                   "the time a periodic checkpoint stops training, and there are no "
                   "periodic checkpoints; accepted: write with an interval, or no write");
    }
    if (s.checkpoint_interval_s > 0.0 && !(s.checkpoint_write_s < s.checkpoint_interval_s)) {
      // Each checkpoint would stop training until the next: no step is ever taken.
      section.fail("write", format_duration(s.checkpoint_write_s) + " for a checkpoint every " +
                                format_duration(s.checkpoint_interval_s) +
                                " leaves no time to train; accepted: a duration shorter than the "
                                "interval");
    }
    s.checkpoint_on_notice = section.boolean("on_notice", true);
  }

  void read_policy(Scenario& s) {
    TomlSection section(table("policy"), file_, "[policy]",
                        {"replacement", "market", "decision_interval"});
    s.replacement = section.text("replacement", s.replacement);
    located(section, "replacement",
            [&] { return create_replacement_policy(s.replacement)->name(); });
    s.market_policy = section.text("market", s.market_policy);
    if (s.market_policy != "none") {
      located(section, "market", [&] {
        try {
          return create_market_policy(s.market_policy)->name();
        } catch (const InputError& error) {
          throw InputError(error.message() + ", none");
        }
      });
      if (s.deadline_s == kNoDeadline) {
        section.fail("market", "a market policy needs a deadline; add deadline to [job]");
      }
    }
    s.decision_interval_s = section.duration_s("decision_interval", s.decision_interval_s);
    // From a second: the policies' priors count a month of decision ticks (1 ms made 2.6e9 of
    // them, past an int, and the prior one tick).
    if (!(s.decision_interval_s >= 1.0)) {
      section.fail("decision_interval", "accepted: a duration of at least 1 s");
    }
    // One region decides only under a market policy; several regions decide on these ticks.
    if (section.has("decision_interval") && s.market_policy == "none" && !root_.get("regions")) {
      section.fail("decision_interval",
                   "how often a market policy decides, and there is no market policy; accepted: "
                   "decision_interval with [policy] market, or no decision_interval");
    }
  }

  const toml::table& root_;
  std::string file_;
  std::string base_dir_;
  const ScenarioLoadOptions& options_;
  std::map<std::string, cloud::InstanceType> types_;  // [[instance_types]]
  std::shared_ptr<const cloud::Catalog> catalog_;     // [cluster] catalog, if any
  perf::JobBatch batch_;     // [throughput] global_batch or per_worker_batch
  int batch_reference_ = 0;  // the built-in workload's batch; 0: not known
  int batch_line_ = 0;       // the line of the batch, or of [throughput]
};

}  // namespace

Scenario parse_scenario(const std::string& text, const std::string& name,
                        const std::string& base_dir, const ScenarioLoadOptions& options) {
  const toml::table root = parse_toml(text, name);
  return Loader(root, name, base_dir, options).load();
}

Scenario load_scenario(const std::string& path, const ScenarioLoadOptions& options) {
  const toml::table root = load_toml_file(path);
  const std::string base_dir = std::filesystem::path(path).parent_path().string();
  return Loader(root, path, base_dir, options).load();
}

}  // namespace transient::sim
