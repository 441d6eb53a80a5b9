// The deadline-aware market policies of the registry.
#include <algorithm>
#include <cmath>
#include <vector>

#include "transient/core/error.h"
#include "transient/core/registry.h"
#include "transient/sim/availability_prior.h"
#include "transient/sim/expected_cost_plan.h"
#include "transient/sim/market_policy.h"
#include "transient/sim/optimal_schedule.h"

namespace transient::sim {
namespace {

double remaining_work_s(const DeadlineState& s) {
  return std::max(0.0, s.total_steps - s.progress_steps) / s.steps_per_s;
}

// The policy's answer when spot_unsafe(): on demand while that still makes the deadline; when it
// no longer can, a spot cluster that is training is the only chance left and is kept.
ClusterMode safety_net(const DeadlineState& s) {
  if (s.mode == ClusterMode::spot && std::isfinite(s.training_from_s) &&
      !on_demand_meets_deadline(s)) {
    return ClusterMode::spot;
  }
  return ClusterMode::on_demand;
}

class SpotOnly : public MarketPolicy {
 public:
  std::string name() const override { return "spot-only"; }
  std::string describe() const override {
    return "always spot; wait while none can be had (may miss the deadline)";
  }
  ClusterMode decide(const DeadlineState&) override { return ClusterMode::spot; }
};

class OnDemandOnly : public MarketPolicy {
 public:
  std::string name() const override { return "on-demand-only"; }
  std::string describe() const override { return "always on demand: the baseline"; }
  ClusterMode decide(const DeadlineState&) override { return ClusterMode::on_demand; }
};

class Greedy : public MarketPolicy {
 public:
  std::string name() const override { return "greedy"; }
  std::string describe() const override {
    return "spot (or wait for it) while the deadline allows, then on demand to the end";
  }
  ClusterMode decide(const DeadlineState& s) override {
    if (s.mode == ClusterMode::on_demand) return ClusterMode::on_demand;
    return spot_unsafe(s) ? safety_net(s) : ClusterMode::spot;
  }
};

// "Can't Be Late" (Wu et al., NSDI 2024), Uniform Progress: keep progress at or above the line
// from (0, 0) to (deadline, total steps). Spot whenever it can be had and the job is not behind;
// on demand while behind; back to spot once ahead by more than a changeover's work, if the
// on-demand fallback stays open; and the safety net, after which it stays on demand.
class UniformProgress : public MarketPolicy {
 public:
  std::string name() const override { return "uniform-progress"; }
  std::string describe() const override {
    return "keep progress on or above the uniform line to the deadline: spot when available, "
           "on demand while behind (Can't Be Late, NSDI 2024)";
  }
  void begin_run(const OfflineMarket*) override { final_on_demand_ = false; }
  ClusterMode decide(const DeadlineState& s) override {
    if (final_on_demand_) return ClusterMode::on_demand;
    if (s.mode != ClusterMode::on_demand && spot_unsafe(s)) {
      const ClusterMode mode = safety_net(s);
      final_on_demand_ = mode == ClusterMode::on_demand;
      return mode;
    }
    const double line_steps = s.total_steps * s.now_s / s.deadline_s;
    if (s.mode == ClusterMode::on_demand) {
      const double margin_steps = s.steps_per_s * s.spot_changeover_s;
      return s.spot_available && s.progress_steps >= line_steps + margin_steps &&
                     leaving_on_demand_is_safe(s)
                 ? ClusterMode::spot
                 : ClusterMode::on_demand;
    }
    if (s.spot_available || s.progress_steps >= line_steps) return ClusterMode::spot;
    return ClusterMode::on_demand;
  }

