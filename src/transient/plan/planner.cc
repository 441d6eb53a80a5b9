#include "transient/plan/planner.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "transient/core/duration.h"
#include "transient/core/error.h"
#include "transient/plan/cluster_mip.h"
#include "transient/plan/internal/candidate_search.h"
#include "transient/plan/support_server.h"
#include "transient/sim/monte_carlo.h"
#include "transient/sim/recovery_model.h"
#include "transient/sim/simulator.h"

namespace transient::plan {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// Periodic checkpoints of the simulated plans: TensorFlow's default, and our trainer's.
constexpr double kCheckpointIntervalS = 600.0;
// How much dearer in expectation a deadline-safe market policy may be than running without one
// and still be advised: what the promise of the deadline is worth when both kept it in every run.
constexpr double kGuaranteeWorth = 0.05;
// The longest horizon, in decision ticks to the deadline, over which the policy advice compares
// the policies with the server-by-server optimum (one worker on a market that draws each server
// on its own, sim/optimal_schedule.h), whose labels grow steeply with the run: measured on one
// P100 on the GCE lifetimes (Release, one thread), one run of it took at most 0.13 s for a 12 h
// deadline (72 ticks of 10 min), 0.36 s for 16 h, 2.4 s for 18 h of work in 22 h and 12.5 s
// for 24 h in 48 h; each plan simulates --runs of it. The programme over ticks (any other
// market or cluster) stays fast for days and is always compared.
constexpr double kServerOptimumMaxTicks = 72;

sim::MonteCarloOptions monte_carlo_options(const PlanOptions& options) {
  sim::MonteCarloOptions mc;
  mc.runs = options.runs;
  mc.seed = options.seed;
  mc.threads = options.threads;
  return mc;
}

// The speed a plan needs to meet the deadline (whatever its servers' start-up delay) and the
// price per step the budget allows.
MipConstraints request_constraints(const PlanOptions& options, const Request& request,
                                   double start_pause_s) {
  double max_startup_s = 0.0;
  for (cloud::Market m : {cloud::Market::spot, cloud::Market::on_demand}) {
    max_startup_s = std::max(max_startup_s, options.startup.mean_s(m));
  }
  MipConstraints constraints;
  if (request.has_deadline()) {
    const double work_s = request.deadline_s - max_startup_s - start_pause_s;
    constraints.min_steps_per_s = work_s > 0.0 ? request.total_steps / work_s : kInf;
  }
  if (request.has_budget()) {
    constraints.max_usd_per_step = request.budget_usd / request.total_steps;
  }
  return constraints;
}

// The non-dominated evaluations by (predicted time, predicted cost), fastest first.
std::vector<Evaluation> pareto_front(std::vector<Evaluation> all) {
  std::sort(all.begin(), all.end(), [](const Evaluation& a, const Evaluation& b) {
    return a.predicted_time_s < b.predicted_time_s;
  });
  std::vector<Evaluation> front;
  double best_cost = kInf;
  for (auto& e : all) {
    if (e.predicted_cost_usd < best_cost - 1e-12) {
      best_cost = e.predicted_cost_usd;
      front.push_back(std::move(e));
    }
  }
  return front;
}

}  // namespace

Planner::Planner(cloud::Catalog catalog, std::shared_ptr<const perf::ThroughputModel> throughput,
                 PlanOptions options)
    : catalog_(std::move(catalog)),
      throughput_(std::move(throughput)),
      options_(options),
      request_(options.request()) {
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

  if (options_.max_regions < 0) throw InputError("--regions: accepted: 1 or more, or 0 for any");
  support_ = plan::support_servers(catalog_, options_.zones);
  // The pause before the first step (forming the group, or starting TensorFlow): the simulator
  // charges it at the start, so the prediction does too.
  start_pause_s_ =
      sim::create_recovery_model(recovery_name(), sim::RecoveryOptions{})->restart_pause_s();
}

std::string Planner::recovery_name() const {
  return options_.architecture == perf::Architecture::allreduce ? "in-place" : "async-ps-chief";
}

