#include "transient/plan/planner.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "transient/core/duration.h"
#include "transient/core/error.h"
#include "transient/plan/cluster_mip.h"
#include "transient/sim/monte_carlo.h"
#include "transient/sim/recovery_model.h"

namespace transient::plan {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// Periodic checkpoints of the simulated plans: TensorFlow's default, and our trainer's.
constexpr double kCheckpointIntervalS = 600.0;
// The price that keeps an offer out of a programme (an offer of the other market).
constexpr double kUnavailableUsdPerH = 1e9;

// One (type, market) the programme may buy, in the cheapest zone that sells it.
struct Offer {
  cloud::InstanceType type;
  cloud::Market market = cloud::Market::spot;
  double usd_per_h = 0.0;
};

std::string money(double usd) { return fmt::format("${:.2f}", usd); }

}  // namespace

std::string format_steps(double steps) {
  std::string digits = fmt::format("{:.0f}", steps);
  std::string out;
  const int n = static_cast<int>(digits.size());
  for (int i = 0; i < n; ++i) {
    out += digits[i];
    if ((n - i - 1) % 3 == 0 && i != n - 1) out += ',';
  }
  return out;
}

std::string format_hours(double seconds) {
  if (!std::isfinite(seconds)) return "never";
  if (seconds < 3600.0) return fmt::format("{:.0f} min", seconds / 60.0);
  return fmt::format("{:.2f} h", seconds / 3600.0);
}

Planner::Planner(cloud::Catalog catalog, std::shared_ptr<const perf::ThroughputModel> throughput,
                 PlanOptions options)
    : catalog_(std::move(catalog)), throughput_(std::move(throughput)), options_(options) {
  TRANSIENT_CHECK(throughput_ != nullptr);
  if (!(options_.total_steps > 0.0)) throw InputError("--steps: accepted: a number of steps > 0");
  if (!(options_.deadline_s > 0.0)) {
    throw InputError("--deadline " + format_duration(options_.deadline_s) +
                     ": accepted: a duration > 0, e.g. 2h or 90min");
  }
  if (!(options_.budget_usd > 0.0)) {
    throw InputError(
        fmt::format("--budget {}: accepted: dollars > 0, e.g. 5 or 12.50", options_.budget_usd));
  }
  if (options_.max_servers < 1) throw InputError("--max-servers: accepted: 1 or more");
  if (!(options_.confidence > 0.0 && options_.confidence < 1.0)) {
    throw InputError(fmt::format("--confidence {}: accepted: a share in (0, 1), e.g. 0.95",
                                 options_.confidence));
  }
  if (options_.runs < 0) throw InputError("--runs: accepted: 0 or more");
  if (options_.threads < 1) options_.threads = 1;

  // The support server: cheapest on-demand CPU-only type in the zones, else cheapest on-demand.
  const cloud::InstanceType* best = nullptr;
  for (bool cpu_only : {true, false}) {
    for (const auto& type : catalog_.types()) {
      if (cpu_only && type.gpus > 0) continue;
      if (!type.has_market(cloud::Market::on_demand)) continue;
      const bool in_zone = options_.zones.empty() ||
                           std::find(options_.zones.begin(), options_.zones.end(), type.zone) !=
                               options_.zones.end() ||
                           std::find(options_.zones.begin(), options_.zones.end(), type.region) !=
                               options_.zones.end();
      if (!in_zone && !options_.zones.empty()) continue;
      if (best == nullptr || type.on_demand_usd_per_h < best->on_demand_usd_per_h) best = &type;
    }
    if (best != nullptr) break;
  }
  if (best == nullptr) {
    std::set<std::string> zones;
    for (const auto& type : catalog_.types())
      zones.insert(type.zone.empty() ? type.region : type.zone);
    std::string list;
    for (const auto& z : zones) list += (list.empty() ? "" : ", ") + z;
    throw InputError("catalog " + catalog_.name() +
                     " has no on-demand server in the zones asked for, to hold the parameters or "
                     "coordinate the job; the catalog's zones: " +
                     list);
  }
  support_ = *best;
  // The pause before the first step (forming the group, or starting TensorFlow): the simulator
  // charges it at the start, so the prediction does too.
  start_pause_s_ =
      sim::create_recovery_model(recovery_name(), sim::RecoveryOptions{})->restart_pause_s();
}