 private:
  bool final_on_demand_ = false;
};

// With what is known of the market (an AvailabilityPrior: how long spot periods and outages
// last, given how long they have lasted), it follows the plan of the cheapest expected schedule
// that keeps the deadline in that model (expected_cost_plan.h): skip a spot period that is
// likely to be too short to repay its changeover, wait through an outage that is likely to end
// soon, run on demand through one that is not, and go back to spot when the spot period is
// expected to repay the changeovers. The age of the current availability is what the policy has
// seen at its decisions (unknown until it sees a change). Without a prior (or one on another
// grid) it falls back to what it learns in the run: it spends the slack waiting for spot while
// it lasts and runs on demand only through outages once the slack is low, expecting outages and
// spot periods to last as those seen so far (none yet: as long again as they have lasted). Either
// way it keeps the safety net of the other deadline-safe policies.
class MarketAware : public MarketPolicy {
 public:
  std::string name() const override { return "market-aware"; }
  std::string describe() const override {
    return "plans on the market's availability model (how long spot periods and outages last "
           "given their age): skips short spot periods, waits out short outages, deadline-safe";
  }
  void know_market(std::shared_ptr<const AvailabilityPrior> prior) override {
    prior_ = std::move(prior);
    plan_.reset();
  }
  void begin_run(const OfflineMarket*) override {
    seen_ = false;
    available_ = false;
    changed_s_ = 0.0;
    up_runs_.clear();
    down_runs_.clear();
  }
  ClusterMode decide(const DeadlineState& s) override {
    observe(s);
    if (s.mode != ClusterMode::on_demand && spot_unsafe(s)) return safety_net(s);
    if (const ExpectedCostPlan* plan = plan_for(s)) return planned(s, *plan);
    return learnt(s);
  }

 private:
  // The plan for this job, made at its first decision and kept for the next runs.
  const ExpectedCostPlan* plan_for(const DeadlineState& s) {
    if (!prior_ || prior_->tick_s() != s.decision_interval_s || !std::isfinite(s.deadline_s) ||
        std::max({s.spot_changeover_s, s.on_demand_changeover_s, s.notice_s}) >=
            s.decision_interval_s) {
      return nullptr;
    }
    OfflineMarket job;
    job.tick_s = s.decision_interval_s;
    job.work_s = s.total_steps / s.steps_per_s;
    job.deadline_s = s.deadline_s;
    job.spot_changeover_s = s.spot_changeover_s;
    job.on_demand_changeover_s = s.on_demand_changeover_s;
    job.notice_s = s.notice_s;
    job.spot_usd_per_s = s.spot_usd_per_s;
    job.on_demand_usd_per_s = s.on_demand_usd_per_s;
    if (!plan_ || !plan_->made_for(job)) plan_ = std::make_shared<ExpectedCostPlan>(job, *prior_);
    return plan_.get();
  }

  ClusterMode planned(const DeadlineState& s, const ExpectedCostPlan& plan) const {
    const int tick = static_cast<int>(std::floor(s.now_s / s.decision_interval_s + 1e-9));
    const ClusterMode running = std::isfinite(s.training_from_s) ? s.mode : ClusterMode::idle;
    const bool changes_seen = !up_runs_.empty() || !down_runs_.empty();
    const int age =
        changes_seen ? static_cast<int>(std::lround((s.now_s - changed_s_) / s.decision_interval_s))
                     : AvailabilityPrior::kUnknownAge;
    const ClusterMode mode =
        plan.decide(tick, s.progress_steps / s.steps_per_s, running, s.spot_available, age);
    if (mode == ClusterMode::on_demand) return mode;
    if (mode == ClusterMode::spot) {
      return s.mode != ClusterMode::on_demand || leaving_on_demand_is_safe(s)
                 ? ClusterMode::spot
                 : ClusterMode::on_demand;
    }
    // Waiting: no progress, maybe for a whole tick.
    DeadlineState waiting = s;
    waiting.mode = ClusterMode::idle;
    waiting.training_from_s = INFINITY;
    if (s.mode == ClusterMode::on_demand || s.mode == ClusterMode::spot) {
      waiting.checkpoint_steps = s.progress_steps;  // leaving writes a checkpoint
    }
    if (!spot_unsafe(waiting)) return ClusterMode::idle;
    if (s.mode == ClusterMode::spot && s.spot_available) return ClusterMode::spot;
    return ClusterMode::on_demand;
  }