double Planner::predicted_time_s(const Configuration& c, double steps_per_s) const {
  double startup_s = 0.0;
  for (const auto& g : c.workers)
    startup_s = std::max(startup_s, options_.startup.mean_s(g.market));
  return steps_per_s > 0.0 ? startup_s + start_pause_s_ + request_.total_steps / steps_per_s : kInf;
}

bool Planner::objective_less(const Evaluation& a, const Evaluation& b) const {
  const double a_time = a.simulated ? a.expected_time_s : a.predicted_time_s;
  const double b_time = b.simulated ? b.expected_time_s : b.predicted_time_s;
  const double a_cost = a.simulated ? a.expected_cost_usd : a.predicted_cost_usd;
  const double b_cost = b.simulated ? b.expected_cost_usd : b.predicted_cost_usd;
  if (request_.has_deadline()) {
    if (a_cost != b_cost) return a_cost < b_cost;
    return a_time < b_time;
  }
  if (a_time != b_time) return a_time < b_time;
  return a_cost < b_cost;
}

bool Planner::stops_at_budget(const Configuration& c) const {
  // Without a deadline nothing falls back to on demand: what bounds the spending of a spot
  // cluster that keeps being revoked is the budget.
  return request_.has_budget() && !request_.has_deadline() &&
         std::any_of(c.workers.begin(), c.workers.end(),
                     [](const sim::ServerGroup& g) { return g.market == cloud::Market::spot; });
}

RunPolicy Planner::policy_for(const Evaluation& e) const {
  const Configuration& c = e.configuration;
  RunPolicy policy;
  policy.recovery = recovery_name();
  policy.checkpoint_interval_s = kCheckpointIntervalS;
  if (!c.parameter_servers.empty()) policy.support_server = c.parameter_servers[0].type.name;
  policy.parameter_server = options_.architecture != perf::Architecture::allreduce;
  policy.deadline = request_.has_deadline();
  policy.worker_groups = static_cast<int>(c.workers.size());
  for (const auto& g : c.workers) {
    if (g.market == cloud::Market::spot) policy.replaced_groups.push_back(g);
  }
  if (policy.replaced_groups.empty()) return policy;  // all on demand: nothing to replace
  policy.replacement = options_.replacement;
  if (!policy.deadline) {
    if (stops_at_budget(c)) policy.stop_at_usd = request_.budget_usd;
    return policy;
  }
  // A market policy moves one homogeneous group of workers between markets (sim/simulator.h),
  // so its type must be sold in both.
  if (c.workers.size() != 1 || !c.workers[0].type.sold_in_both_markets()) return policy;
  policy.market_policy = "greedy";  // until advise_policy() has simulated the others
  Fallback f;
  f.servers = c.total_workers();
  f.steps_per_s = e.steps_per_s;
  f.on_demand_changeover_s = options_.startup.mean_s(cloud::Market::on_demand) + start_pause_s_;
  f.decision_interval_s = sim::Scenario{}.decision_interval_s;
  f.margin_s = std::max(0.0, request_.deadline_s - e.predicted_time_s);
  policy.fallback = f;
  return policy;
}

sim::Scenario Planner::scenario_for(const Configuration& configuration,
                                    const std::string& label) const {
  sim::Scenario s;
  s.name = label;
  s.total_steps = request_.total_steps;
  s.deadline_s = request_.deadline_s;
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
  s.notice_s = options_.notice_s;
  s.startup = options_.startup;
  s.recovery = recovery_name();
  s.checkpoint_interval_s = kCheckpointIntervalS;
  s.replacement = options_.replacement;
  if (stops_at_budget(configuration)) s.budget_usd = request_.budget_usd;
  return s;
}

