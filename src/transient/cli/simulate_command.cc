// `transient simulate SCENARIO.toml [--runs N] [--seed S] [--threads T] [--json]`: one run prints
// its timeline and summary, many runs the statistics (sim/monte_carlo.h).
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "transient/cli/commands.h"
#include "transient/cli/validators.h"
#include "transient/core/bounds.h"
#include "transient/core/duration.h"
#include "transient/core/error.h"
#include "transient/core/text.h"
#include "transient/perf/registry.h"
#include "transient/sim/market_policy.h"
#include "transient/sim/monte_carlo.h"
#include "transient/sim/recovery_model.h"
#include "transient/sim/region_simulator.h"
#include "transient/sim/replacement_policy.h"
#include "transient/sim/scenario_loader.h"
#include "transient/sim/simulator.h"

namespace transient::cli {
namespace {

struct SimulateFlags {
  std::string scenario;    // the scenario file
  int runs = 1;            // 1 = one run with its timeline
  std::uint64_t seed = 1;  // run i uses seed + i
  int threads = 0;         // 0 = the machine's cores
  bool json = false;       // print JSON instead of text
  bool list = false;       // print the registries and exit
  std::string data_dir;    // the shared data directory
};

void print_list() {
  std::printf("throughput models ([throughput] model):\n");
  for (const auto& m : perf::throughput_models()) {
    std::printf("  %-24s %s\n", m.name.c_str(), m.description.c_str());
  }
  std::printf("recovery models ([recovery] model):\n");
  for (const auto& m : sim::recovery_models()) {
    std::printf("  %-24s %s\n", m.name.c_str(), m.description.c_str());
  }
  std::printf("replacement policies ([policy] replacement):\n");
  for (const auto& m : sim::replacement_policies()) {
    std::printf("  %-24s %s\n", m.name.c_str(), m.description.c_str());
  }
  std::printf("market policies ([policy] market, with a deadline):\n");
  std::printf("  %-24s %s\n", "none",
              "the cluster as written, revoked servers replaced by the "
              "replacement policy");
  for (const auto& m : sim::market_policies()) {
    std::printf("  %-24s %s\n", m.name.c_str(), m.description.c_str());
  }
}

// `n` with its thousands grouped: 1,000,000.
std::string grouped(long long n) {
  std::string digits = std::to_string(n);
  for (int at = static_cast<int>(digits.size()) - 3; at > (n < 0 ? 1 : 0); at -= 3) {
    digits.insert(static_cast<std::size_t>(at), ",");
  }
  return digits;
}

// sim::kMaxRequestsPerRun as people write it: "1,000,000".
std::string max_requests_text() { return grouped(sim::kMaxRequestsPerRun); }

std::string deadline_text(const sim::Scenario& s) {
  return s.deadline_s == sim::kNoDeadline ? "none" : format_duration(s.deadline_s);
}

nlohmann::json run_json(const sim::RunResult& r) {
  return {{"finished", r.finished},
          {"failed", r.failed},
          {"stopped_at_budget", r.stopped_at_budget},
          {"request_cap", r.request_cap},
          {"missed_deadline", r.missed_deadline},
          {"time_s", r.time_s},
          {"cost_usd", r.cost_usd},
          {"spot_cost_usd", r.spot_cost_usd},
          {"revocations", r.revocations},
          {"requests", r.requests},
          {"redone_steps", r.redone_steps},
          {"checkpoints", r.checkpoints},
          {"events", r.events}};
}

// A time that never comes (sim::summarize counts an unfinished run as infinitely long) is -1,
// as in `transient plan --json`.
double json_number(double value) { return std::isinf(value) && value > 0 ? -1.0 : value; }

nlohmann::json distribution_json(const sim::Distribution& d) {
  return {{"mean", json_number(d.mean)},
          {"p50", json_number(d.p50)},
          {"p95", json_number(d.p95)},
          {"p99", json_number(d.p99)}};
}

// Every figure about to be printed is a number (docs/errors.md): a run's time and costs, and the
// Monte Carlo distributions of time and cost; only a time may be infinite ("never": too many runs
// did not finish).
void check_figures(const sim::RunResult& r) {
  check_result(r.time_s, "run time");
  check_result(r.cost_usd, "cost of the run");
  check_result(r.spot_cost_usd, "spot cost of the run");
}

void check_figures(const sim::MonteCarloSummary& s) {
  for (const auto& [name, d] : {std::pair{"time", &s.time_s}, std::pair{"cost", &s.cost_usd}}) {
    for (const double value : {d->mean, d->p50, d->p95, d->p99}) {
      if (d == &s.time_s && std::isinf(value) && value > 0) continue;
      check_result(value, std::string(name) + " distribution of the Monte Carlo runs");
    }
  }
  check_result(s.deadline_miss_probability, "deadline miss probability");
}

// Hours with three decimals, or "never".
std::string hours_text(double seconds) {
  return std::isinf(seconds) ? "never" : fmt::format("{:.3f}", seconds / 3600);
}

// The statistics table's header and its time and cost rows: the mean over the finished runs, the
// percentiles over all (sim/monte_carlo.h).
void print_time_and_cost(const sim::Distribution& t, const sim::Distribution& c) {
  std::printf("%-22s %10s %10s %10s %10s\n", "", "mean", "p50", "p95", "p99");
  std::printf("%-22s %10s %10s %10s %10s\n", "time (h)", hours_text(t.mean).c_str(),
              hours_text(t.p50).c_str(), hours_text(t.p95).c_str(), hours_text(t.p99).c_str());
  std::printf("%-22s %10.3f %10.3f %10.3f %10.3f\n", "cost ($)", c.mean, c.p50, c.p95, c.p99);
}

void print_one_run(const sim::Scenario& scenario, const SimulateFlags& flags) {
  sim::Simulator simulator(scenario);
  std::vector<sim::TimelineEntry> timeline;
  // The printed timeline leaves the periodic checkpoints out (the summary counts them); the JSON
  // one holds them, for `transient report` to draw.
  const sim::RunResult r = simulator.run(
      flags.seed, &timeline,
      flags.json ? sim::TimelineDetail::every_event : sim::TimelineDetail::without_checkpoints);
  check_figures(r);
  if (flags.json) {
    nlohmann::json events = nlohmann::json::array();
    for (const auto& e : timeline) {
      events.push_back({{"time_s", e.time_s},
                        {"event", std::string(sim::to_string(e.kind))},
                        {"server", e.server},
                        {"detail", e.detail}});
    }
    nlohmann::json out = run_json(r);
    out["scenario"] = scenario.name;
    out["seed"] = flags.seed;
    out["timeline"] = std::move(events);
    std::printf("%s\n", out.dump(2).c_str());
    return;
  }
  std::printf("scenario %s, seed %llu, one run\n\n", scenario.name.c_str(),
              static_cast<unsigned long long>(flags.seed));
  std::printf("%12s  %-10s %6s  %s\n", "time", "event", "server", "detail");
  // A timeline longer than a screenful or two shows its start and its end: a run of servers that
  // never live long enough has three million events, which no one reads (printing them was half of
  // that run's CPU). --json keeps every one.
  const std::size_t shown_at_each_end = 100;
  for (std::size_t i = 0; i < timeline.size(); ++i) {
    if (timeline.size() > 2 * shown_at_each_end && i == shown_at_each_end) {
      std::printf("%12s  ... %s events not shown (--json has every one) ...\n", "",
                  grouped(static_cast<long long>(timeline.size() - 2 * shown_at_each_end)).c_str());
      i = timeline.size() - shown_at_each_end;
    }
    const auto& e = timeline[i];
    std::printf("%12s  %-10s %6s  %s\n", format_duration(e.time_s).c_str(),
                std::string(sim::to_string(e.kind)).c_str(),
                e.server >= 0 ? ("#" + std::to_string(e.server)).c_str() : "", e.detail.c_str());
  }
  std::printf("\n");
  if (r.finished) {
    std::printf("finished %.0f steps in %s (%.2f h)\n", scenario.total_steps,
                format_duration(r.time_s).c_str(), r.time_s / 3600.0);
  } else {
    const std::string why =
        r.failed ? "failed"
        : r.stopped_at_budget
            ? fmt::format("renting stopped at the budget (${:.2f})", scenario.budget_usd)
        : r.request_cap ? fmt::format(
                              "gave up after {} server requests (servers that live "
                              "shorter than they take to start are requested without end)",
                              max_requests_text())
                        : "gave up";
    std::printf("NOT finished: %s after %s\n", why.c_str(), format_duration(r.time_s).c_str());
  }
  std::printf("cost $%.2f (spot servers $%.2f), %s requested, %s, %s redone, %s, %s\n", r.cost_usd,
              r.spot_cost_usd, counted(r.requests, "server").c_str(),
              counted(r.revocations, "revocation").c_str(),
              counted(std::llround(r.redone_steps), "step").c_str(),
              counted(r.checkpoints, "checkpoint").c_str(),
              counted(static_cast<long long>(r.events), "event").c_str());
  if (std::isfinite(scenario.budget_usd)) std::printf("budget $%.2f\n", scenario.budget_usd);
  std::printf("deadline %s%s\n", deadline_text(scenario).c_str(),
              scenario.deadline_s == sim::kNoDeadline ? ""
              : r.missed_deadline                     ? ": missed"
                                                      : ": met");
}

// A deadline that no run met is said under the header, before the figures, with how near the
// fastest run came: the table's P(miss) 1.0 alone reads as a run of bad luck.
void say_if_no_run_met_the_deadline(const sim::Scenario& scenario,
                                    const sim::MonteCarloSummary& s) {
  if (scenario.deadline_s == sim::kNoDeadline || s.runs == 0) return;
  if (s.deadline_miss_probability < 1.0) return;
  if (s.finished == 0) {
    std::printf("no run met the deadline (%s): none of the %d finished\n\n",
                deadline_text(scenario).c_str(), s.runs);
    return;
  }
  std::printf("no run met the deadline (%s): the fastest of the %d took %s\n\n",
              deadline_text(scenario).c_str(), s.runs,
              format_duration(s.sorted_time_s.front()).c_str());
}

void print_many_runs(const sim::Scenario& scenario, const SimulateFlags& flags, int threads) {
  sim::MonteCarloOptions options;
  options.runs = flags.runs;
  options.seed = flags.seed;
  options.threads = threads;
  const std::vector<sim::RunResult> results = sim::run_many(scenario, options);
  const sim::MonteCarloSummary s = sim::summarize(results);
  check_figures(s);
  if (flags.json) {
    // The runs' spread, for `transient report` to draw: times of the finished runs (the others
    // have none), costs of all runs.
    std::vector<double> times, costs;
    for (const auto& r : results) {
      if (r.finished) times.push_back(r.time_s);
      costs.push_back(r.cost_usd);
    }
    const auto histogram_json = [](const sim::Histogram& h) {
      return nlohmann::json{{"edges", h.edges}, {"counts", h.counts}};
    };
    constexpr int kBins = 20;
    nlohmann::json out = {{"scenario", scenario.name},
                          {"runs", s.runs},
                          {"seed", flags.seed},
                          {"finished", s.finished},
                          {"failed", s.failed},
                          {"budget_stops", s.budget_stops},
                          {"request_caps", s.request_caps},
                          {"time_s", distribution_json(s.time_s)},
                          {"cost_usd", distribution_json(s.cost_usd)},
                          {"revocations", distribution_json(s.revocations)},
                          {"redone_steps", distribution_json(s.redone_steps)},
                          {"mean_revocations", s.mean_revocations},
                          {"mean_redone_steps", s.mean_redone_steps},
                          {"deadline_miss_probability", s.deadline_miss_probability},
                          {"events", s.events},
                          {"histograms",
                           {{"time_s", histogram_json(sim::histogram(times, kBins))},
                            {"cost_usd", histogram_json(sim::histogram(costs, kBins))}}}};
    if (scenario.deadline_s != sim::kNoDeadline) out["deadline_s"] = scenario.deadline_s;
    if (std::isfinite(scenario.budget_usd)) out["budget_usd"] = scenario.budget_usd;
    std::printf("%s\n", out.dump(2).c_str());
    return;
  }
  std::printf("scenario %s: %d runs, seeds %llu..%llu, %d threads\n\n", scenario.name.c_str(),
              s.runs, static_cast<unsigned long long>(flags.seed),
              static_cast<unsigned long long>(flags.seed + s.runs - 1), threads);
  say_if_no_run_met_the_deadline(scenario, s);
  print_time_and_cost(s.time_s, s.cost_usd);
  const auto& v = s.revocations;
  std::printf("%-22s %10.3f %10.0f %10.0f %10.0f\n", "revocations", v.mean, v.p50, v.p95, v.p99);
  const auto& w = s.redone_steps;
  std::printf("%-22s %10.1f %10.1f %10.1f %10.1f\n\n", "redone steps", w.mean, w.p50, w.p95, w.p99);
  std::printf("finished               %d of %d (%d failed", s.finished, s.runs, s.failed);
  if (std::isfinite(scenario.budget_usd)) {
    std::printf(", %d stopped at the budget $%.2f", s.budget_stops, scenario.budget_usd);
  }
  std::printf(")\n");
  std::printf("P(miss deadline)       %.4f (deadline %s)\n", s.deadline_miss_probability,
              deadline_text(scenario).c_str());
  if (s.request_caps > 0) {
    std::printf(
        "note: %d of the runs gave up after %s server requests each, unfinished: servers that "
        "live shorter than they take to start are requested without end\n",
        s.request_caps, max_requests_text().c_str());
  }
}

// Several regions (sim/region_simulator.h): each run against the multi-region optimum.

std::string tick_text(const sim::Scenario& scenario, const sim::RegionTick& tick) {
  if (tick.mode == sim::ClusterMode::idle) return "idle";
  const std::string& region = scenario.regions[tick.region].name;
  return std::string(sim::to_string(tick.mode)) + " in " + region;
}

// The ratio of a run's cost to the optimum's, over the runs whose optimum meets the deadline.
double mean_cost_over_optimal(const std::vector<sim::RegionRunResult>& results, int* counted) {
  double sum = 0.0;
  *counted = 0;
  for (const auto& r : results) {
    if (!r.optimal.finished || !(r.optimal.cost_usd > 0.0)) continue;
    sum += r.run.cost_usd / r.optimal.cost_usd;
    ++*counted;
  }
  return *counted > 0 ? sum / *counted : 0.0;
}

std::string region_names(const sim::Scenario& scenario) {
  std::string names;
  for (const auto& region : scenario.regions) names += (names.empty() ? "" : ", ") + region.name;
  return names;
}

void print_one_region_run(const sim::Scenario& scenario, const SimulateFlags& flags) {
  sim::RegionSimulator simulator(scenario);
  const sim::RegionRunResult r = simulator.run(flags.seed);
  check_figures(sim::as_run_result(r.run));
  const double tick_s = scenario.decision_interval_s;
  if (flags.json) {
    nlohmann::json ticks = nlohmann::json::array();
    for (const auto& t : r.run.ticks) {
      // Idle before the first start, the job is in no region yet.
      const auto placed = static_cast<std::size_t>(t.region) < scenario.regions.size();
      ticks.push_back({{"mode", std::string(sim::to_string(t.mode))},
                       {"region", placed ? nlohmann::json(scenario.regions[t.region].name)
                                         : nlohmann::json(nullptr)}});
    }
    nlohmann::json out = {{"scenario", scenario.name},
                          {"seed", flags.seed},
                          {"regions", nlohmann::json::array()},
                          {"market_policy", scenario.market_policy},
                          {"finished", r.run.finished},
                          {"missed_deadline", r.run.missed_deadline},
                          {"time_s", r.run.finish_s},
                          {"cost_usd", r.run.cost_usd},
                          {"moves", r.run.moves},
                          {"optimal_finished", r.optimal.finished},
                          {"optimal_cost_usd", r.optimal.cost_usd},
                          {"optimal_moves", r.optimal.moves},
                          {"tick_s", tick_s},
                          {"ticks", std::move(ticks)}};
    for (const auto& region : scenario.regions) out["regions"].push_back(region.name);
    if (r.optimal.finished) out["cost_over_optimal"] = r.run.cost_usd / r.optimal.cost_usd;
    std::printf("%s\n", out.dump(2).c_str());
    return;
  }
  std::printf("scenario %s, seed %llu, one run in %zu regions (%s), %s policy\n\n",
              scenario.name.c_str(), static_cast<unsigned long long>(flags.seed),
              scenario.regions.size(), region_names(scenario).c_str(),
              scenario.market_policy.c_str());
  std::printf("%12s  %s\n", "time", "from then on");
  for (std::size_t i = 0; i < r.run.ticks.size(); ++i) {
    if (i > 0 && r.run.ticks[i] == r.run.ticks[i - 1]) continue;
    std::printf("%12s  %s\n", format_duration(i * tick_s).c_str(),
                tick_text(scenario, r.run.ticks[i]).c_str());
  }
  std::printf("\n");
  if (r.run.finished) {
    std::printf("finished %.0f steps in %s (%.2f h)\n", scenario.total_steps,
                format_duration(r.run.finish_s).c_str(), r.run.finish_s / 3600.0);
  } else {
    std::printf("NOT finished\n");
  }
  std::printf("cost $%.2f, %d moves between regions\n", r.run.cost_usd, r.run.moves);
  if (r.optimal.finished) {
    std::printf("optimal $%.2f (%d moves): the run cost %.3f x the multi-region optimum\n",
                r.optimal.cost_usd, r.optimal.moves, r.run.cost_usd / r.optimal.cost_usd);
  } else {
    std::printf("optimal: no schedule meets the deadline in these markets\n");
  }
  std::printf("deadline %s: %s\n", deadline_text(scenario).c_str(),
              r.run.missed_deadline ? "missed" : "met");
}

void print_many_region_runs(const sim::Scenario& scenario, const SimulateFlags& flags,
                            int threads) {
  sim::MonteCarloOptions options;
  options.runs = flags.runs;
  options.seed = flags.seed;
  options.threads = threads;
  const std::vector<sim::RegionRunResult> results = sim::run_many_regions(scenario, options);
  std::vector<sim::RunResult> runs, optima;
  double moves = 0.0;
  double optimal_moves = 0.0;
  for (const auto& r : results) {
    runs.push_back(sim::as_run_result(r.run));
    optima.push_back(sim::as_run_result(r.optimal));
    moves += r.run.moves;
    optimal_moves += r.optimal.moves;
  }
  const sim::MonteCarloSummary s = sim::summarize(runs);
  const sim::MonteCarloSummary o = sim::summarize(optima);
  check_figures(s);
  int counted = 0;
  const double ratio = mean_cost_over_optimal(results, &counted);
  const int n = static_cast<int>(results.size());
  if (flags.json) {
    nlohmann::json out = {{"scenario", scenario.name},
                          {"runs", s.runs},
                          {"seed", flags.seed},
                          {"regions", nlohmann::json::array()},
                          {"market_policy", scenario.market_policy},
                          {"finished", s.finished},
                          {"time_s", distribution_json(s.time_s)},
                          {"cost_usd", distribution_json(s.cost_usd)},
                          {"deadline_miss_probability", s.deadline_miss_probability},
                          {"deadline_s", scenario.deadline_s},
                          {"mean_moves", moves / n},
                          {"optimal",
                           {{"cost_usd", distribution_json(o.cost_usd)},
                            {"feasible_runs", o.finished},
                            {"mean_moves", optimal_moves / n}}},
                          // null: no run's optimum meets the deadline
                          {"cost_over_optimal", counted > 0 ? nlohmann::json(ratio) : nullptr},
                          {"runs_with_optimum", counted}};
    for (const auto& region : scenario.regions) out["regions"].push_back(region.name);
    std::printf("%s\n", out.dump(2).c_str());
    return;
  }
  std::printf(
      "scenario %s: %d runs in %zu regions (%s), %s policy, seeds %llu..%llu, %d threads\n\n",
      scenario.name.c_str(), s.runs, scenario.regions.size(), region_names(scenario).c_str(),
      scenario.market_policy.c_str(), static_cast<unsigned long long>(flags.seed),
      static_cast<unsigned long long>(flags.seed + s.runs - 1), threads);
  say_if_no_run_met_the_deadline(scenario, s);
  print_time_and_cost(s.time_s, s.cost_usd);
  const auto& oc = o.cost_usd;
  if (counted == 0) {
    // No optimum to compare with: no figures of one (its cost would read $0).
    std::printf("%-22s none: no schedule meets the deadline in these markets\n\n",
                "optimal cost ($)");
  } else {
    std::printf("%-22s %10.3f %10.3f %10.3f %10.3f\n\n", "optimal cost ($)", oc.mean, oc.p50,
                oc.p95, oc.p99);
    std::printf(
        "cost / optimal         %.3f (mean over the %d runs the optimum meets the deadline)\n",
        ratio, counted);
  }
  std::printf("moves between regions  %.2f a run (optimal %.2f)\n", moves / n, optimal_moves / n);
  std::printf("finished               %d of %d\n", s.finished, s.runs);
  std::printf("P(miss deadline)       %.4f (deadline %s)\n", s.deadline_miss_probability,
              deadline_text(scenario).c_str());
}

}  // namespace

void add_simulate_command(CLI::App& app) {
  auto flags = std::make_shared<SimulateFlags>();
  CLI::App* cmd = app.add_subcommand(
      "simulate",
      "Simulate a training job on a transient cluster (docs/scenarios.md): one run prints its "
      "timeline, many runs the statistics of time, cost, revocations and missed deadlines.");
  cmd->add_option("scenario", flags->scenario, "the scenario file (TOML)");
  cmd->add_option("--runs", flags->runs, "number of Monte Carlo runs (default 1: one timeline)")
      ->transform(within(Bound{1, 1e8, "runs", true}));
  cmd->add_option("--seed", flags->seed, "seed of run 0; run i uses seed + i (default 1)")
      ->transform(kSeed);
  cmd->add_option("--threads", flags->threads, "threads (default: the machine's cores)")
      ->transform(within(Bound{1, 1024, "threads", true}));
  cmd->add_flag("--json", flags->json, "print JSON");
  cmd->add_flag("--list", flags->list,
                "list the throughput models, recovery models and policies, and exit");
  cmd->add_option("--data-dir", flags->data_dir,
                  "the shared measurements and traces (default: the build's ../shared/data)");
  cmd->callback([flags] {
    if (flags->list) {
      print_list();
      return;
    }
    if (flags->scenario.empty()) {
      throw InputError("simulate needs a scenario file (see docs/scenarios.md and examples/)");
    }
    sim::ScenarioLoadOptions options;
    options.data_dir = flags->data_dir;
    const sim::Scenario scenario = sim::load_scenario(flags->scenario, options);
    int threads = flags->threads;
    if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
    if (!scenario.regions.empty()) {
      if (flags->runs == 1) {
        print_one_region_run(scenario, *flags);
      } else {
        print_many_region_runs(scenario, *flags, threads);
      }
    } else if (flags->runs == 1) {
      print_one_run(scenario, *flags);
    } else {
      print_many_runs(scenario, *flags, threads);
    }
  });
}

}  // namespace transient::cli