std::string Planner::recovery_name() const {
  return options_.architecture == perf::Architecture::allreduce ? "in-place" : "async-ps-chief";
}

Configuration Planner::with_support(std::vector<sim::ServerGroup> workers) const {
  Configuration c;
  c.workers = std::move(workers);
  c.parameter_servers.push_back({support_, cloud::Market::on_demand, 1});
  return c;
}

double Planner::predicted_time_s(const Configuration& c, double steps_per_s) const {
  double startup_s = 0.0;
  for (const auto& g : c.workers)
    startup_s = std::max(startup_s, options_.startup.mean_s(g.market));
  return steps_per_s > 0.0 ? startup_s + start_pause_s_ + options_.total_steps / steps_per_s : kInf;
}

bool Planner::objective_less(const Evaluation& a, const Evaluation& b) const {
  const double a_time = a.simulated ? a.expected_time_s : a.predicted_time_s;
  const double b_time = b.simulated ? b.expected_time_s : b.predicted_time_s;
  const double a_cost = a.simulated ? a.expected_cost_usd : a.predicted_cost_usd;
  const double b_cost = b.simulated ? b.expected_cost_usd : b.predicted_cost_usd;
  if (options_.deadline_s != sim::kNoDeadline) {
    if (a_cost != b_cost) return a_cost < b_cost;
    return a_time < b_time;
  }
  if (a_time != b_time) return a_time < b_time;
  return a_cost < b_cost;
}

RunPolicy Planner::policy_for(const Evaluation& e) const {
  const Configuration& c = e.configuration;
  RunPolicy policy;
  policy.recovery = recovery_name();
  policy.checkpoint_interval_s = kCheckpointIntervalS;
  policy.support_server = support_.name;
  policy.parameter_server = options_.architecture != perf::Architecture::allreduce;
  policy.deadline = options_.deadline_s != sim::kNoDeadline;
  policy.worker_groups = static_cast<int>(c.workers.size());
  for (const auto& g : c.workers) {
    if (g.market == cloud::Market::spot) policy.replaced_groups.push_back(g);
  }
  if (policy.replaced_groups.empty()) return policy;  // all on demand: nothing to replace
  policy.replacement = options_.replacement;
  if (!policy.deadline) {
    if (std::isfinite(options_.budget_usd)) policy.stop_at_usd = options_.budget_usd;
    return policy;
  }
  // A market policy moves one homogeneous group of workers between markets (sim/simulator.h).
  if (c.workers.size() != 1) return policy;
  policy.market_policy = "greedy";  // until advise_policy() has simulated the others
  Fallback f;
  f.servers = c.total_workers();
  f.steps_per_s = e.steps_per_s;
  f.on_demand_changeover_s = options_.startup.mean_s(cloud::Market::on_demand) + start_pause_s_;
  f.decision_interval_s = sim::Scenario{}.decision_interval_s;
  f.margin_s = std::max(0.0, options_.deadline_s - e.predicted_time_s);
  policy.fallback = f;
  return policy;
}

sim::Scenario Planner::scenario_for(const Configuration& configuration,
                                    const std::string& label) const {
  sim::Scenario s;
  s.name = label;
  s.total_steps = options_.total_steps;
  s.deadline_s = options_.deadline_s;
  s.workers = configuration.workers;
  s.parameter_servers = configuration.parameter_servers;
  s.architecture = options_.architecture;
  s.throughput = throughput_;
  const sim::ServerGroup* largest_spot = nullptr;
  for (const auto& g : configuration.workers) {
    if (g.market == cloud::Market::spot && (!largest_spot || g.count > largest_spot->count)) {
      largest_spot = &g;
    }
  }
  if (largest_spot && options_.market_for) s.market = options_.market_for(largest_spot->type);
  s.startup = options_.startup;
  s.recovery = recovery_name();
  s.checkpoint_interval_s = kCheckpointIntervalS;
  s.replacement = options_.replacement;
  return s;
}