std::optional<PolicyAdvice> Planner::advise_policy(const Configuration& configuration) const {
  if (!request_.has_deadline() || options_.runs <= 0 || configuration.workers.size() != 1 ||
      configuration.workers[0].market != cloud::Market::spot ||
      !configuration.workers[0].type.sold_in_both_markets()) {
    return std::nullopt;
  }
  // Without a market policy: the plan as its figures were simulated.
  const sim::Scenario as_planned = scenario_for(configuration, "policy advice");
  // The market policies with the plan's periodic checkpoints, which the job runs with
  // (--emit-train-flags, --emit-scenario): they stop no training here (no write time), as in the
  // optimum's accounting, where periodic checkpoints are free. (Simulated without them, the
  // emitted scenario had none where the trainer was told to write them.)
  sim::Scenario s = as_planned;
  const sim::MonteCarloOptions mc = monte_carlo_options(options_);
  std::vector<double> optimal_usd;
  PolicyAdvice advice;
  const double ticks = request_.deadline_s / s.decision_interval_s;
  const bool by_server = s.market && s.market->spot_by_launch() && !s.market->spot_by_time() &&
                         sim::optimum_is_a_bound(s);
  if (by_server && ticks > kServerOptimumMaxTicks) {
    advice.no_optimum_reason = fmt::format(
        "the server-by-server optimum over a {} deadline ({:.0f} decision ticks) takes too long "
        "to run; it is run up to {:.0f} ticks ({})",
        format_hours(request_.deadline_s), std::ceil(ticks), kServerOptimumMaxTicks,
        format_hours(kServerOptimumMaxTicks * s.decision_interval_s));
  } else {
    try {
      s.market_policy = "optimal";
      for (const auto& r : sim::run_many(s, mc)) optimal_usd.push_back(r.cost_usd);
    } catch (const InputError& error) {
      // A decision interval too short for the optimum: no ratio to state.
      optimal_usd.clear();
      advice.no_optimum_reason = error.what();
    }
  }
  advice.runs = mc.runs;
  bool bound_held = true;  // no run of a policy that met the deadline cost less than the optimum
  advice.checkpoint_interval_s = s.checkpoint_interval_s;
  if (request_.has_budget()) advice.budget_usd = request_.budget_usd;
  // The safe policies first, so that a tie goes to one of them; then the plan as its figures
  // were simulated, without a market policy (on a tight margin every safe policy goes on demand
  // at once, for more than twice the plan's cost).
  for (const std::string name : {"greedy", "uniform-progress", "market-aware", "none"}) {
    const bool safe = name != "none";
    sim::Scenario run = safe ? s : as_planned;
    run.market_policy = name;
    const std::vector<sim::RunResult> runs = sim::run_many(run, mc);
    PolicyFigures f;
    f.name = name;
    for (std::size_t i = 0; i < runs.size(); ++i) {
      f.expected_cost_usd += runs[i].cost_usd / runs.size();
      f.deadline_miss_share += runs[i].missed_deadline ? 1.0 / runs.size() : 0.0;
      if (!optimal_usd.empty()) {
        f.cost_over_optimal += runs[i].cost_usd / optimal_usd[i] / runs.size();
        // The optimum decides on the market policies' ticks; without a policy a revoked
        // server is replaced at once, which no tick waits for.
        bound_held = bound_held && (!safe || runs[i].missed_deadline ||
                                    runs[i].cost_usd >= optimal_usd[i] * (1 - 1e-9));
      }
    }
    advice.policies.push_back(f);
  }
  const PolicyFigures& unguarded = advice.policies.back();
  const auto best = std::min_element(advice.policies.begin(), advice.policies.end() - 1,
                                     [](const auto& a, const auto& b) {
                                       if (a.deadline_miss_share != b.deadline_miss_share) {
                                         return a.deadline_miss_share < b.deadline_miss_share;
                                       }
                                       return a.expected_cost_usd < b.expected_cost_usd;
                                     });
  // A safe policy keeps the deadline whatever the market does; without one the deadline was
  // kept only in the runs simulated. That promise is worth kGuaranteeWorth of the cost.
  const bool unguarded_wins =
      unguarded.deadline_miss_share < best->deadline_miss_share ||
      (unguarded.deadline_miss_share == best->deadline_miss_share &&
       best->expected_cost_usd > unguarded.expected_cost_usd * (1 + kGuaranteeWorth));
  advice.recommended = unguarded_wins ? unguarded.name : best->name;
  if (!optimal_usd.empty()) {
    PolicyFigures optimal;
    optimal.name = "optimal";
    for (const double usd : optimal_usd) optimal.expected_cost_usd += usd / optimal_usd.size();
    optimal.cost_over_optimal = 1.0;
    advice.policies.push_back(optimal);
    // Replayed availability traces fix availability and revocations (spot_by_time), and a
    // cluster of one worker on a market that draws each server on its own is known to the
    // optimum request by request: there it is exact (sim::optimum_is_a_bound); elsewhere (several
    // workers each revoked on its own) it plans on ticks that no server need meet. It is called the
    // optimum only where, besides, no run of a policy that met the deadline came out cheaper
    // (docs/scenarios.md, "Plan on a trace").
    advice.optimal_exact = s.market && sim::optimum_is_a_bound(s) && bound_held;
  }
  return advice;
}