  ClusterMode learnt(const DeadlineState& s) const {
    const double slack_s = s.deadline_s - s.now_s - s.on_demand_changeover_s - remaining_work_s(s);
    const double age_s = s.now_s - changed_s_;
    if (s.spot_available) {
      if (s.mode != ClusterMode::on_demand) return ClusterMode::spot;
      if (!leaving_on_demand_is_safe(s)) return ClusterMode::on_demand;
      const double changeovers_usd =
          s.spot_changeover_s * s.spot_usd_per_s + s.on_demand_changeover_s * s.on_demand_usd_per_s;
      const double saving_usd_per_s = s.on_demand_usd_per_s - s.spot_usd_per_s;
      return expected_left_s(up_runs_, age_s) * saving_usd_per_s > changeovers_usd
                 ? ClusterMode::spot
                 : ClusterMode::on_demand;
    }
    if (s.mode == ClusterMode::on_demand) return ClusterMode::on_demand;
    // Enough to go on demand at the next tick and come back to spot once, and to pay part of the
    // spot changeover and the notice's loss of each spot period still to come (the work left
    // over the mean spot period seen): slack spent waiting now cannot buy those later.
    double up_s = 0.0;
    for (const double d : up_runs_) up_s += d;
    const double periods_left =
        up_runs_.empty() ? 0.0 : remaining_work_s(s) / (up_s / up_runs_.size());
    const double reserve_s = s.decision_interval_s + s.spot_changeover_s +
                             s.on_demand_changeover_s +
                             kReservedPerPeriod * periods_left * (s.spot_changeover_s + s.notice_s);
    return slack_s - expected_left_s(down_runs_, age_s) > reserve_s ? ClusterMode::spot
                                                                    : ClusterMode::on_demand;
  }

  // Mean of (d - age) over the runs d seen longer than `age`; none: `age` again.
  static double expected_left_s(const std::vector<double>& runs, double age_s) {
    double sum = 0.0;
    int count = 0;
    for (const double d : runs) {
      if (d > age_s) {
        sum += d - age_s;
        ++count;
      }
    }
    return count > 0 ? sum / count : age_s;
  }
  void observe(const DeadlineState& s) {
    if (!seen_) {
      seen_ = true;
      available_ = s.spot_available;
      changed_s_ = s.now_s;
      return;
    }
    if (s.spot_available == available_) return;
    (available_ ? up_runs_ : down_runs_).push_back(s.now_s - changed_s_);
    available_ = s.spot_available;
    changed_s_ = s.now_s;
  }

  // Without a prior: the share of each future spot period's overheads kept in reserve; 0.5 was
  // the best of 0, 0.25, 0.5, 1 and 2 on the shared traces (docs/scenarios.md), a choice fitted
  // to them.
  static constexpr double kReservedPerPeriod = 0.5;

  std::shared_ptr<const AvailabilityPrior> prior_;
  std::shared_ptr<const ExpectedCostPlan> plan_;  // for the job of the last decision
  bool seen_ = false;
  bool available_ = false;
  double changed_s_ = 0.0;
  std::vector<double> up_runs_;    // lengths of the spot periods seen, seconds
  std::vector<double> down_runs_;  // lengths of the outages seen, seconds
};

class Optimal : public MarketPolicy {
 public:
  std::string name() const override { return "optimal"; }
  std::string describe() const override {
    return "offline: knows the whole trace and follows the cheapest schedule that meets the "
           "deadline (the lower bound)";
  }
  bool needs_offline_market() const override { return true; }
  void begin_run(const OfflineMarket* market) override {
    TRANSIENT_CHECK(market != nullptr);
    schedule_ = optimal_schedule(*market);
    tick_s_ = market->tick_s;
    tick_ = kNone;
  }
  ClusterMode decide(const DeadlineState& s) override {
    const auto tick = static_cast<std::size_t>(std::floor(s.now_s / tick_s_ + 1e-9));
    if (!schedule_.feasible || tick >= schedule_.ticks.size()) return ClusterMode::on_demand;
    // Asked inside a tick: its spot servers were revoked (the simulator asks at once).
    const bool inside = s.now_s - static_cast<double>(tick) * tick_s_ > 1e-6;
    if (!inside) return schedule_.ticks[tick];
    revocations_ = tick == tick_ ? revocations_ + 1 : 0;
    tick_ = tick;
    const auto& after = schedule_.after_revocation[tick];
    if (after.empty()) return ClusterMode::idle;
    return after[std::min(revocations_, after.size() - 1)];
  }