std::optional<PolicyAdvice> Planner::advise_policy(const Configuration& configuration) const {
  if (options_.deadline_s == sim::kNoDeadline || options_.runs <= 0 ||
      configuration.workers.size() != 1 || configuration.workers[0].market != cloud::Market::spot) {
    return std::nullopt;
  }
  sim::Scenario s = scenario_for(configuration, "policy advice");
  // The market policies move the cluster between markets themselves; periodic checkpoints cost
  // nothing here, as in the optimum's accounting.
  s.checkpoint_interval_s = 0.0;
  sim::MonteCarloOptions mc;
  mc.runs = options_.runs;
  mc.seed = options_.seed;
  mc.threads = options_.threads;
  std::vector<double> optimal_usd;
  try {
    s.market_policy = "optimal";
    for (const auto& r : sim::run_many(s, mc)) optimal_usd.push_back(r.cost_usd);
  } catch (const InputError&) {
    optimal_usd.clear();  // a decision interval too short for the optimum: no ratio to state
  }
  PolicyAdvice advice;
  advice.runs = mc.runs;
  advice.checkpoint_interval_s = s.checkpoint_interval_s;
  for (const std::string name : {"greedy", "uniform-progress", "market-aware"}) {
    s.market_policy = name;
    const std::vector<sim::RunResult> runs = sim::run_many(s, mc);
    PolicyFigures f;
    f.name = name;
    for (std::size_t i = 0; i < runs.size(); ++i) {
      f.expected_cost_usd += runs[i].cost_usd / runs.size();
      f.deadline_miss_share += runs[i].missed_deadline ? 1.0 / runs.size() : 0.0;
      if (!optimal_usd.empty())
        f.cost_over_optimal += runs[i].cost_usd / optimal_usd[i] / runs.size();
    }
    advice.policies.push_back(f);
  }
  const auto best = std::min_element(advice.policies.begin(), advice.policies.end(),
                                     [](const auto& a, const auto& b) {
                                       if (a.deadline_miss_share != b.deadline_miss_share) {
                                         return a.deadline_miss_share < b.deadline_miss_share;
                                       }
                                       return a.expected_cost_usd < b.expected_cost_usd;
                                     });
  advice.recommended = best->name;
  if (!optimal_usd.empty()) {
    PolicyFigures optimal;
    optimal.name = "optimal";
    for (const double usd : optimal_usd) optimal.expected_cost_usd += usd / optimal_usd.size();
    optimal.cost_over_optimal = 1.0;
    advice.policies.push_back(optimal);
    // Replayed traces fix availability and revocations on the decision grid, where the optimum
    // is exact; on lifetime models it plans on availability only (sim/optimal_schedule.h).
    advice.optimal_exact = s.market && s.market->name() == "trace";
  }
  return advice;
}