void Planner::advise(Evaluation& e) const {
  if (!e.policy) return;
  e.policy->advice = advise_policy(e.configuration);
  if (!e.policy->advice) return;
  e.policy->market_policy = e.policy->advice->recommended;
  // Without a market policy nothing falls back to on demand.
  if (e.policy->market_policy == "none") e.policy->fallback.reset();
}

Evaluation Planner::evaluate_with_advice(const Configuration& configuration,
                                         const std::string& label) const {
  Evaluation e = evaluate(configuration, label);
  advise(e);
  return e;
}

Evaluation Planner::evaluate(const Configuration& configuration, const std::string& label) const {
  Evaluation e = predicted(configuration, label);
  if (options_.runs > 0 && e.steps_per_s > 0.0) e = simulated(std::move(e));
  return judged(std::move(e));
}

Evaluation Planner::on_paper(const Configuration& configuration, const std::string& label) const {
  return judged(predicted(configuration, label));
}

Evaluation Planner::predicted(const Configuration& configuration, const std::string& label) const {
  Evaluation e;
  e.label = label;
  e.configuration = configuration;
  const perf::Prediction p = throughput_->predict(configuration.shape(options_.architecture));
  e.steps_per_s = p.steps_per_s;
  e.step_time_s = p.step_time_s;
  e.bottleneck = p.bottleneck;
  e.predicted_time_s = predicted_time_s(configuration, p.steps_per_s);
  e.predicted_cost_usd = configuration.usd_per_h() * e.predicted_time_s / 3600.0;
  e.expected_time_s = e.predicted_time_s;
  e.quantile_time_s = e.predicted_time_s;
  e.expected_cost_usd = e.predicted_cost_usd;
  e.deadline_miss_probability = e.predicted_time_s > request_.deadline_s ? 1.0 : 0.0;
  return e;
}

Evaluation Planner::simulated(Evaluation e) const {
  const std::vector<sim::RunResult> runs =
      sim::run_many(scenario_for(e.configuration, e.label), monte_carlo_options(options_));
  // The statistics `transient simulate` prints for the same scenario, seed and runs.
  const sim::MonteCarloSummary s = sim::summarize(runs);
  e.simulated = true;
  e.expected_time_s = s.time_s.mean;
  e.quantile_time_s = s.time_quantile_s(options_.confidence);
  e.expected_cost_usd = s.cost_usd.mean;
  e.deadline_miss_probability = s.deadline_miss_probability;
  e.expected_revocations = s.mean_revocations;
  e.unfinished_share = s.unfinished_share();
  e.budget_stop_share = s.runs > 0 ? static_cast<double>(s.budget_stops) / s.runs : 0.0;
  return e;
}

