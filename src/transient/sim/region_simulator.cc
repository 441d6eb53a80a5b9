#include "transient/sim/region_simulator.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "transient/core/duration.h"
#include "transient/core/error.h"
#include "transient/core/random.h"
#include "transient/sim/availability_prior.h"
#include "transient/sim/internal/run_in_threads.h"
#include "transient/sim/recovery_model.h"

namespace transient::sim {
namespace {

std::string seconds_text(double s) {
  const long tenths = std::lround(s * 10.0);
  return std::to_string(tenths / 10) + "." + std::to_string(tenths % 10) + " s";
}

}  // namespace

RegionSimulator::RegionSimulator(Scenario scenario) : scenario_(std::move(scenario)) {
  const Scenario& s = scenario_;
  if (s.regions.empty()) throw InputError("the scenario has no regions");
  for (const Region& region : s.regions) TRANSIENT_CHECK(region.market != nullptr);
  if (!s.throughput) throw InputError("the scenario has no throughput model");
  if (!(s.total_steps > 0.0)) throw InputError("the job's steps must be > 0");
  if (s.market_policy == "none") {
    throw InputError("several regions need a market policy that moves the cluster");
  }
  if (!std::isfinite(s.deadline_s)) throw InputError("several regions need a deadline");
  if (std::isfinite(s.budget_usd)) throw InputError("several regions have no budget stop");
  if (s.workers.size() != 1) {
    throw InputError("a market policy moves one homogeneous group of workers; the scenario has " +
                     std::to_string(s.workers.size()) + " worker groups");
  }
  const ServerGroup& group = s.workers[0];
  if (!group.type.sold_in_both_markets()) {
    throw InputError("several regions need workers sold both on spot and on demand; \"" +
                     group.type.name + "\" is not");
  }
  policy_ = create_market_policy(s.market_policy);

  perf::ClusterShape shape;
  shape.architecture = s.architecture;
  int parameter_servers = 0;
  for (const auto& ps : s.parameter_servers) {
    parameter_servers += ps.count;
    job_.fixed_usd_per_s +=
        ps.count * ps.type.price_usd_per_h(cloud::Market::on_demand) * kHoursPerSecond;
  }
  shape.parameter_servers = std::max(1, parameter_servers);
  shape.workers.push_back({group.type, group.count});
  const double steps_per_s = s.throughput->predict(shape).steps_per_s;
  if (!(steps_per_s > 0.0)) {
    throw InputError("the throughput model predicts no progress for the cluster");
  }
  const double pause_s = create_recovery_model(s.recovery, s.recovery_options)->restart_pause_s();
  job_.tick_s = s.decision_interval_s;
  job_.work_s = s.total_steps / steps_per_s;
  job_.deadline_s = s.deadline_s;
  job_.spot_changeover_s = s.startup.mean_s(cloud::Market::spot) + pause_s;
  job_.on_demand_changeover_s = s.startup.mean_s(cloud::Market::on_demand) + pause_s;
  job_.move_s = s.move_s;
  job_.move_usd = s.move_usd;
  job_.notice_s = s.notice_s;
  job_.spot_usd_per_s =
      group.count * group.type.price_usd_per_h(cloud::Market::spot) * kHoursPerSecond;
  job_.on_demand_usd_per_s =
      group.count * group.type.price_usd_per_h(cloud::Market::on_demand) * kHoursPerSecond;
  const double longest_s =
      std::max({job_.spot_changeover_s + job_.move_s, job_.on_demand_changeover_s, job_.notice_s});
  if (!(longest_s < job_.tick_s)) {
    throw InputError(
        "several regions need a decision interval longer than the start-up plus the restart "
        "pause and the move, and the notice (" +
        seconds_text(longest_s) + ")");
  }

  std::shared_ptr<const AvailabilityPrior> prior = s.market_prior;
  if (!prior) {
    // Spot as the job finds it following spot from region to region (run_multi_region).
    std::vector<std::vector<std::uint8_t>> regions;
    for (const Region& region : s.regions) {
      regions.push_back(AvailabilityPrior::sample_ticks(
          *region.market, s.start_hour_of_day, job_.tick_s, AvailabilityPrior::kModelSpanS));
    }
    prior = std::make_shared<AvailabilityPrior>(AvailabilityPrior::following(regions, job_.tick_s));
  }
  policy_->know_market(std::move(prior));
}

MultiRegionMarket RegionSimulator::market(std::uint64_t seed) const {
  MultiRegionMarket m = job_;
  const int ticks = static_cast<int>(std::ceil(m.deadline_s / m.tick_s - 1e-9)) + 1;
  for (std::size_t r = 0; r < scenario_.regions.size(); ++r) {
    // The same start for every region (a trace's offset), revocations drawn per region.
    Rng rng(seed);
    auto timeline = scenario_.regions[r].market->start_run(scenario_.start_hour_of_day, rng);
    Rng draws(seed ^ (0x9e3779b97f4a7c15ULL * (r + 1)));
    // A spot tick is one a server holds through. A server lives until the market revokes it
    // (the tick it is revoked in has no spot), and the next available tick starts another.
    std::vector<std::uint8_t> spot(ticks);
    double revoked_s = -1.0;  // when the region's last server is revoked
    for (int i = 0; i < ticks; ++i) {
      const double t = i * m.tick_s;
      if (!timeline->available_at(t)) continue;
      if (revoked_s <= t) revoked_s = timeline->revocation_time_s(t, draws);
      spot[i] = revoked_s >= t + m.tick_s - 1e-9;
    }
    m.spot_ticks.push_back(std::move(spot));
  }
  return m;
}

RegionRunResult RegionSimulator::run(std::uint64_t seed) {
  const MultiRegionMarket m = market(seed);
  RegionRunResult result;
  result.optimal = optimal_multi_region(m);
  if (policy_->needs_offline_market()) {
    // `optimal` follows the optimum's schedule (on demand if no schedule meets the deadline).
    result.run = replay_multi_region(m, result.optimal.ticks);
  } else {
    result.run = run_multi_region(m, *policy_);
  }
  return result;
}

std::vector<RegionRunResult> run_many_regions(const Scenario& scenario,
                                              const MonteCarloOptions& options) {
  return internal::run_seeded<RegionSimulator>(scenario, options);
}

RunResult as_run_result(const MultiRegionResult& result) {
  RunResult r;
  r.finished = result.finished;
  r.missed_deadline = result.missed_deadline;
  r.time_s = result.finish_s;
  r.cost_usd = result.cost_usd;
  return r;
}

}  // namespace transient::sim
