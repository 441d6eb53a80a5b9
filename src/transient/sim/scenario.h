// A simulated training job on a transient cluster, fully resolved: instance types looked up,
// models built. The scenario loader (scenario_loader.h) makes one from a TOML file; the planner
// builds them in code. A Scenario is immutable once built and may be shared between threads (the
// models it points to are).
#pragma once

#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "transient/cloud/instance_type.h"
#include "transient/market/revocation_model.h"
#include "transient/market/startup_model.h"
#include "transient/perf/throughput_model.h"
#include "transient/sim/availability_prior.h"
#include "transient/sim/recovery_model.h"

namespace transient::sim {

inline constexpr double kNoDeadline = std::numeric_limits<double>::infinity();
inline constexpr double kNoBudget = std::numeric_limits<double>::infinity();

// `count` servers of one type bought in one market, requested at the start.
struct ServerGroup {
  cloud::InstanceType type;                    // the server
  cloud::Market market = cloud::Market::spot;  // how it is bought
  int count = 1;                               // how many, >= 1
};

// Start-up delay from request to a server ready to train: measured samples (market's
// StartupModel) when given, else a normal distribution cut at zero.
struct StartupOptions {
  double spot_mean_s = 0.0;       // mean for spot servers (CM-DARE: about 70 s)
  double spot_std_s = 0.0;        // standard deviation for spot servers
  double on_demand_mean_s = 0.0;  // mean for on-demand servers
  double on_demand_std_s = 0.0;   // standard deviation for on-demand servers
  std::shared_ptr<const market::StartupModel> spot_model;       // overrides spot mean/std
  std::shared_ptr<const market::StartupModel> on_demand_model;  // overrides on-demand mean/std

  // The mean delay in `market`, from the model when there is one.
  double mean_s(cloud::Market market) const;
};

// One region or zone the job may run in (several regions: multi_region.h), with its spot market.
struct Region {
  std::string name;                                       // e.g. "us-west-2a", unique
  std::shared_ptr<const market::RevocationModel> market;  // its spot market, not null
};

struct Scenario {
  std::string name;  // for reports, e.g. the file name

  // The job.
  double total_steps = 0.0;         // global steps to train, > 0
  double deadline_s = kNoDeadline;  // seconds from the start; kNoDeadline = none
  double horizon_s = 30 * 86400.0;  // a run that has not finished by then is reported unfinished
  // Renting stops when a run's cost (every server, billed per second) reaches it: the run ends
  // there, unfinished (the rule of a plan with a budget and no deadline). kNoBudget = none; one
  // region only (multi_region.h has no budget).
  double budget_usd = kNoBudget;
  double start_hour_of_day = 0.0;  // local hour at the start, 0..24 (hour-of-day models)

  // The cluster.
  std::vector<ServerGroup> workers;            // the workers requested at the start
  std::vector<ServerGroup> parameter_servers;  // on-demand servers billed throughout
  perf::Architecture architecture = perf::Architecture::async_ps;  // how workers combine
  std::vector<cloud::InstanceType> replacement_types;  // more types a replacement may use

  // Models. throughput is required; market may be null (spot servers are never revoked).
  std::shared_ptr<const perf::ThroughputModel> throughput;
  std::shared_ptr<const market::RevocationModel> market;
  StartupOptions startup;
  double notice_s = 30.0;  // warning before a revocation (GCE 30 s, EC2 120 s)

  // Several regions (region_simulator.h): the job may follow spot between them, each with its own
  // market (then `market` is null). Empty: one region, `market`.
  std::vector<Region> regions;
  double move_s = 0.0;    // moving the checkpoint to another region: seconds, billed
  double move_usd = 0.0;  // moving the checkpoint to another region: $ a move (egress)

  // Recovery and checkpoints.
  std::string recovery = "in-place";  // recovery model (recovery_model.h registry)
  RecoveryOptions recovery_options;
  double checkpoint_interval_s = 0.0;  // periodic checkpoints; 0 = none
  double checkpoint_write_s = 0.0;     // seconds a checkpoint stops training
  bool checkpoint_on_notice = true;    // write a checkpoint at every preemption notice

  // Policies.
  std::string replacement = "same";    // replacement policy (replacement_policy.h registry)
  std::string market_policy = "none";  // "none" or a deadline-aware policy (market_policy.h)
  double decision_interval_s = 600.0;  // seconds between market-policy decisions
  // What the market policy knows of the market before a run (`market-aware` plans with it), on
  // the decision grid. Null: 30 days of `market` sampled on the grid (the model it was made
  // with); a benchmark gives one made without the run's own stretch of trace.
  std::shared_ptr<const AvailabilityPrior> market_prior;
};

}  // namespace transient::sim