Evaluation Planner::judged(Evaluation e) const {
  const int workers = e.configuration.shape(options_.architecture).total_workers();
  const bool batch_fits =
      options_.max_workers_for_batch <= 0 || workers <= options_.max_workers_for_batch;
  e.acceptable = batch_fits && request_.met_by(e.quantile_time_s, e.expected_cost_usd);
  const std::string quantile = format_quantile(options_.confidence);
  // Without Monte Carlo runs the figures are the revocation-free prediction: say so.
  const std::string not_simulated = "without revocations (not simulated: --runs 0)";
  const std::string at = e.simulated ? "at " + quantile : not_simulated;
  if (e.acceptable) {
    e.verdict = request_.has_deadline()
                    ? fmt::format("meets the deadline {} ({})", at, format_hours(e.quantile_time_s))
                    : fmt::format("within the budget ({})", format_usd(e.expected_cost_usd));
    if (request_.has_budget() && request_.has_deadline()) {
      e.verdict += fmt::format(" and the budget ({})", format_usd(e.expected_cost_usd));
    }
    e.policy = policy_for(e);
    return e;
  }
  const std::string time_label = e.simulated ? quantile + " time" : "time " + not_simulated;
  std::vector<std::string> problems;
  if (!request_.in_time(e.quantile_time_s)) {
    problems.push_back(request_.has_deadline()
                           ? fmt::format("{} {} misses the deadline {}", time_label,
                                         format_hours(e.quantile_time_s),
                                         format_hours(request_.deadline_s))
                           : fmt::format("{:.0f}% of runs never finish{}", 100 * e.unfinished_share,
                                         e.budget_stop_share > 0.0
                                             ? fmt::format(" ({:.0f}% reach the budget, where "
                                                           "renting stops)",
                                                           100 * e.budget_stop_share)
                                             : ""));
  }
  if (!batch_fits) {
    problems.push_back(
        fmt::format("{} workers for a global batch of {}: a worker would train on "
                    "no sample",
                    workers, options_.max_workers_for_batch));
  }
  if (!request_.within_budget(e.expected_cost_usd)) {
    problems.push_back(fmt::format("expected cost {} breaks the budget {}",
                                   format_usd(e.expected_cost_usd),
                                   format_usd(request_.budget_usd)));
  }
  for (const auto& problem : problems) e.verdict += (e.verdict.empty() ? "" : "; ") + problem;
  return e;
}

std::vector<Configuration> Planner::shortlist(const internal::Candidates& found) const {
  // The pool ranked on paper by the request's objective; the top-k, and the plans always checked.
  std::vector<Evaluation> ranked;
  for (const auto& c : found.pool) {
    Evaluation e = on_paper(c, "candidate");
    if (e.acceptable) ranked.push_back(std::move(e));
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [&](const Evaluation& a, const Evaluation& b) { return objective_less(a, b); });
  std::vector<Configuration> chosen;
  for (std::size_t i = 0; i < ranked.size() && static_cast<int>(i) < options_.top_k; ++i) {
    append_new(chosen, ranked[i].configuration);
  }
  if (!chosen.empty()) {
    for (const auto& c : found.always) append_new(chosen, c);
  }
  return chosen;
}

Configuration Planner::homogeneous_best(const internal::Offer& offer,
                                        const std::string& label) const {
  // The count chosen by the request's objective among those that meet it on paper. Where none
  // does, the count nearest to it: with a deadline, the cheapest that meets the deadline (it
  // breaks only the budget), else the fastest; with a budget only, the cheapest. (The fastest,
  // whatever the request, made the all on-demand baseline 16 K80s at $11.35 under a $1.50 budget
  // where 1 P100 met the deadline for $2.24.)
  std::optional<Evaluation> pick, fastest, cheapest, cheapest_in_time;
  const auto cheaper = [](const Evaluation& a, const std::optional<Evaluation>& b) {
    return !b || a.predicted_cost_usd < b->predicted_cost_usd;
  };
  for (int n = 1; n <= options_.max_servers; ++n) {
    Evaluation e = on_paper(with_support_server({{offer.type, offer.market, n}}, support_), label);
    if (!fastest || e.predicted_time_s < fastest->predicted_time_s) fastest = e;
    if (cheaper(e, cheapest)) cheapest = e;
    if (request_.in_time(e.quantile_time_s) && cheaper(e, cheapest_in_time)) cheapest_in_time = e;
    if (e.acceptable && (!pick || objective_less(e, *pick))) pick = e;
  }
  if (pick) return pick->configuration;
  if (!request_.has_deadline()) return cheapest->configuration;
  return cheapest_in_time ? cheapest_in_time->configuration : fastest->configuration;
}

