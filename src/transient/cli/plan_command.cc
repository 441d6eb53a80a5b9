// `transient plan (--workload NAME | --profile FILE) --steps N [--deadline D] [--budget USD] ...`:
// which cluster to rent, with the risk of each plan and the Pareto front (docs/plan.md); or, with
// --evaluate SPEC, the same figures for one given cluster.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "transient/cli/batch_flags.h"
#include "transient/cli/commands.h"
#include "transient/cli/validators.h"
#include "transient/cloud/catalog_registry.h"
#include "transient/core/atomic_file.h"
#include "transient/core/bounds.h"
#include "transient/core/duration.h"
#include "transient/core/error.h"
#include "transient/core/text.h"
#include "transient/market/data_dir.h"
#include "transient/market/registry.h"
#include "transient/market/startup_model.h"
#include "transient/perf/cluster_spec.h"
#include "transient/perf/registry.h"
#include "transient/perf/workload.h"
#include "transient/plan/pareto_svg.h"
#include "transient/plan/planner.h"
#include "transient/plan/scenario_writer.h"
#include "transient/report/svg_raster.h"

namespace transient::cli {
namespace {

struct PlanFlags {
  std::string workload;                 // a built-in workload
  std::string profile;                  // or a workload profile file
  double steps = 0.0;                   // steps to train (perf/job_batch.h)
  std::string deadline;                 // a duration; empty = none
  double budget_usd = 0.0;              // 0 = none (flag absent)
  bool budget_given = false;            // --budget was written
  std::string catalog = "gce-2019";     // a built-in catalog or a CSV
  std::string zones;                    // comma-separated zones or regions
  int regions = 1;                      // regions one cluster may span; 0 = any
  int max_servers = 16;                 // workers at most
  std::string arch = "allreduce";       // allreduce or ps
  double confidence = 0.95;             // quantile of time that must meet the deadline
  int runs = 200;                       // Monte Carlo runs per plan
  std::uint64_t seed = 1;               // run i uses seed + i
  int threads = 0;                      // 0 = the machine's cores
  int top_k = 5;                        // candidates from the programme
  std::string throughput = "analytic";  // analytic or fitted
  std::string model_file;               // a model file written by `transient fit`
  std::string evaluate;                 // a cluster spec to judge instead of searching
  std::string data_dir;                 // the shared measurements
  // The market spot servers are revoked by: "" = the GCE 2019 lifetimes of each one's GPU; else a
  // revocation model (`transient market list`) with KEY=VALUE parameters, e.g. a spot trace.
  std::string market;
  std::vector<std::string> market_params;
  std::string plot;               // the Pareto front as .svg or .png
  bool json = false;              // print JSON
  std::string emit_scenario;      // write the plan as a scenario file (TOML) here
  bool emit_train_flags = false;  // print only the flags of `transient coordinator`
  BatchFlags batch;               // --global-batch or --per-worker-batch
  // The flags given that shape the search or draw its front, which --evaluate does not make.
  std::vector<std::string> search_flags_given;
};

// The flags of the search: --evaluate judges one cluster as written and honours none of them.
const std::vector<std::string> kSearchFlags = {"--zones", "--regions", "--max-servers", "--top-k",
                                               "--plot"};

// The workload planned for: a built-in one or the profile's.
perf::Workload planned_workload(const PlanFlags& flags) {
  return flags.workload.empty() ? perf::load_workload_profile(flags.profile)
                                : perf::find_workload(flags.workload);
}

// The workload's own batch, which a job takes by default.
int reference_batch(const PlanFlags& flags) { return planned_workload(flags).batch_per_worker; }

// The batch of the job as JSON: {"global_batch": G} or {"per_worker_batch": B}.
void add_batch_json(nlohmann::json& out, const PlanFlags& flags) {
  const perf::JobBatch b = flags.batch.batch();
  out[b.mode == perf::JobBatch::Mode::global ? "global_batch" : "per_worker_batch"] =
      b.samples > 0 ? b.samples : reference_batch(flags);
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// Every figure of `e` about to be printed is a number: its time and cost are "never" only when
// it trains at no speed at all.
void check_figures(const plan::Evaluation& e) {
  check_result(e.configuration.usd_per_h(), "price per hour of " + e.label);
  check_result(e.steps_per_s, "steps per second of " + e.label);
  if (e.steps_per_s > 0) {
    check_result(e.predicted_time_s, "predicted time of " + e.label);
    check_result(e.predicted_cost_usd, "predicted cost of " + e.label);
  }
  if (e.simulated && e.unfinished_share == 0) {
    check_result(e.expected_time_s, "expected time of " + e.label);
    check_result(e.expected_cost_usd, "expected cost of " + e.label);
  }
}

double json_number(double value) { return std::isfinite(value) ? value : -1.0; }

nlohmann::json group_json(const sim::ServerGroup& g) {
  return {{"type", g.type.name},
          {"gpu", g.type.gpu},
          {"gpus", g.type.gpus},  // per server: a worker each
          {"region", g.type.region},
          {"zone", g.type.zone},
          {"market", std::string(cloud::to_string(g.market))},
          {"count", g.count}};
}

// The fields of plan::RunPolicy; "text" is what the table prints after "policy:".
nlohmann::json policy_json(const plan::RunPolicy& p) {
  nlohmann::json replaced = nlohmann::json::array();
  for (const auto& g : p.replaced_groups) replaced.push_back(group_json(g));
  nlohmann::json out = {
      {"text", p.text()},
      {"recovery", p.recovery},
      {"checkpoint_interval_s", p.checkpoint_interval_s},
      {"replacement", {{"policy", p.replacement}, {"groups", replaced}}},
      {"support_server", {{"type", p.support_server}, {"parameter_server", p.parameter_server}}},
      {"market_policy", p.market_policy},
      {"fallback", nullptr},
      {"stop_at_usd", p.stop_at_usd > 0.0 ? nlohmann::json(p.stop_at_usd) : nullptr},
      {"advice", nullptr}};
  if (p.fallback) {
    const plan::Fallback& f = *p.fallback;
    out["fallback"] = {{"market", "on-demand"},
                       {"servers", f.servers},
                       {"steps_per_s", f.steps_per_s},
                       {"on_demand_changeover_s", f.on_demand_changeover_s},
                       {"decision_interval_s", f.decision_interval_s},
                       {"reserve_s", f.reserve_s()},
                       {"margin_s", f.margin_s}};
  }
  if (p.advice) {
    const plan::PolicyAdvice& a = *p.advice;
    nlohmann::json policies = nlohmann::json::array();
    for (const auto& f : a.policies) {
      policies.push_back(
          {{"name", f.name},
           {"expected_cost_usd", f.expected_cost_usd},
           {"cost_over_optimal",
            f.cost_over_optimal > 0.0 ? nlohmann::json(f.cost_over_optimal) : nullptr},
           {"deadline_miss_share", f.deadline_miss_share}});
    }
    const plan::PolicyFigures* chosen = a.chosen();
    out["advice"] = {
        {"recommended", a.recommended},
        {"expected_cost_usd", chosen ? chosen->expected_cost_usd : -1.0},
        {"cost_over_optimal",
         chosen && a.optimal() ? nlohmann::json(chosen->cost_over_optimal) : nullptr},
        {"optimal_exact", a.optimal_exact},
        {"no_optimum_reason", a.no_optimum_reason.empty() ? nlohmann::json(nullptr)
                                                          : nlohmann::json(a.no_optimum_reason)},
        {"runs", a.runs},
        {"checkpoint_interval_s", a.checkpoint_interval_s},
        {"within_budget", a.within_budget()},
        {"policies", policies}};
  }
  return out;
}

nlohmann::json evaluation_json(const plan::Evaluation& e) {
  nlohmann::json workers = nlohmann::json::array();
  for (const auto& g : e.configuration.workers) workers.push_back(group_json(g));
  nlohmann::json servers = nlohmann::json::array();
  for (const auto& g : e.configuration.parameter_servers) {
    servers.push_back({{"type", g.type.name},
                       {"region", g.type.region},
                       {"zone", g.type.zone},
                       {"gpus", g.type.gpus},
                       {"usd_per_h", g.type.on_demand_usd_per_h},
                       {"count", g.count}});
  }
  check_figures(e);
  return {{"label", e.label},
          {"configuration", e.configuration.text()},
          {"workers", workers},
          {"support_servers", servers},
          {"regions", e.configuration.worker_regions()},
          {"usd_per_h", e.configuration.usd_per_h()},
          {"steps_per_s", e.steps_per_s},
          {"step_time_s", e.step_time_s},
          {"bottleneck", e.bottleneck},
          {"predicted_time_s", json_number(e.predicted_time_s)},
          {"predicted_cost_usd", json_number(e.predicted_cost_usd)},
          {"simulated", e.simulated},
          {"expected_time_s", json_number(e.expected_time_s)},
          {"p95_time_s", json_number(e.quantile_time_s)},
          {"expected_cost_usd", json_number(e.expected_cost_usd)},
          {"deadline_miss_probability", e.deadline_miss_probability},
          {"expected_revocations", e.expected_revocations},
          {"unfinished_share", e.unfinished_share},
          {"budget_stop_share", e.budget_stop_share},
          {"acceptable", e.acceptable},
          {"verdict", e.verdict},
          {"policy", e.policy ? policy_json(*e.policy) : nullptr}};
}

// The width of the column of the quantile of time: its heading ("p99.6 time") with two spaces
// before it, as the other headings have.
int quantile_width(const std::string& quantile) {
  return std::max(9, static_cast<int>(quantile.size()) + 6);
}

void print_header(const std::string& quantile) {
  fmt::print("{:<24} {:>7} {:>9} {:>{}} {:>9} {:>8} {:>6}  {}\n", "", "$/h", "exp time",
             quantile + " time", quantile_width(quantile), "exp cost", "P(miss)", "revoc",
             "configuration");
}

void print_row(const plan::Evaluation& e, const std::string& quantile) {
  check_figures(e);
  fmt::print("{:<24} {:>7.3f} {:>9} {:>{}} {:>9} {:>8.3f} {:>6.2f}  {}\n", e.label,
             e.configuration.usd_per_h(), plan::format_hours(e.expected_time_s),
             plan::format_hours(e.quantile_time_s), quantile_width(quantile),
             fmt::format("${:.2f}", e.expected_cost_usd), e.deadline_miss_probability,
             e.expected_revocations, e.configuration.text());
}

// The GCE 2019 lifetime distribution that revokes a spot server of `type`: its GPU's, or all GPUs
// pooled for GPUs it has no data for.
std::string lifetime_gpu(const cloud::InstanceType& type) {
  const std::string gpu = uppercase(type.gpu);
  return gpu == "K80" || gpu == "P100" || gpu == "V100" ? gpu : "any";
}

// A file named on the command line as an absolute path (a scenario file may be run from
// elsewhere); a name that is no file (a built-in catalog or workload) as it is.
std::string absolute_if_file(const std::string& name) {
  std::error_code error;
  if (name.empty() || !std::filesystem::is_regular_file(name, error)) return name;
  return std::filesystem::absolute(name).lexically_normal().string();
}

// Where a plan's recommendation is needed (--emit-*): the evaluation, or an error that says why
// there is none.
const plan::Evaluation& require_policy(const std::optional<plan::Evaluation>& e,
                                       const std::string& why_none, const PlanFlags& flags) {
  const std::string flag = !flags.emit_scenario.empty() ? "--emit-scenario" : "--emit-train-flags";
  if (!e) throw InputError(flag + ": no plan is recommended (" + why_none + "); nothing emitted");
  if (!e->policy) {
    throw InputError(flag + ": the cluster is not acceptable (" + e->verdict +
                     "); nothing emitted");
  }
  return *e;
}

// The warning before a revocation on the market planned with (shared/data/README.md): EC2's two
// minutes where the spot market is EC2's (the traces of spot-traces/, an AWS interruption
// bucket) or, for a market of no known cloud, where every spot server is in an AWS region
// ("us-west-2"); GCE's 30 s (the default) for its lifetimes and hour-of-day counts and otherwise.
double market_notice_s(const PlanFlags& flags, const cloud::Catalog& catalog) {
  constexpr double kEc2NoticeS = 120.0;
  const double gce_notice_s = sim::Scenario{}.notice_s;
  if (flags.market == "lifetime" || flags.market == "hour-of-day") return gce_notice_s;
  const auto params = market::params_from_words(flags.market_params, "--market-param").values;
  if (flags.market == "trace") {
    const auto file = params.find("file");
    // A trace named as the data directory has it (all EC2's), or a file of its folders.
    if (file != params.end() && (file->second.find('/') == std::string::npos ||
                                 file->second.find("spot-traces/aws-") != std::string::npos)) {
      return kEc2NoticeS;
    }
  }
  if (flags.market == "exponential" && params.count("bucket")) return kEc2NoticeS;
  static const std::regex kAwsRegion("[a-z]{2}(-[a-z]+)+-[0-9]+");
  bool any_spot = false;
  for (const auto& type : catalog.types()) {
    if (!type.has_market(cloud::Market::spot)) continue;
    if (!std::regex_match(type.region, kAwsRegion)) return gce_notice_s;
    any_spot = true;
  }
  return any_spot ? kEc2NoticeS : gce_notice_s;
}

// The plan as a scenario file that `transient simulate` runs (plan/scenario_writer.h), with the
// models `run_plan` gives the planner, by name.
std::string plan_scenario(const PlanFlags& flags, const plan::Evaluation& e,
                          const plan::PlanOptions& options, const std::string& data_dir) {
  plan::ScenarioFile file;
  const std::string job = flags.workload.empty()
                              ? std::filesystem::path(flags.profile).stem().string()
                              : flags.workload;
  file.name = "plan-" + job;
  file.comment = fmt::format("Written by `transient plan`: {} of {} on {}.\npolicy: {}",
                             plan::format_step_count(flags.steps), job, e.configuration.text(),
                             e.policy->text());
  file.total_steps = options.total_steps;
  file.deadline_s = options.deadline_s;
  file.architecture = options.architecture;
  file.configuration = e.configuration;
  file.policy = *e.policy;
  plan::ScenarioModels& m = file.models;
  m.catalog = absolute_if_file(flags.catalog);
  m.catalog_types = cloud::load_catalog(flags.catalog).types();
  m.throughput = flags.throughput;
  if (!flags.workload.empty()) m.throughput_params["workload"] = flags.workload;
  if (!flags.profile.empty()) m.throughput_params["profile"] = absolute_if_file(flags.profile);
  if (!flags.model_file.empty()) m.throughput_params["model"] = absolute_if_file(flags.model_file);
  perf::ThroughputParams batch;
  flags.batch.set_params(batch);
  m.throughput_params.insert(batch.values.begin(), batch.values.end());
  // The planner's scenario draws revocations for its largest group of spot workers.
  const sim::ServerGroup* largest_spot = nullptr;
  for (const auto& g : e.configuration.workers) {
    if (g.market == cloud::Market::spot && (!largest_spot || g.count > largest_spot->count)) {
      largest_spot = &g;
    }
  }
  if (largest_spot && !flags.market.empty()) {
    m.market = flags.market;
    for (const auto& [key, value] :
         market::params_from_words(flags.market_params, "--market-param").values) {
      m.market_params[key] =
          key == "file" || key == "availability" || key == "cdf" ? absolute_if_file(value) : value;
    }
  } else if (largest_spot) {
    m.market = "lifetime";
    m.market_params["gpu"] = lifetime_gpu(largest_spot->type);
  }
  m.notice_s = options.notice_s;
  std::error_code error;
  m.startup = std::filesystem::is_directory(
                  std::filesystem::path(data_dir) / "cmdare" / "startup_time", error)
                  ? "cmdare"
                  : "default";
  return plan::scenario_toml(file);
}

// A word as the shell reads it back.
std::string shell_word(const std::string& word) {
  if (!word.empty() && word.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                              "0123456789._/+:=@%,-") == std::string::npos) {
    return word;
  }
  std::string out = "'";
  for (const char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// The flags of `transient coordinator` (cli/train_command.cc) that run the plan: the workers'
// servers for cost accounting, the workers generation 0 waits for (one per GPU), the job with
// the batch the plan was predicted with (--global-batch G, or --per-worker-batch B: the same
// meaning in both), the periodic checkpoints the plan was simulated with, and the model when the
// workload names one (a profile written by `transient profile`). Servers of several types are not
// one --instance-type: the price flags are left out then; a workload without a model (CM-DARE's
// networks, a profile written by hand) leaves --model to the user; each with a note on standard
// error.
std::vector<std::string> coordinator_flags(const PlanFlags& flags, const plan::Evaluation& e,
                                           perf::Architecture architecture) {
  const plan::Configuration& c = e.configuration;
  std::vector<std::string> out;
  if (c.workers.size() == 1) {
    out = {"--catalog", absolute_if_file(flags.catalog), "--instance-type", c.workers[0].type.name};
    // The zone the plan priced: a type sold in several zones at different prices needs it.
    if (!c.workers[0].type.zone.empty()) out.insert(out.end(), {"--zone", c.workers[0].type.zone});
    out.insert(out.end(), {"--market", std::string(cloud::to_string(c.workers[0].market))});
  } else {
    fmt::print(stderr,
               "note: the plan has {} groups of workers; `transient coordinator` bills one "
               "--instance-type, so the price flags are left out\n",
               c.workers.size());
  }
  const perf::Workload workload = planned_workload(flags);
  const perf::JobBatch batch = flags.batch.batch();
  const int samples = batch.samples > 0 ? batch.samples : workload.batch_per_worker;
  out.insert(out.end(),
             {"--min-workers", std::to_string(c.shape(architecture).total_workers()), "--steps",
              fmt::format("{:.0f}", flags.steps),
              batch.mode == perf::JobBatch::Mode::global ? "--global-batch" : "--per-worker-batch",
              std::to_string(samples)});
  if (e.policy->checkpoint_interval_s > 0.0) {
    out.insert(out.end(),
               {"--checkpoint-every", fmt::format("{}s", e.policy->checkpoint_interval_s)});
  }
  if (!workload.model.empty()) {
    out.insert(out.end(), {"--model", workload.model});
  } else {
    fmt::print(stderr,
               "note: the workload {} names no model of `transient train` (a profile written by "
               "`transient profile --model M` does), so --model is left out: add --model "
               "FILE.pt, the network the plan is for\n",
               workload.name);
  }
  return out;
}

// --emit-scenario and --emit-train-flags for the plan `e`: writes the scenario, and returns the
// line of flags to print (and nothing else) when --emit-train-flags asks for them.
std::optional<std::string> emit(const PlanFlags& flags, const std::optional<plan::Evaluation>& e,
                                const std::string& why_none, const plan::PlanOptions& options,
                                const std::string& data_dir) {
  if (flags.emit_scenario.empty() && !flags.emit_train_flags) return std::nullopt;
  const plan::Evaluation& plan = require_policy(e, why_none, flags);
  std::vector<std::string> words;
  if (flags.emit_train_flags) words = coordinator_flags(flags, plan, options.architecture);
  if (!flags.emit_scenario.empty()) {
    const std::string text = plan_scenario(flags, plan, options, data_dir);
    // Refused again as it is written: a file created during the search is never replaced.
    try {
      write_new_file_atomically(flags.emit_scenario, text);
    } catch (const InputError& error) {
      throw InputError("--emit-scenario " + std::string(error.what()));
    }
  }
  if (!flags.emit_train_flags) return std::nullopt;
  std::string line;
  for (const auto& w : words) line += (line.empty() ? "" : " ") + shell_word(w);
  return line;
}

void run_plan(const PlanFlags& flags) {
  if (flags.workload.empty() == flags.profile.empty()) {
    throw InputError("plan needs exactly one of --workload NAME or --profile FILE");
  }
  perf::Architecture architecture;
  if (!perf::parse_architecture(flags.arch, architecture)) {
    throw InputError("--arch " + flags.arch + ": accepted: allreduce, ps (async-ps)");
  }
  if (!flags.evaluate.empty() && !flags.search_flags_given.empty()) {
    throw InputError(flags.search_flags_given.front() +
                     ": a flag of the search (its zones, regions, servers, candidates or the "
                     "picture of its front), which --evaluate does not make: it judges the "
                     "cluster as written; accepted with --evaluate: none of " +
                     join(kSearchFlags));
  }
  const std::string svg = ".svg";
  if (!flags.plot.empty() && !report::wants_png(flags.plot) &&
      (flags.plot.size() <= svg.size() ||
       flags.plot.compare(flags.plot.size() - svg.size(), svg.size(), svg) != 0)) {
    throw InputError("--plot " + flags.plot + ": accepted: a file name ending in .svg or .png");
  }
  // Checked before the search, so that a picture that cannot be written fails in a second and
  // not after the plan, beside a scenario already written.
  if (!flags.plot.empty()) require_writable_output(flags.plot, "--plot");
  if (flags.throughput != "analytic" && flags.throughput != "fitted") {
    throw InputError("--throughput " + flags.throughput + ": accepted: analytic, fitted");
  }
  // Refused before the search: an existing file is never replaced by a plan.
  std::error_code exists_error;
  if (!flags.emit_scenario.empty() &&
      std::filesystem::symlink_status(flags.emit_scenario, exists_error).type() !=
          std::filesystem::file_type::not_found) {
    throw InputError("--emit-scenario " + flags.emit_scenario +
                     ": the file exists; accepted: a new file name (remove the old one first)");
  }
  plan::PlanOptions options;
  options.total_steps = flags.steps;
  if (!flags.deadline.empty())
    options.deadline_s = require_duration_s(flags.deadline, "--deadline");
  if (flags.budget_given) options.budget_usd = flags.budget_usd;
  options.architecture = architecture;
  options.zones = split_list(flags.zones);
  if (!flags.zones.empty() && options.zones.empty()) {
    throw InputError("--zones: \"" + flags.zones +
                     "\" names no zone; accepted: comma-separated zones or regions, e.g. "
                     "us-west1-b,europe-west4");
  }
  options.max_regions = flags.regions;
  options.max_servers = flags.max_servers;
  if (architecture == perf::Architecture::allreduce) {
    options.max_workers_for_batch = flags.batch.batch().max_workers(reference_batch(flags));
  }
  options.top_k = flags.top_k;
  options.confidence = flags.confidence;
  options.runs = flags.runs;
  options.seed = flags.seed;
  options.threads = flags.threads > 0
                        ? flags.threads
                        : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));

  perf::ThroughputParams params;
  flags.batch.set_params(params);
  if (!flags.workload.empty()) params.values["workload"] = flags.workload;
  if (!flags.profile.empty()) params.values["profile"] = flags.profile;
  if (!flags.model_file.empty()) params.values["model"] = flags.model_file;
  const std::string batch_text = flags.batch.batch().text(reference_batch(flags));
  std::shared_ptr<const perf::ThroughputModel> throughput =
      perf::create_throughput_model(flags.throughput, params);
  cloud::Catalog catalog = cloud::load_catalog(flags.catalog);
  options.notice_s = market_notice_s(flags, catalog);

  // Spot servers are revoked by the GCE 2019 lifetime distribution of their GPU (all GPUs pooled
  // for GPUs it has no data for), or by the --market given; start-up delays are CM-DARE's.
  const std::string data_dir = market::resolve_data_dir(flags.data_dir);
  if (!flags.market_params.empty() && flags.market.empty()) {
    throw InputError("--market-param: accepted only with --market MODEL");
  }
  if (!flags.market.empty()) {
    std::shared_ptr<const market::RevocationModel> given = market::create_revocation_model(
        flags.market, market::params_from_words(flags.market_params, "--market-param"),
        {data_dir, ""});
    options.market_for = [given](const cloud::InstanceType&) { return given; };
  } else {
    auto models =
        std::make_shared<std::map<std::string, std::shared_ptr<const market::RevocationModel>>>();
    auto mutex = std::make_shared<std::mutex>();
    options.market_for = [models, mutex, data_dir](const cloud::InstanceType& type) {
      const std::string gpu = lifetime_gpu(type);
      std::lock_guard<std::mutex> lock(*mutex);
      auto& model = (*models)[gpu];
      if (!model) {
        market::ModelParams p;
        p.values["gpu"] = gpu;
        model = market::create_revocation_model("lifetime", p, {data_dir, ""});
      }
      return model;
    };
  }
  options.startup.spot_model = std::make_shared<const market::StartupModel>(
      market::StartupModel::load_or_default(data_dir, cloud::Market::spot));
  options.startup.on_demand_model = std::make_shared<const market::StartupModel>(
      market::StartupModel::load_or_default(data_dir, cloud::Market::on_demand));

  const std::string quantile = plan::format_quantile(flags.confidence);
  if (!flags.evaluate.empty()) {
    const perf::ClusterSpec spec = perf::parse_cluster_spec(flags.evaluate, catalog);
    perf::require_priced_zones(spec, catalog);
    perf::require_no_servers_for_allreduce(spec, options.architecture, "--evaluate");
    plan::Configuration configuration;
    for (const auto& entry : spec.entries) {
      if (entry.parameter_server && entry.market != cloud::Market::on_demand) {
        throw InputError("--evaluate " + flags.evaluate +
                         ": a parameter server must be on-demand (write ps or ps:on-demand)");
      }
      auto& list = entry.parameter_server ? configuration.parameter_servers : configuration.workers;
      list.push_back({entry.type, entry.market, entry.count});
    }
    if (options.architecture == perf::Architecture::allreduce) {
      // As `transient train` refuses it: --emit-train-flags wrote a job train would not run.
      flags.batch.batch().require_a_sample_per_worker(
          configuration.shape(options.architecture).total_workers(), reference_batch(flags),
          flags.batch.source());
    }
    perf::require_network(configuration.shape(options.architecture), flags.catalog);
    plan::Planner planner(std::move(catalog), throughput, options);
    const plan::Evaluation e = planner.evaluate_with_advice(configuration, "evaluate");
    if (const auto line = emit(flags, e, "", options, data_dir)) {
      fmt::print("{}\n", *line);
      return;
    }
    if (flags.json) {
      nlohmann::json out = evaluation_json(e);
      out["spec"] = flags.evaluate;
      if (!flags.emit_scenario.empty()) out["scenario_file"] = flags.emit_scenario;
      out["steps"] = flags.steps;
      out["architecture"] = perf::to_string(architecture);
      add_batch_json(out, flags);
      out["runs"] = flags.runs;
      if (options.deadline_s != sim::kNoDeadline) out["deadline_s"] = options.deadline_s;
      if (flags.budget_given) out["budget_usd"] = flags.budget_usd;
      fmt::print("{}\n", out.dump(2));
      return;
    }
    fmt::print("{}\n{} of {} on {} ({}), {} Monte Carlo runs\n\n", throughput->describe(),
               plan::format_step_count(flags.steps), batch_text, e.configuration.text(),
               perf::to_string(architecture), flags.runs);
    print_header(quantile);
    print_row(e, quantile);
    fmt::print(
        "\nspeed {:.3g} steps/s, step time {:.4g} s (bottleneck: {}); without revocations {} and "
        "${:.2f}\n",
        e.steps_per_s, e.step_time_s, e.bottleneck.empty() ? "unknown" : e.bottleneck,
        plan::format_hours(e.predicted_time_s), e.predicted_cost_usd);
    if (options.deadline_s != sim::kNoDeadline || flags.budget_given) {
      fmt::print("{}: {}\n", e.acceptable ? "acceptable" : "NOT acceptable", e.verdict);
      if (e.policy) fmt::print("policy: {}\n", e.policy->text());
    }
    if (!flags.emit_scenario.empty()) fmt::print("scenario written to {}\n", flags.emit_scenario);
    return;
  }

  perf::require_network(catalog.types(), options.architecture, options.max_servers, flags.catalog);
  plan::Planner planner(std::move(catalog), throughput, options);
  const plan::PlanResult result = planner.plan();
  // Emitted first: with no plan to emit, nothing is written.
  const std::optional<std::string> train_flags =
      emit(flags, result.recommended, result.reason, options, data_dir);
  const std::string title =
      fmt::format("{} of {}, {}, {}{}{}", plan::format_step_count(flags.steps),
                  flags.workload.empty() ? flags.profile : flags.workload, batch_text,
                  perf::to_string(architecture),
                  options.deadline_s != sim::kNoDeadline
                      ? ", deadline " + plan::format_hours(options.deadline_s)
                      : "",
                  flags.budget_given ? fmt::format(", budget ${:.2f}", flags.budget_usd) : "");
  if (!flags.plot.empty()) {
    plan::ParetoLimits limits;
    if (options.deadline_s != sim::kNoDeadline) limits.deadline_s = options.deadline_s;
    if (flags.budget_given) limits.budget_usd = flags.budget_usd;
    const std::string picture = plan::render_pareto_svg(result, title, limits);
    // A command that fails writes nothing: the scenario just emitted (a new file) goes too.
    const auto remove_emitted = [&] {
      std::error_code ignored;
      if (!flags.emit_scenario.empty()) std::filesystem::remove(flags.emit_scenario, ignored);
    };
    try {
      write_file_atomically(flags.plot, report::wants_png(flags.plot)
                                            ? report::svg_to_png(picture, flags.plot, 2.0)
                                            : picture);
    } catch (const InputError& error) {
      remove_emitted();
      throw InputError("--plot " + std::string(error.what()));
    } catch (...) {
      remove_emitted();
      throw;
    }
  }
  // The picture is written beside what is emitted (--emit-train-flags prints only the flags).
  if (train_flags) {
    fmt::print("{}\n", *train_flags);
    return;
  }
  if (flags.json) {
    nlohmann::json out;
    out["feasible"] = result.feasible;
    out["reason"] = result.reason;
    out["steps"] = flags.steps;
    out["architecture"] = perf::to_string(architecture);
    add_batch_json(out, flags);
    if (options.deadline_s != sim::kNoDeadline) out["deadline_s"] = options.deadline_s;
    if (flags.budget_given) out["budget_usd"] = flags.budget_usd;
    out["confidence"] = flags.confidence;
    out["runs"] = flags.runs;
    out["mip_solves"] = result.mip_solves;
    nlohmann::json flopp = nlohmann::json::array();
    for (const auto& f : result.flopp) {
      flopp.push_back({{"type", f.type.name},
                       {"zone", f.type.zone},
                       {"market", std::string(cloud::to_string(f.market))},
                       {"tflops", f.tflops},
                       {"usd_per_h", f.usd_per_h},
                       {"pflop_per_usd", f.pflop_per_usd}});
    }
    out["flopp"] = flopp;
    for (const auto& [key, list] :
         {std::pair{"candidates", &result.candidates}, std::pair{"baselines", &result.baselines},
          std::pair{"pareto", &result.pareto}}) {
      nlohmann::json items = nlohmann::json::array();
      for (const auto& e : *list) items.push_back(evaluation_json(e));
      out[key] = items;
    }
    out["recommended"] = result.recommended ? evaluation_json(*result.recommended) : nullptr;
    if (!flags.emit_scenario.empty()) out["scenario_file"] = flags.emit_scenario;
    fmt::print("{}\n", out.dump(2));
    return;
  }

  fmt::print("{}\n", throughput->describe());
  const std::size_t shown = std::min<std::size_t>(8, result.flopp.size());
  fmt::print("FLOPP ranking (GPU PFLOP per $, best {} of {} offers):\n", shown,
             result.flopp.size());
  auto offer_name = [](const plan::FloppEntry& f) {
    return f.type.name + (f.type.zone.empty() ? "" : " " + f.type.zone);
  };
  std::size_t name_width = 0;  // the longest name shown, so that the columns line up
  for (std::size_t i = 0; i < shown; ++i) {
    name_width = std::max(name_width, offer_name(result.flopp[i]).size());
  }
  for (std::size_t i = 0; i < shown; ++i) {
    const auto& f = result.flopp[i];
    fmt::print("  {:>2}. {:<{}} {:<10} {:>8.3f} $/h {:>7.2f} PFLOP/$\n", i + 1, offer_name(f),
               name_width, cloud::to_string(f.market), f.usd_per_h, f.pflop_per_usd);
  }
  fmt::print("\ncandidates from the programme ({} CBC solves), {} Monte Carlo runs each:\n",
             result.mip_solves, flags.runs);
  if (result.candidates.empty()) {
    fmt::print("  none: no configuration meets the request, even without revocations\n");
  } else {
    print_header(quantile);
    for (const auto& e : result.candidates) print_row(e, quantile);
  }
  fmt::print("\nbaselines:\n");
  print_header(quantile);
  for (const auto& e : result.baselines) print_row(e, quantile);
  fmt::print("\nPareto front (time against cost, no revocations):\n");
  for (const auto& e : result.pareto) {
    check_figures(e);
    fmt::print("  {:>9} {:>9}  {}\n", plan::format_hours(e.predicted_time_s),
               fmt::format("${:.2f}", e.predicted_cost_usd), e.configuration.text());
  }
  fmt::print("\n");
  if (result.recommended) {
    const auto& r = *result.recommended;
    fmt::print(
        "recommended ({}): {}\n  {}; expected {} and ${:.2f}, P(miss) {:.3f}\n  policy: {}\n",
        r.label, r.configuration.text(), r.verdict, plan::format_hours(r.expected_time_s),
        r.expected_cost_usd, r.deadline_miss_probability, r.policy ? r.policy->text() : "");
    fmt::print("  ({})\n", result.reason);
  } else {
    fmt::print("no plan recommended: {}\n", result.reason);
  }
  if (!flags.plot.empty()) fmt::print("Pareto front written to {}\n", flags.plot);
  if (!flags.emit_scenario.empty()) fmt::print("scenario written to {}\n", flags.emit_scenario);
}

}  // namespace

void add_plan_command(CLI::App& app) {
  auto flags = std::make_shared<PlanFlags>();
  CLI::App* cmd = app.add_subcommand(
      "plan",
      "Which cluster to rent to train N steps by a deadline and/or within a budget: FLOPP "
      "ranking, a mixed-integer programme (CBC), a Monte Carlo risk check, the Pareto front "
      "(docs/plan.md)");
  cmd->add_option("--workload", flags->workload, "a built-in workload, e.g. resnet-32");
  cmd->add_option("--profile", flags->profile, "a workload profile JSON file");
  cmd->add_option("--steps", flags->steps,
                  "steps to train, as `transient train --steps` counts them (one update each)")
      ->required()
      ->check(kSteps);
  cmd->add_option("--deadline", flags->deadline, "finish within this duration, e.g. 2h");
  cmd->add_option("--budget", flags->budget_usd, "spend at most this many dollars")
      ->transform(within(bounds::kBudgetUsd))
      ->each([flags](const std::string&) { flags->budget_given = true; });
  cmd->add_option("--catalog", flags->catalog, "a built-in catalog name or a catalog CSV")
      ->capture_default_str();
  cmd->add_option("--zones", flags->zones, "comma-separated zones or regions (default: all)");
  cmd->add_option("--regions", flags->regions,
                  "regions one cluster may span; links between them slow the all-reduce (0: any)")
      ->capture_default_str()
      ->transform(within(Bound{0, 64, "regions", true}));
  cmd->add_option("--max-servers", flags->max_servers,
                  "servers at most (1..64; a server of k GPUs runs k workers)")
      ->capture_default_str()
      ->transform(within(Bound{1, 64, "servers", true}));
  cmd->add_option("--arch", flags->arch, "allreduce (ours) or ps (asynchronous parameter server)")
      ->capture_default_str();
  flags->batch.add_to(*cmd);
  cmd->add_option("--confidence", flags->confidence,
                  "quantile of simulated time that must meet the deadline")
      ->transform(within(Bound{0.01, 0.999, ""}))
      ->capture_default_str();
  cmd->add_option("--runs", flags->runs, "Monte Carlo runs per plan (0: no simulation)")
      ->transform(within(Bound{0, 1e5, "runs", true}))
      ->capture_default_str();
  cmd->add_option("--seed", flags->seed, "seed of run 0; run i uses seed + i")
      ->transform(kSeed)
      ->capture_default_str();
  cmd->add_option("--threads", flags->threads, "Monte Carlo threads (default: the cores)")
      ->transform(within(Bound{1, 256, "threads", true}));
  cmd->add_option("--top-k", flags->top_k, "candidates from the programme")
      ->transform(within(Bound{1, 100, "candidates", true}))
      ->capture_default_str();
  cmd->add_option("--throughput", flags->throughput, "analytic or fitted")->capture_default_str();
  cmd->add_option("--model", flags->model_file, "a model file written by `transient fit`");
  cmd->add_option("--evaluate", flags->evaluate,
                  "judge this cluster instead of searching, e.g. 4xk80:spot,1xps (predict's "
                  "SPEC; TYPE@ZONE where the catalog sells TYPE in zones at different prices)");
  cmd->add_option("--data-dir", flags->data_dir,
                  "the shared measurements (default: the build's ../shared/data)");
  cmd->add_option("--market", flags->market,
                  "the revocation model of spot servers (`transient market list`), e.g. trace "
                  "(default: the GCE 2019 lifetimes of each server's GPU)");
  cmd->add_option("--market-param", flags->market_params,
                  "KEY=VALUE parameter of --market (repeatable), e.g. file=us-west-2a_k80_1");
  cmd->add_option("--plot", flags->plot,
                  "write the Pareto front as a picture: FILE.svg or FILE.png");
  auto* json = cmd->add_flag("--json", flags->json, "print JSON");
  cmd->add_option("--emit-scenario", flags->emit_scenario,
                  "write the recommended cluster and policy as a scenario FILE.toml that "
                  "`transient simulate` runs (a new file)");
  cmd->add_flag("--emit-train-flags", flags->emit_train_flags,
                "print only the flags of `transient coordinator` that run the recommended plan")
      ->excludes(json);
  cmd->callback([flags, cmd] {
    flags->search_flags_given.clear();
    for (const auto& flag : kSearchFlags) {
      if (cmd->count(flag) > 0) flags->search_flags_given.push_back(flag);
    }
    run_plan(*flags);
  });
}

}  // namespace transient::cli
