// Deadline-aware market choice for a job with a deadline: at every decision (a tick of
// `decision_interval_s`, and every revocation) the policy says whether the whole cluster should
// run on spot servers, on on-demand servers, or wait idle. The simulator then releases servers of
// the other market (gracefully: a checkpoint first) and requests what is missing.
//
// Policies may keep state for a run, so each simulated run uses its own instance (one per
// Simulator, which is used by one thread). `optimal` is offline: it is given the whole market
// realisation before the run (OfflineMarket) and follows the cheapest schedule that meets the
// deadline (optimal_schedule.h).
#pragma once

#include "transient/core/registry.h"

#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace transient::sim {

class AvailabilityPrior;

enum class ClusterMode : std::uint8_t { idle, spot, on_demand };

std::string_view to_string(ClusterMode mode);  // "idle", "spot", "on-demand"

// What a policy sees at a decision.
struct DeadlineState {
  double now_s = 0.0;                    // seconds since the run's start
  double progress_steps = 0.0;           // steps done (not all checkpointed)
  double checkpoint_steps = 0.0;         // steps the last checkpoint saved, <= progress_steps
  double total_steps = 0.0;              // steps the job needs
  double deadline_s = 0.0;               // the deadline, seconds since the start
  double steps_per_s = 0.0;              // speed of the full cluster, either market
  double spot_changeover_s = 0.0;        // start-up + restart pause when moving to spot
  double on_demand_changeover_s = 0.0;   // start-up + restart pause when moving to on-demand
  double decision_interval_s = 0.0;      // seconds between decision ticks
  ClusterMode mode = ClusterMode::idle;  // the mode chosen last
  bool spot_available = false;           // can spot servers be had now
  double notice_s = 0.0;                 // warning before a revocation
  // When the whole cluster trains (or resumes training after its pause) in the current mode:
  // now or later; infinity when it is not all in and formed. With checkpoints at every notice a
  // revocation then loses at most the work of the notice period, so a running spot cluster is
  // worth more to the safety net than one still waiting for its servers.
  double training_from_s = INFINITY;
  bool checkpoint_on_notice = true;  // a checkpoint is written at every preemption notice
  double spot_usd_per_s = 0.0;       // the cluster's workers on spot, $ per second
  double on_demand_usd_per_s = 0.0;  // the cluster's workers on demand, $ per second
};

// The deadline-safety rules shared by the deadline-safe policies (greedy, uniform-progress,
// market-aware). A policy that goes on demand whenever spot_unsafe() says so, and only leaves
// on-demand servers when leaving_on_demand_is_safe() says so, finishes by the deadline whenever
// on-demand servers alone could still have made it at the start, provided start-up takes its
// mean, periodic checkpoints do not stop training and the policy is asked at every tick and
// revocation (tests/sim/deadline_safety_test.cc). The invariant behind it: at every decision,
// going on demand still finishes by the deadline; spot_unsafe() keeps it to the next decision.
//
// The latest the job can finish if it stays in spot mode (or idle) until the next decision and
// then falls back to on demand, assuming the worst revocation in between. That includes one
// whose notice came before now and whose revocation comes after the next tick (a notice longer
// than the decision interval): its loss, the work since the notice, is already fixed now.
double worst_on_demand_fallback_finish_s(const DeadlineState& state);
// Staying on spot (or idle) one more decision could make the deadline unreachable on demand.
bool spot_unsafe(const DeadlineState& state);
// Leaving a running on-demand cluster for spot now keeps the on-demand fallback open.
bool leaving_on_demand_is_safe(const DeadlineState& state);
// Going on demand now (or staying) finishes by the deadline.
bool on_demand_meets_deadline(const DeadlineState& state);

// A spot server as the market gives it: obtained at obtain_s (a request may wait for spot; never:
// infinity) and revoked at revoke_s (infinity: never), seconds since the run's start.
struct SpotServer {
  double obtain_s = 0.0;
  double revoke_s = INFINITY;
};

// The whole market of one run, for offline policies, on the decision grid.
struct OfflineMarket {
  std::vector<std::uint8_t> spot_ticks;  // 1 = spot servers can be had and kept all of tick i
  // When spot can be had for part of tick i only (spot comes or goes inside it): over
  // [spot_from_s[i], spot_to_s[i]) seconds into the tick (as in multi_region.h). Empty: none such.
  std::vector<double> spot_from_s, spot_to_s;
  double tick_s = 600.0;                // length of a tick (the decision interval)
  double work_s = 0.0;                  // seconds of full-cluster work the job needs
  double deadline_s = 0.0;              // the deadline
  double spot_changeover_s = 0.0;       // as in DeadlineState
  double on_demand_changeover_s = 0.0;  // as in DeadlineState
  double notice_s = 0.0;                // work after the notice is lost at a revocation
  double spot_usd_per_s = 0.0;          // the cluster's workers on spot, $ per second
  double on_demand_usd_per_s = 0.0;     // the cluster's workers on demand, $ per second
  double fixed_usd_per_s = 0.0;         // servers billed throughout (parameter server)
  // Set where each spot server is had and revoked on its own (market::RevocationModel::
  // spot_by_launch, a cluster of one server): the server that the n-th spot request of a tick,
  // made at `request_s`, gets; then spot_ticks and the spans above are not what a server meets.
  std::function<SpotServer(double request_s, int n)> spot_server;
  // Set with spot_server: the changeover of the n-th request for `mode` (spot or on demand) in
  // the tick of `request_s`, each request's server starting in a time of its own (the run's
  // draw) rather than the means above.
  std::function<double(ClusterMode mode, double request_s, int n)> changeover_s;
};

class MarketPolicy {
 public:
  virtual ~MarketPolicy() = default;
  virtual std::string name() const = 0;
  virtual std::string describe() const = 0;
  // Whether begin_run needs the OfflineMarket (computing it costs a pass over the trace).
  virtual bool needs_offline_market() const { return false; }
  // What is known of the market before any run (the model the scenario was made with): policies
  // that plan with it keep it, the others ignore it. Called before the first run, or never.
  virtual void know_market(std::shared_ptr<const AvailabilityPrior> prior) { (void)prior; }
  // Called before each run; `market` is null unless needs_offline_market().
  virtual void begin_run(const OfflineMarket* market) { (void)market; }
  virtual ClusterMode decide(const DeadlineState& state) = 0;
};

// Every registered one, in a stable order (core/registry.h).
const std::vector<PluginInfo>& market_policies();

// Throws InputError for an unknown name, listing the valid ones.
std::unique_ptr<MarketPolicy> create_market_policy(const std::string& name);

}  // namespace transient::sim