std::vector<std::pair<std::string, Configuration>> Planner::baselines(
    const std::vector<internal::Offer>& offers) const {
  // One (type, market) each: all on demand (the best on-demand type), cheapest spot (the lowest
  // $/h spot type), DeepVM cost first (highest FLOPP: offers[0]), DeepVM performance first (most
  // TFLOPS per server, spot where sold).
  std::optional<Evaluation> all_on_demand;
  std::optional<std::size_t> cheapest_spot, performance_first;
  const auto faster = [&](std::size_t a, std::size_t b) {
    if (offers[a].type.total_tflops() != offers[b].type.total_tflops()) {
      return offers[a].type.total_tflops() > offers[b].type.total_tflops();
    }
    if (offers[a].market != offers[b].market) return offers[a].market == cloud::Market::spot;
    return offers[a].usd_per_h < offers[b].usd_per_h;
  };
  for (std::size_t o = 0; o < offers.size(); ++o) {
    if (offers[o].market == cloud::Market::on_demand) {
      Evaluation e = on_paper(homogeneous_best(offers[o], "all on-demand"), "all on-demand");
      const bool best_meets = all_on_demand && all_on_demand->acceptable;
      if (!all_on_demand || (e.acceptable && !best_meets) ||
          (e.acceptable == best_meets && objective_less(e, *all_on_demand))) {
        all_on_demand = e;
      }
    } else if (!cheapest_spot || offers[o].usd_per_h < offers[*cheapest_spot].usd_per_h) {
      cheapest_spot = o;
    }
    if (!performance_first || faster(o, *performance_first)) performance_first = o;
  }
  std::vector<std::pair<std::string, Configuration>> out;
  if (all_on_demand) out.push_back({"all on-demand", all_on_demand->configuration});
  if (cheapest_spot) {
    out.push_back({"cheapest spot", homogeneous_best(offers[*cheapest_spot], "cheapest spot")});
  }
  out.push_back({"DeepVM cost first", homogeneous_best(offers[0], "DeepVM cost first")});
  if (performance_first) {
    out.push_back(
        {"DeepVM performance first", homogeneous_best(offers[*performance_first], "perf first")});
  }
  return out;
}

std::vector<Evaluation> Planner::simulated_candidates(
    const std::vector<Configuration>& chosen) const {
  std::vector<Evaluation> out;
  for (std::size_t i = 0; i < chosen.size(); ++i) {
    out.push_back(evaluate(chosen[i], fmt::format("plan {}", i + 1)));
  }
  std::stable_sort(out.begin(), out.end(),
                   [&](const Evaluation& a, const Evaluation& b) { return objective_less(a, b); });
  for (std::size_t i = 0; i < out.size(); ++i) out[i].label = fmt::format("plan {}", i + 1);
  return out;
}

std::optional<Evaluation> Planner::recommended(const PlanResult& result) const {
  // The best acceptable plan among the candidates and the baselines, so it is never worse than
  // a baseline it reports.
  std::optional<Evaluation> best;
  for (const auto* list : {&result.candidates, &result.baselines}) {
    for (const auto& e : *list) {
      if (e.acceptable && (!best || objective_less(e, *best))) best = e;
    }
  }
  if (best) advise(*best);
  return best;
}

