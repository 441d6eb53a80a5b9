// `transient market list|show|sample|startup`: the revocation, availability and start-up models.
#include <fmt/format.h>

#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "transient/cli/commands.h"
#include "transient/cli/validators.h"
#include "transient/core/duration.h"
#include "transient/core/error.h"
#include "transient/market/data_dir.h"
#include "transient/market/lifetime_model.h"
#include "transient/market/model_summary.h"
#include "transient/market/registry.h"
#include "transient/market/startup_model.h"

namespace transient::cli {
namespace {

struct MarketArgs {
  std::string model;
  std::vector<std::string> params;  // key=value
  std::string data_dir;
  bool json = false;
  int n = 0;
  std::uint64_t seed = 1;
};

std::unique_ptr<market::RevocationModel> build(const MarketArgs& args) {
  market::ModelContext context;
  context.data_dir = market::resolve_data_dir(args.data_dir);
  return market::create_revocation_model(
      args.model, market::params_from_words(args.params, "market parameter"), context);
}

// Seconds as hours for tables, "never" for kNever.
std::string hours(double seconds) {
  return std::isfinite(seconds) ? fmt::format("{:.2f} h", seconds / 3600.0) : "never";
}

nlohmann::json json_seconds(double seconds) {
  return std::isfinite(seconds) ? nlohmann::json(seconds) : nlohmann::json(nullptr);
}

nlohmann::json summary_json(const market::ModelSummary& s) {
  return {{"draws", s.draws},
          {"seed", s.seed},
          {"median_lifetime_s", json_seconds(s.median_lifetime_s)},
          {"mean_lifetime_s", json_seconds(s.mean_lifetime_s)},
          {"share_revoked_1h", s.share_revoked_1h},
          {"share_revoked_2h", s.share_revoked_2h},
          {"share_at_cap", s.share_at_cap},
          {"share_never", s.share_never},
          {"mtbf_s", json_seconds(s.mtbf_s)}};
}

void print_list() {
  for (const auto& info : market::revocation_models()) {
    fmt::print("{:<12} {}\n", info.name, info.description);
    for (const auto& param : info.params) fmt::print("{:<14} {}\n", "", param);
  }
}

// Lifetimes drawn by `market show` and `market sample`: ten million take a few seconds.
constexpr Bound kDraws{1, 1e7, "draws", true};

void show(const MarketArgs& args) {
  const auto model = build(args);
  const int draws = args.n > 0 ? args.n : 100000;
  const market::ModelSummary fitted = market::summarize(*model, draws, args.seed);
  // A model fitted on measured lifetimes is shown beside them: the validation at a glance.
  const auto* lifetime = dynamic_cast<const market::LifetimeModel*>(model.get());
  const bool has_source = lifetime && lifetime->sample_count() > 0;
  market::ModelSummary source;
  if (has_source) {
    source = market::summarize_lifetimes(lifetime->measured_lifetimes_s(), model->cap_s());
  }
  if (args.json) {
    nlohmann::json out = {{"model", model->name()},
                          {"description", model->describe()},
                          {"cap_s", json_seconds(model->cap_s())},
                          {"summary", summary_json(fitted)}};
    if (has_source) out["measured"] = summary_json(source);
    fmt::print("{}\n", out.dump(2));
    return;
  }
  fmt::print("{}: {}\ncap: {}\n\n", model->name(), model->describe(), hours(model->cap_s()));
  const std::string head = fmt::format("model ({} draws, seed {})", fitted.draws, fitted.seed);
  fmt::print("{:<36} {:>26}", "", head);
  if (has_source) fmt::print(" {:>24}", fmt::format("measured ({} servers)", source.draws));
  fmt::print("\n");
  auto row = [&](const char* what, auto value_of) {
    fmt::print("{:<36} {:>26}", what, value_of(fitted));
    if (has_source) fmt::print(" {:>24}", value_of(source));
    fmt::print("\n");
  };
  auto share = [](double x) { return fmt::format("{:.1f}%", 100.0 * x); };
  row("median lifetime", [&](const auto& s) { return hours(s.median_lifetime_s); });
  row("mean lifetime", [&](const auto& s) { return hours(s.mean_lifetime_s); });
  row("revoked within 1 h", [&](const auto& s) { return share(s.share_revoked_1h); });
  row("revoked within 2 h", [&](const auto& s) { return share(s.share_revoked_2h); });
  row("reached the cap", [&](const auto& s) { return share(s.share_at_cap); });
  if (fitted.share_never > 0.0) {
    row("never revoked", [&](const auto& s) { return share(s.share_never); });
  }
  row("mean time between revocations", [&](const auto& s) { return hours(s.mtbf_s); });
  fmt::print(
      "\nmean time between revocations: of one server kept replaced, mean lifetime / share "
      "revoked before the cap\n");
}

void sample(const MarketArgs& args) {
  if (args.n <= 0) throw InputError("--n " + std::to_string(args.n) + ": accepted: a count >= 1");
  const auto model = build(args);
  const auto lifetimes = market::sample_lifetimes_s(*model, args.n, args.seed);
  if (args.json) {
    nlohmann::json values = nlohmann::json::array();
    for (double lifetime : lifetimes) values.push_back(json_seconds(lifetime));
    const nlohmann::json out = {{"model", model->name()},
                                {"description", model->describe()},
                                {"seed", args.seed},
                                {"lifetimes_s", values}};
    fmt::print("{}\n", out.dump(2));
    return;
  }
  fmt::print("lifetime_s\n");
  for (double lifetime : lifetimes) {
    if (std::isfinite(lifetime)) {
      fmt::print("{:.1f}\n", lifetime);
    } else {
      fmt::print("never\n");
    }
  }
}

struct StartupArgs {
  std::string market = "spot";
  std::string gpu;
  std::string region;
  std::string data_dir;
  bool json = false;
};

void startup(const StartupArgs& args) {
  const auto market = cloud::parse_market(args.market);
  if (!market) {
    throw InputError("--market " + args.market +
                     ": accepted: spot, preemptible, on-demand, ondemand, on_demand");
  }
  const auto model = market::StartupModel::load_cmdare(market::resolve_data_dir(args.data_dir),
                                                       *market, args.gpu, args.region);
  if (args.json) {
    const nlohmann::json out = {
        {"description", model.describe()},  {"samples", model.samples_s().size()},
        {"mean_s", model.mean_s()},         {"median_s", model.median_s()},
        {"stddev_s", model.stddev_s()},     {"min_s", model.samples_s().front()},
        {"max_s", model.samples_s().back()}};
    fmt::print("{}\n", out.dump(2));
    return;
  }
  fmt::print("{}\nmean {}, median {}, standard deviation {}, min {}, max {}\n", model.describe(),
             format_duration(model.mean_s()), format_duration(model.median_s()),
             format_duration(model.stddev_s()), format_duration(model.samples_s().front()),
             format_duration(model.samples_s().back()));
}

void add_model_arguments(CLI::App* command, MarketArgs& args) {
  command->add_option("model", args.model, "a revocation model (see `transient market list`)")
      ->required();
  command->add_option("params", args.params,
                      "model parameters key=value, e.g. gpu=K80 zone=us-east1-c, file=p3 "
                      "offset=2h");
  command->add_option("--data-dir", args.data_dir,
                      "the shared data directory (default: the build's, else ./shared/data or "
                      "../shared/data)");
  command->add_option("--seed", args.seed, "seed of the draws")
      ->transform(kSeed)
      ->capture_default_str();
  command->add_flag("--json", args.json, "print JSON");
}

}  // namespace

void add_market_command(CLI::App& app) {
  auto* market = app.add_subcommand(
      "market", "Revocation, availability and start-up models fitted on real measurements");
  market->require_subcommand(1);
  market->add_subcommand("list", "The revocation models, their parameters and data")
      ->callback(print_list);

  auto show_args = std::make_shared<MarketArgs>();
  auto* show_command = market->add_subcommand(
      "show",
      "A model's median lifetime, share revoked within 1 h and 2 h, share reaching the "
      "cap, mean time between revocations (by sampling with a fixed seed)");
  add_model_arguments(show_command, *show_args);
  show_command->add_option("--n", show_args->n, "draws (default 100000)")
      ->transform(within(kDraws));
  show_command->callback([show_args] { show(*show_args); });

  auto sample_args = std::make_shared<MarketArgs>();
  auto* sample_command =
      market->add_subcommand("sample", "Draw server lifetimes (seconds) from a model");
  add_model_arguments(sample_command, *sample_args);
  sample_command->add_option("--n", sample_args->n, "lifetimes to draw")
      ->required()
      ->transform(within(kDraws));
  sample_command->callback([sample_args] { sample(*sample_args); });

  auto startup_args = std::make_shared<StartupArgs>();
  auto* startup_command = market->add_subcommand(
      "startup", "Start-up delays (provisioning+staging+booting) measured by CM-DARE");
  startup_command->add_option("--market", startup_args->market, "spot or on-demand")
      ->capture_default_str();
  startup_command->add_option("--gpu", startup_args->gpu, "K80 or P100 (default both)");
  startup_command->add_option("--region", startup_args->region, "east or west (default both)");
  startup_command->add_option("--data-dir", startup_args->data_dir, "the shared data directory");
  startup_command->add_flag("--json", startup_args->json, "print JSON");
  startup_command->callback([startup_args] { startup(*startup_args); });
}

}  // namespace transient::cli
