#include "transient/plan/run_policy.h"

#include <cmath>

#include <fmt/format.h>

#include "transient/core/text.h"
#include "transient/plan/planner.h"

namespace transient::plan {
namespace {

std::string money(double usd) { return fmt::format("${:.2f}", usd); }

const PolicyFigures* find_figures(const std::vector<PolicyFigures>& list, const std::string& name) {
  for (const auto& f : list) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

}  // namespace

const PolicyFigures* PolicyAdvice::chosen() const { return find_figures(policies, recommended); }

const PolicyFigures* PolicyAdvice::optimal() const { return find_figures(policies, "optimal"); }

bool PolicyAdvice::within_budget() const {
  const PolicyFigures* best = chosen();
  return budget_usd <= 0.0 || best == nullptr || best->expected_cost_usd <= budget_usd;
}

std::string PolicyAdvice::text() const {
  const PolicyFigures* best = chosen();
  if (best == nullptr) return "";
  std::string out =
      best->name == "none"
          ? fmt::format(
                "run without a market policy (the workers stay on spot; nothing guards "
                "the deadline): expected {}",
                money(best->expected_cost_usd))
          : fmt::format("run with the `{}` market policy: expected {}", best->name,
                        money(best->expected_cost_usd));
  if (const PolicyFigures* o = optimal()) {
    const double above = 100 * (best->cost_over_optimal - 1);
    // Equal to within the printed figure's rounding is "at" it: a ratio of 0.9999999999999999
    // read "0.0% below".
    const std::string percent = fmt::format("{:.1f}%", std::abs(above));
    const std::string where =
        percent == "0.0%" ? std::string("at") : percent + (above < 0 ? " below" : " above");
    out += fmt::format(", {} the offline {}{}{} ({}) on average", where,
                       optimal_exact ? "optimum" : "schedule",
                       best->name == "none" ? " of the market policies" : "",
                       optimal_exact ? "" : " (a heuristic on this market, not a bound)",
                       money(o->expected_cost_usd));
  }
  out += fmt::format(" over {} runs of the market planned with; {:.0f}% missed the deadline", runs,
                     100 * best->deadline_miss_share);
  if (!optimal() && !no_optimum_reason.empty()) {
    out += "; not compared with the offline optimum: " + no_optimum_reason;
  }
  if (!within_budget()) out += "; above the budget (" + money(budget_usd) + ")";
  if (best->name == "none") {
    // What the guarantee would cost: the cheapest deadline-safe policy.
    const PolicyFigures* safe = nullptr;
    for (const auto& f : policies) {
      if (f.name == "none" || f.name == "optimal") continue;
      if (safe == nullptr || f.expected_cost_usd < safe->expected_cost_usd) safe = &f;
    }
    if (safe != nullptr) {
      out += fmt::format("; the cheapest deadline-safe one, `{}`, expected {}", safe->name,
                         money(safe->expected_cost_usd));
    }
  }
  return out;
}

std::string RunPolicy::text() const {
  if (replacement == "none") return "all on-demand: nothing is revoked, no fallback needed";
  std::string out;
  if (replacement == "same") {
    std::string types;
    for (const auto& g : replaced_groups) types += (types.empty() ? "" : ", ") + g.type.name;
    out = "replace each revoked server with the same type on spot (" + types + ")";
  } else {
    out = "replace revoked servers by the `" + replacement + "` policy";
  }
  out += parameter_server ? "; the parameter server (" + support_server +
                                " on-demand) keeps the model, a lost chief restarts from the last "
                                "checkpoint"
                          : "; survivors keep training (in-place recovery)";
  if (stop_at_usd > 0.0) {
    out += "; no deadline: never fall back to on-demand, stop renting at " + money(stop_at_usd);
  }
  if (fallback) {
    const Fallback& f = *fallback;
    out += fmt::format(
        "; fall back to on-demand ({}) when the time to the deadline less the work left at "
        "{:.3g} steps/s falls below {:.0f} s (a {:.0f} s decision interval and a {:.0f} s "
        "changeover; the `{}` market policy); without revocations the plan's margin is {}",
        counted(f.servers, "server"), f.steps_per_s, f.reserve_s(), f.decision_interval_s,
        f.on_demand_changeover_s, market_policy, format_hours(f.margin_s));
  } else if (deadline && worker_groups > 1) {
    out += fmt::format(
        "; no market policy (one moves a single group of workers between markets, this plan has "
        "{})",
        worker_groups);
  }
  if (advice) out += "; " + advice->text();
  return out;
}

}  // namespace transient::plan
