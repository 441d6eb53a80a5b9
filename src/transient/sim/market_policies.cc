// The deadline-aware market policies of the registry.
#include <cmath>

#include "transient/core/error.h"
#include "transient/sim/market_policy.h"
#include "transient/sim/optimal_schedule.h"

namespace transient::sim {
namespace {

// True when waiting one more tick without progress would leave too little time to finish on
// demand: the last moment greedy and uniform-progress can still switch.
bool must_switch_to_on_demand(const DeadlineState& s) {
  const double remaining_s = (s.total_steps - s.progress_steps) / s.steps_per_s;
  const double changeover_s = s.mode == ClusterMode::on_demand ? 0.0 : s.on_demand_changeover_s;
  return s.now_s + s.decision_interval_s + changeover_s + remaining_s > s.deadline_s;
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
    if (s.mode == ClusterMode::on_demand || must_switch_to_on_demand(s)) {
      return ClusterMode::on_demand;
    }
    return ClusterMode::spot;
  }
};

// "Can't Be Late" (Wu et al., NSDI 2024), Uniform Progress: keep progress at or above the line
// from (0, 0) to (deadline, total steps). Spot whenever it can be had and the job is not behind;
// on demand while behind; back to spot once ahead by more than a changeover's work; and the
// greedy safety net near the deadline, after which it stays on demand.
class UniformProgress : public MarketPolicy {
 public:
  std::string name() const override { return "uniform-progress"; }
  std::string describe() const override {
    return "keep progress on or above the uniform line to the deadline: spot when available, "
           "on demand while behind (Can't Be Late, NSDI 2024)";
  }
  void begin_run(const OfflineMarket*) override { final_on_demand_ = false; }
  ClusterMode decide(const DeadlineState& s) override {
    if (final_on_demand_ || must_switch_to_on_demand(s)) {
      final_on_demand_ = true;
      return ClusterMode::on_demand;
    }
    const double line_steps = s.total_steps * s.now_s / s.deadline_s;
    if (s.mode == ClusterMode::on_demand) {
      const double margin_steps = s.steps_per_s * s.spot_changeover_s;
      return s.spot_available && s.progress_steps >= line_steps + margin_steps
                 ? ClusterMode::spot
                 : ClusterMode::on_demand;
    }
    if (s.spot_available || s.progress_steps >= line_steps) return ClusterMode::spot;
    return ClusterMode::on_demand;
  }

 private:
  bool final_on_demand_ = false;
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
  }
  ClusterMode decide(const DeadlineState& s) override {
    const auto tick = static_cast<std::size_t>(std::floor(s.now_s / tick_s_ + 1e-9));
    if (!schedule_.feasible || tick >= schedule_.ticks.size()) return ClusterMode::on_demand;
    return schedule_.ticks[tick];
  }

 private:
  OptimalSchedule schedule_;
  double tick_s_ = 600.0;
};

}  // namespace

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

const std::vector<MarketPolicyInfo>& market_policies() {
  static const std::vector<MarketPolicyInfo> infos = {
      {"spot-only", SpotOnly().describe()}, {"on-demand-only", OnDemandOnly().describe()},
      {"greedy", Greedy().describe()},      {"uniform-progress", UniformProgress().describe()},
      {"optimal", Optimal().describe()},
  };
  return infos;
}

std::unique_ptr<MarketPolicy> create_market_policy(const std::string& name) {
  if (name == "spot-only") return std::make_unique<SpotOnly>();
  if (name == "on-demand-only") return std::make_unique<OnDemandOnly>();
  if (name == "greedy") return std::make_unique<Greedy>();
  if (name == "uniform-progress") return std::make_unique<UniformProgress>();
  if (name == "optimal") return std::make_unique<Optimal>();
  std::string valid;
  for (const auto& info : market_policies()) valid += (valid.empty() ? "" : ", ") + info.name;
  throw InputError("unknown market policy \"" + name + "\"; accepted: " + valid);
}

}  // namespace transient::sim