std::string Planner::reason(const PlanResult& result, const internal::Candidates& found,
                            bool any_chosen) const {
  const bool has_deadline = request_.has_deadline();
  if (result.feasible) {
    const auto acceptable = [](const std::vector<Evaluation>& list) {
      return std::count_if(list.begin(), list.end(),
                           [](const Evaluation& e) { return e.acceptable; });
    };
    // Without Monte Carlo runs nothing was simulated: the plans finish on paper, no quantile.
    return fmt::format("{} of {} checked plans finish {} {}; the recommended one is the {} of them",
                       acceptable(result.candidates) + acceptable(result.baselines),
                       result.candidates.size() + result.baselines.size(), request_.text(),
                       options_.runs > 0 ? "at " + format_quantile(options_.confidence)
                                         : "without revocations (not simulated: --runs 0)",
                       has_deadline ? "cheapest" : "fastest");
  }
  if (!found.fastest || !found.cheapest) {
    return "no configuration of the catalog can train this workload";
  }
  // The programme knows nothing of the batch (judged() does): where every server of the catalog
  // runs more workers than the global batch has samples, the batch is what no plan meets, not
  // the deadline or the budget.
  const int max_workers = options_.max_workers_for_batch;
  const auto workers_of = [&](const Configuration& c) {
    return c.shape(options_.architecture).total_workers();
  };
  if (max_workers > 0 && !found.offers.empty()) {
    int fewest = std::numeric_limits<int>::max();
    for (const auto& o : found.offers) {
      fewest = std::min(fewest, workers_of(with_support_server({{o.type, o.market, 1}}, support_)));
    }
    if (fewest > max_workers) {
      return fmt::format(
          "no configuration trains a global batch of {}: every server of the catalog runs more "
          "workers (one per GPU), at least {}, so a worker would train on no sample; accepted: "
          "a global batch of {} or more",
          max_workers, fewest, fewest);
    }
  }
  const auto fits_batch = [&](const Evaluation& e) {
    return max_workers <= 0 || workers_of(e.configuration) <= max_workers;
  };
  // With a deadline the fastest plan is the one to know about; with a budget only, the cheapest.
  // The programme's fastest and cheapest add their groups' speeds, which overstates a mix with
  // all-reduce: a point of the front (which holds the baselines) judged faster, or cheaper, by
  // the model is the one quoted then; one the batch allows before one it does not.
  Evaluation f = on_paper(has_deadline ? *found.fastest : *found.cheapest, "fastest");
  for (const auto& e : result.pareto) {
    const bool better = has_deadline ? e.predicted_time_s < f.predicted_time_s
                                     : e.predicted_cost_usd < f.predicted_cost_usd;
    if (fits_batch(e) && (better || !fits_batch(f))) f = e;
  }
  std::string out = fmt::format("no configuration finishes {}{}; the {} ({}) costs {} and takes {}",
                                request_.text(), any_chosen ? " with enough certainty" : "",
                                has_deadline ? "fastest" : "cheapest", f.configuration.text(),
                                format_usd(f.predicted_cost_usd), format_hours(f.predicted_time_s));
  if (!fits_batch(f)) {
    out += fmt::format(", but its {} workers are more than the global batch of {} has samples",
                       workers_of(f.configuration), max_workers);
  }
  if (any_chosen) {
    out += "; the plans that do on paper miss at " + format_quantile(options_.confidence);
  }
  return out;
}

PlanResult Planner::plan() {
  if (!request_.has_deadline() && !request_.has_budget()) {
    throw InputError(
        "plan needs a --deadline (e.g. 2h: the cheapest plan that finishes in time) or a "
        "--budget (e.g. 5: the fastest plan within $5), or both");
  }
  PlanResult result;
  result.flopp = rank_by_flopp(catalog_, options_.zones);

  // Candidate enumeration.
  const internal::Candidates found =
      internal::enumerate_candidates(result.flopp, *throughput_, options_, request_, support_,
                                     request_constraints(options_, request_, start_pause_s_));
  result.mip_solves = found.mip_solves;

  // Evaluation: on paper to shortlist and to draw the front, by simulation to choose.
  const std::vector<Configuration> chosen = shortlist(found);
  const auto baseline_configurations = baselines(found.offers);
  std::vector<Evaluation> plotted;
  for (const auto* list : {&found.pool, &found.always}) {
    for (const auto& c : *list) plotted.push_back(on_paper(c, "pareto"));
  }
  for (const auto& b : baseline_configurations) plotted.push_back(on_paper(b.second, "pareto"));
  result.pareto = pareto_front(std::move(plotted));
  result.candidates = simulated_candidates(chosen);
  for (const auto& [label, c] : baseline_configurations) {
    result.baselines.push_back(evaluate(c, label));
  }

  // Choice.
  result.recommended = recommended(result);
  result.feasible = result.recommended.has_value();
  result.reason = reason(result, found, !chosen.empty());
  return result;
}

}  // namespace transient::plan