 private:
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  OptimalSchedule schedule_;
  double tick_s_ = 600.0;
  std::size_t tick_ = kNone;     // the tick of the last revocation
  std::size_t revocations_ = 0;  // revocations in it before the last one
};

}  // namespace

double worst_on_demand_fallback_finish_s(const DeadlineState& s) {
  // Revoked at r, the job keeps what its last checkpoint saved (the notice's, at r - notice, or
  // an older one) and the policy is asked at once: it finishes on demand at r + the on-demand
  // changeover + the work left after the loss. r is at most the next tick, or for a training
  // cluster the job's finish if that comes first; later revocations are a later decision's.
  const double work_s = remaining_work_s(s);
  const double unsaved_s = std::max(0.0, s.progress_steps - s.checkpoint_steps) / s.steps_per_s;
  const bool training = s.mode == ClusterMode::spot && std::isfinite(s.training_from_s);
  const double resumes_s = training ? std::max(s.now_s, s.training_from_s) : INFINITY;
  const double last_s = std::min(s.now_s + s.decision_interval_s, resumes_s + work_s);
  // Without notice checkpoints a revocation loses all the work since the last checkpoint.
  if (!s.checkpoint_on_notice) return last_s + s.on_demand_changeover_s + unsaved_s + work_s;
  // A revocation one notice after training resumes or later is repaid by the progress since.
  double revoked_s = std::min(last_s, resumes_s + s.notice_s);
  // One whose notice came before now saved less than the progress now: it loses the work done
  // since its notice, up to all that is unsaved. The latest such revocation is one notice from
  // now, and it may come after the next tick, where it is already too late to avoid.
  revoked_s += std::min(unsaved_s, std::max(0.0, s.now_s + s.notice_s - revoked_s));
  return revoked_s + s.on_demand_changeover_s + work_s;
}

bool spot_unsafe(const DeadlineState& s) {
  return worst_on_demand_fallback_finish_s(s) > s.deadline_s;
}

bool leaving_on_demand_is_safe(const DeadlineState& s) {
  DeadlineState on_spot = s;
  on_spot.mode = ClusterMode::spot;
  // Spot that can be had now starts training after its changeover, and a revocation before that
  // is a decision at once; spot that cannot waits, maybe a whole tick without progress.
  on_spot.training_from_s = s.spot_available ? s.now_s + s.spot_changeover_s : INFINITY;
  on_spot.checkpoint_steps = s.progress_steps;  // leaving writes a checkpoint
  return !spot_unsafe(on_spot);
}

bool on_demand_meets_deadline(const DeadlineState& s) {
  double from_s = s.now_s + s.on_demand_changeover_s;
  if (s.mode == ClusterMode::on_demand && std::isfinite(s.training_from_s)) {
    from_s = std::max(s.now_s, s.training_from_s);
  }
  return from_s + remaining_work_s(s) <= s.deadline_s;
}

std::string_view to_string(ClusterMode mode) {
  switch (mode) {
    case ClusterMode::idle:
      return "idle";
    case ClusterMode::spot:
      return "spot";
    case ClusterMode::on_demand:
      return "on-demand";
  }
  return "?";
}

namespace {

const NoArgumentRegistry<MarketPolicy>& market_policy_registry() {
  static const NoArgumentRegistry<MarketPolicy> all(
      "market policy", {no_argument_entry<MarketPolicy, SpotOnly>("spot-only"),
                        no_argument_entry<MarketPolicy, OnDemandOnly>("on-demand-only"),
                        no_argument_entry<MarketPolicy, Greedy>("greedy"),
                        no_argument_entry<MarketPolicy, UniformProgress>("uniform-progress"),
                        no_argument_entry<MarketPolicy, MarketAware>("market-aware"),
                        no_argument_entry<MarketPolicy, Optimal>("optimal")});
  return all;
}

}  // namespace

const std::vector<PluginInfo>& market_policies() { return market_policy_registry().infos(); }

std::unique_ptr<MarketPolicy> create_market_policy(const std::string& name) {
  return market_policy_registry().at(name).create();
}

}  // namespace transient::sim