Evaluation Planner::evaluate(const Configuration& configuration, const std::string& label) {
  Evaluation e;
  e.label = label;
  e.configuration = configuration;
  const perf::Prediction p = throughput_->predict(configuration.shape(options_.architecture));
  e.steps_per_s = p.steps_per_s;
  e.bottleneck = p.bottleneck;
  e.predicted_time_s = predicted_time_s(configuration, p.steps_per_s);
  e.predicted_cost_usd = configuration.usd_per_h() * e.predicted_time_s / 3600.0;
  e.expected_time_s = e.predicted_time_s;
  e.quantile_time_s = e.predicted_time_s;
  e.expected_cost_usd = e.predicted_cost_usd;
  e.deadline_miss_probability = e.predicted_time_s > options_.deadline_s ? 1.0 : 0.0;

  if (options_.runs > 0 && p.steps_per_s > 0.0) {
    sim::MonteCarloOptions mc;
    mc.runs = options_.runs;
    mc.seed = options_.seed;
    mc.threads = options_.threads;
    // The statistics `transient simulate` prints for the same scenario, seed and runs.
    const sim::MonteCarloSummary s =
        sim::summarize(sim::run_many(scenario_for(configuration, label), mc));
    e.simulated = true;
    e.expected_time_s = s.time_s.mean;
    e.quantile_time_s = s.time_quantile_s(options_.confidence);
    e.expected_cost_usd = s.cost_usd.mean;
    e.deadline_miss_probability = s.deadline_miss_probability;
    e.expected_revocations = s.mean_revocations;
    e.unfinished_share = s.unfinished_share();
  }

  const int percent = static_cast<int>(std::lround(options_.confidence * 100));
  // Without Monte Carlo runs the figures are the revocation-free prediction: say so.
  const std::string not_simulated = "without revocations (not simulated: --runs 0)";
  const std::string at = e.simulated ? fmt::format("at p{}", percent) : not_simulated;
  const std::string time_label =
      e.simulated ? fmt::format("p{} time", percent) : "time " + not_simulated;
  std::vector<std::string> problems;
  if (options_.deadline_s != sim::kNoDeadline && e.quantile_time_s > options_.deadline_s) {
    problems.push_back(fmt::format("{} {} misses the deadline {}", time_label,
                                   format_hours(e.quantile_time_s),
                                   format_hours(options_.deadline_s)));
  }
  if (std::isfinite(options_.budget_usd) && e.expected_cost_usd > options_.budget_usd) {
    problems.push_back(fmt::format("expected cost {} breaks the budget {}",
                                   money(e.expected_cost_usd), money(options_.budget_usd)));
  }
  if (!std::isfinite(e.quantile_time_s) && options_.deadline_s == sim::kNoDeadline) {
    problems.push_back(fmt::format("{:.0f}% of runs never finish", 100 * e.unfinished_share));
  }
  e.acceptable = problems.empty();
  if (e.acceptable) {
    e.verdict = options_.deadline_s != sim::kNoDeadline
                    ? fmt::format("meets the deadline {} ({})", at, format_hours(e.quantile_time_s))
                    : fmt::format("within the budget ({})", money(e.expected_cost_usd));
    if (std::isfinite(options_.budget_usd) && options_.deadline_s != sim::kNoDeadline) {
      e.verdict += fmt::format(" and the budget ({})", money(e.expected_cost_usd));
    }
    e.policy = policy_for(e);
  } else {
    for (const auto& problem : problems) e.verdict += (e.verdict.empty() ? "" : "; ") + problem;
  }
  return e;
}

PlanResult Planner::plan() {
  if (options_.deadline_s == sim::kNoDeadline && !std::isfinite(options_.budget_usd)) {
    throw InputError(
        "plan needs a --deadline (e.g. 2h: the cheapest plan that finishes in time) or a "
        "--budget (e.g. 5: the fastest plan within $5), or both");
  }
  PlanResult result;
  result.flopp = rank_by_flopp(catalog_, options_.zones);
  const bool has_deadline = options_.deadline_s != sim::kNoDeadline;
  const int max_count = options_.max_servers;

  // The offers: each (type, market) once, in its cheapest zone. FLOPP order puts it first.
  std::vector<Offer> offers;
  std::map<std::pair<std::string, cloud::Market>, bool> seen;
  for (const auto& f : result.flopp) {
    if (seen[{f.type.name, f.market}]) continue;
    seen[{f.type.name, f.market}] = true;
    offers.push_back({f.type, f.market, f.usd_per_h});
  }

  // The throughput of n servers of each offer, n = 1..max_count.
  const double fixed_usd_per_h = support_.on_demand_usd_per_h;
  std::vector<MipOption> mip_options;
  double best_homogeneous = 0.0;
  for (const auto& offer : offers) {
    MipOption option;
    option.usd_per_h = offer.usd_per_h;
    for (int n = 1; n <= max_count; ++n) {
      const Configuration c = with_support({{offer.type, offer.market, n}});
      const double speed = throughput_->predict(c.shape(options_.architecture)).steps_per_s;
      option.steps_per_s.push_back(speed);
      best_homogeneous = std::max(best_homogeneous, speed);
    }
    mip_options.push_back(std::move(option));
  }
  // A shared parameter server saturates: a mix is no faster than the fastest homogeneous cluster.
  const double cap =
      options_.architecture == perf::Architecture::async_ps ? best_homogeneous : kInf;

  auto configuration_of = [&](const MipChoice& choice) {
    std::vector<sim::ServerGroup> workers;
    for (std::size_t o = 0; o < offers.size(); ++o) {
      if (choice.counts[o] > 0)
        workers.push_back({offers[o].type, offers[o].market, choice.counts[o]});
    }
    return with_support(std::move(workers));
  };
  auto deterministic = [&](const Configuration& c, const std::string& label) {
    const int runs = options_.runs;
    options_.runs = 0;
    Evaluation e = evaluate(c, label);
    options_.runs = runs;
    return e;
  };

  double max_startup_s = 0.0;
  for (cloud::Market m : {cloud::Market::spot, cloud::Market::on_demand}) {
    max_startup_s = std::max(max_startup_s, options_.startup.mean_s(m));
  }
  MipConstraints constraints;
  if (has_deadline) {
    const double work_s = options_.deadline_s - max_startup_s - start_pause_s_;
    constraints.min_steps_per_s = work_s > 0.0 ? options_.total_steps / work_s : kInf;
  }
  if (std::isfinite(options_.budget_usd)) {
    constraints.max_usd_per_step = options_.budget_usd / options_.total_steps;
  }

  // The mixed programme buys each type in one market: spot where it is sold (the risk is the
  // simulation's business), else on demand; the on-demand programme only on-demand offers. One
  // type in two markets as two options would let the additive speed dodge that type's scaling.
  std::set<std::string> spot_types;
  for (const auto& offer : offers) {
    if (offer.market == cloud::Market::spot) spot_types.insert(offer.type.name);
  }
  auto restricted = [&](bool on_demand_only) {
    std::vector<MipOption> out = mip_options;
    for (std::size_t o = 0; o < offers.size(); ++o) {
      const bool spot = offers[o].market == cloud::Market::spot;
      const bool keep = on_demand_only ? !spot : spot || spot_types.count(offers[o].type.name) == 0;
      if (keep) continue;
      std::fill(out[o].steps_per_s.begin(), out[o].steps_per_s.end(), 0.0);
      out[o].usd_per_h = kUnavailableUsdPerH;
    }
    return out;
  };
  const std::vector<MipOption> market_options = restricted(false);
  ClusterMip mixed(market_options, fixed_usd_per_h, cap, max_count, !options_.heterogeneous);
  ClusterMip homogeneous(market_options, fixed_usd_per_h, cap, max_count, true);
  ClusterMip on_demand(restricted(true), fixed_usd_per_h, cap, max_count, true);
  auto usable = [](const std::optional<MipChoice>& c) {
    return c && c->usd_per_h < kUnavailableUsdPerH && c->steps_per_s > 0.0;
  };
  auto best = [&](ClusterMip& mip, const MipConstraints& c) {
    std::optional<MipChoice> choice;
    if (std::isfinite(c.min_steps_per_s)) choice = has_deadline ? mip.cheapest(c) : mip.fastest(c);
    return usable(choice) ? choice : std::nullopt;
  };
  const auto fastest = mixed.fastest({});
  const auto cheapest = mixed.cheapest({});

  // The pool: the top-k of the programme (cost per step, or speed), the best homogeneous and the
  // best all-on-demand plan, and a sweep of speed floors from the slowest server's to the fastest
  // plan's, each with the lowest price per hour (this catches plans whose start-up delay, which
  // the programme's cost per step leaves out, matters). The sweep is also the Pareto front.
  std::vector<Configuration> pool;
  auto add = [&](std::vector<Configuration>& list, const Configuration& c) {
    if (std::none_of(list.begin(), list.end(),
                     [&](const Configuration& o) { return o.same_as(c); })) {
      list.push_back(c);
    }
  };
  MipConstraints top = constraints;
  for (int k = 0; k < options_.top_k; ++k) {
    const auto choice = best(mixed, top);
    if (!choice) break;
    add(pool, configuration_of(*choice));
    top.excluded.push_back(choice->counts);
  }
  std::vector<Configuration> always;  // simulated even when outside the top-k
  if (const auto choice = best(homogeneous, constraints)) add(always, configuration_of(*choice));
  if (const auto choice = best(on_demand, constraints)) add(always, configuration_of(*choice));
  std::vector<Configuration> sweep;
  if (usable(fastest) && usable(cheapest) && options_.pareto_points > 0) {
    // From the slowest single server (or the deadline's speed) to the fastest plan.
    double low = fastest->steps_per_s;
    for (const auto& option : market_options) {
      if (option.steps_per_s[0] > 0.0) low = std::min(low, option.steps_per_s[0]);
    }
    low = std::max(low, std::min(constraints.min_steps_per_s, fastest->steps_per_s));
    const double high = fastest->steps_per_s;
    for (int j = 0; j < options_.pareto_points; ++j) {
      const double share = options_.pareto_points == 1 ? 1.0 : j / (options_.pareto_points - 1.0);
      MipConstraints floor;
      floor.min_steps_per_s = low * std::pow(high / low, share) * (1.0 - 1e-9);
      const auto choice = j + 1 == options_.pareto_points ? fastest : mixed.lowest_price(floor);
      if (usable(choice)) add(sweep, configuration_of(*choice));
    }
  }
  for (const auto& c : sweep) add(pool, c);
  std::vector<Evaluation> ranked;
  for (const auto& c : pool) {
    Evaluation e = deterministic(c, "candidate");
    if (e.predicted_time_s <= options_.deadline_s && e.predicted_cost_usd <= options_.budget_usd) {
      ranked.push_back(std::move(e));
    }
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [&](const Evaluation& a, const Evaluation& b) { return objective_less(a, b); });
  std::vector<Configuration> chosen;
  for (std::size_t i = 0; i < ranked.size() && static_cast<int>(i) < options_.top_k; ++i) {
    add(chosen, ranked[i].configuration);
  }
  if (!chosen.empty()) {
    for (const auto& c : always) add(chosen, c);
  }

  // Baselines: one (type, market) each, the count chosen by the request's objective.
  auto homogeneous_best = [&](std::size_t o, const std::string& label) {
    std::optional<Evaluation> pick, fastest_pick;
    for (int n = 1; n <= max_count; ++n) {
      Evaluation e = deterministic(with_support({{offers[o].type, offers[o].market, n}}), label);
      if (!fastest_pick || e.predicted_time_s < fastest_pick->predicted_time_s) fastest_pick = e;
      const bool meets =
          e.predicted_time_s <= options_.deadline_s && e.predicted_cost_usd <= options_.budget_usd;
      if (meets && (!pick || objective_less(e, *pick))) pick = e;
    }
    return pick ? pick->configuration : fastest_pick->configuration;
  };
  std::vector<std::pair<std::string, Configuration>> baselines;
  {
    std::optional<Evaluation> all_on_demand;
    std::optional<std::size_t> cheapest_spot, performance_first;
    for (std::size_t o = 0; o < offers.size(); ++o) {
      if (offers[o].market == cloud::Market::on_demand) {
        Evaluation e = deterministic(homogeneous_best(o, "all on-demand"), "all on-demand");
        const bool meets = e.predicted_time_s <= options_.deadline_s &&
                           e.predicted_cost_usd <= options_.budget_usd;
        const bool best_meets = all_on_demand &&
                                all_on_demand->predicted_time_s <= options_.deadline_s &&
                                all_on_demand->predicted_cost_usd <= options_.budget_usd;
        if (!all_on_demand || (meets && !best_meets) ||
            (meets == best_meets && objective_less(e, *all_on_demand))) {
          all_on_demand = e;
        }
      } else if (!cheapest_spot || offers[o].usd_per_h < offers[*cheapest_spot].usd_per_h) {
        cheapest_spot = o;
      }
      const auto faster = [&](std::size_t a, std::size_t b) {
        if (offers[a].type.total_tflops() != offers[b].type.total_tflops()) {
          return offers[a].type.total_tflops() > offers[b].type.total_tflops();
        }
        if (offers[a].market != offers[b].market) return offers[a].market == cloud::Market::spot;
        return offers[a].usd_per_h < offers[b].usd_per_h;
      };
      if (!performance_first || faster(o, *performance_first)) performance_first = o;
    }
    if (all_on_demand) baselines.push_back({"all on-demand", all_on_demand->configuration});
    if (cheapest_spot) {
      baselines.push_back({"cheapest spot", homogeneous_best(*cheapest_spot, "cheapest spot")});
    }
    baselines.push_back({"DeepVM cost first", homogeneous_best(0, "DeepVM cost first")});
    if (performance_first) {
      baselines.push_back(
          {"DeepVM performance first", homogeneous_best(*performance_first, "perf first")});
    }
  }

  // The Pareto front: the non-dominated plans of the sweep, the pool and the baselines.
  std::vector<Evaluation> front;
  for (const auto& c : pool) front.push_back(deterministic(c, "pareto"));
  for (const auto& c : always) front.push_back(deterministic(c, "pareto"));
  for (const auto& b : baselines) front.push_back(deterministic(b.second, "pareto"));
  {
    std::sort(front.begin(), front.end(), [](const Evaluation& a, const Evaluation& b) {
      return a.predicted_time_s < b.predicted_time_s;
    });
    double best_cost = kInf;
    for (const auto& e : front) {
      if (e.predicted_cost_usd < best_cost - 1e-12) {
        result.pareto.push_back(e);
        best_cost = e.predicted_cost_usd;
      }
    }
  }

  for (std::size_t i = 0; i < chosen.size(); ++i) {
    result.candidates.push_back(evaluate(chosen[i], fmt::format("plan {}", i + 1)));
  }
  std::stable_sort(result.candidates.begin(), result.candidates.end(),
                   [&](const Evaluation& a, const Evaluation& b) { return objective_less(a, b); });
  for (std::size_t i = 0; i < result.candidates.size(); ++i) {
    result.candidates[i].label = fmt::format("plan {}", i + 1);
  }
  for (const auto& [label, c] : baselines) result.baselines.push_back(evaluate(c, label));
  result.mip_solves = mixed.solves() + homogeneous.solves() + on_demand.solves();

  for (const auto* list : {&result.candidates, &result.baselines}) {
    for (const auto& e : *list) {
      if (e.acceptable && (!result.recommended || objective_less(e, *result.recommended))) {
        result.recommended = e;
      }
    }
  }
  result.feasible = result.recommended.has_value();
  if (result.recommended) {
    RunPolicy& policy = *result.recommended->policy;
    policy.advice = advise_policy(result.recommended->configuration);
    if (policy.advice) policy.market_policy = policy.advice->recommended;
  }

  const std::string request =
      fmt::format("{} steps{}{}", format_steps(options_.total_steps),
                  has_deadline ? " in " + format_hours(options_.deadline_s) : "",
                  std::isfinite(options_.budget_usd) ? " for " + money(options_.budget_usd) : "");
  if (result.feasible) {
    result.reason = fmt::format(
        "{} of {} checked plans finish {} at p{:.0f}; the recommended one is the {} of them",
        std::count_if(result.candidates.begin(), result.candidates.end(),
                      [](const Evaluation& e) { return e.acceptable; }) +
            std::count_if(result.baselines.begin(), result.baselines.end(),
                          [](const Evaluation& e) { return e.acceptable; }),
        result.candidates.size() + result.baselines.size(), request, options_.confidence * 100,
        has_deadline ? "cheapest" : "fastest");
  } else if (fastest && cheapest) {
    // With a deadline the fastest plan is the one to know about; with a budget only, the cheapest.
    const Evaluation f =
        deterministic(configuration_of(has_deadline ? *fastest : *cheapest), "fastest");
    result.reason = fmt::format("no configuration finishes {}{}; the {} ({}) costs {} and takes {}",
                                request, chosen.empty() ? "" : " with enough certainty",
                                has_deadline ? "fastest" : "cheapest", f.configuration.text(),
                                money(f.predicted_cost_usd), format_hours(f.predicted_time_s));
    if (!chosen.empty()) {
      result.reason +=
          fmt::format("; the plans that do on paper miss at p{:.0f}", options_.confidence * 100);
    }
  } else {
    result.reason = "no configuration of the catalog can train this workload";
  }
  return result;
}

}  // namespace transient::plan
