// Small deterministic markets and scenarios for the simulator's golden tests.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "transient/core/random.h"
#include "transient/market/revocation_model.h"
#include "transient/perf/table_throughput_model.h"
#include "transient/sim/scenario.h"

namespace transient::sim::testing {

// The k-th spot server launched in a run is revoked `lifetimes_s[k]` seconds after its launch
// (kNever beyond the list); spot servers can always be had.
class FixedScheduleModel : public market::RevocationModel {
 public:
  explicit FixedScheduleModel(std::vector<double> lifetimes_s)
      : lifetimes_s_(std::move(lifetimes_s)) {}
  std::string name() const override { return "fixed-schedule"; }
  std::string describe() const override { return "test schedule"; }
  double sample_lifetime_s(Rng&) const override {
    return lifetimes_s_.empty() ? market::kNever : lifetimes_s_[0];
  }
  std::unique_ptr<market::MarketTimeline> start_run(double, Rng&) const override {
    return std::make_unique<Timeline>(lifetimes_s_);
  }

 private:
  class Timeline : public market::MarketTimeline {
   public:
    explicit Timeline(const std::vector<double>& lifetimes_s) : lifetimes_s_(lifetimes_s) {}
    double revocation_time_s(double launch_s, Rng&) override {
      const std::size_t k = launched_++;
      return k < lifetimes_s_.size() ? launch_s + lifetimes_s_[k] : market::kNever;
    }
    bool available_at(double) override { return true; }
    double next_available_s(double t_s) override { return t_s; }

   private:
    const std::vector<double>& lifetimes_s_;
    std::size_t launched_ = 0;
  };
  std::vector<double> lifetimes_s_;
};

// Lifetimes drawn from an exponential distribution: a random market for Monte Carlo tests.
class ExponentialTestModel : public market::RevocationModel {
 public:
  explicit ExponentialTestModel(double mean_s) : mean_s_(mean_s) {}
  std::string name() const override { return "exponential-test"; }
  std::string describe() const override { return "test"; }
  double sample_lifetime_s(Rng& rng) const override { return rng.exponential(1.0 / mean_s_); }
  std::unique_ptr<market::MarketTimeline> start_run(double, Rng&) const override {
    return std::make_unique<Timeline>(mean_s_);
  }

 private:
  class Timeline : public market::MarketTimeline {
   public:
    explicit Timeline(double mean_s) : mean_s_(mean_s) {}
    double revocation_time_s(double launch_s, Rng& rng) override {
      return launch_s + rng.exponential(1.0 / mean_s_);
    }
    bool available_at(double) override { return true; }
    double next_available_s(double t_s) override { return t_s; }

   private:
    double mean_s_;
  };
  double mean_s_;
};

// A server with a K80 at $0.72/h on demand and $0.36/h spot: $0.0002 and $0.0001 per second.
inline cloud::InstanceType k80() {
  cloud::InstanceType type;
  type.name = "k80-server";
  type.gpu = "K80";
  type.gpus = 1;
  type.on_demand_usd_per_h = 0.72;
  type.spot_usd_per_h = 0.36;
  return type;
}

// A parameter server at $0.36/h on demand.
inline cloud::InstanceType cpu() {
  cloud::InstanceType type;
  type.name = "cpu-server";
  type.on_demand_usd_per_h = 0.36;
  return type;
}

// K80 workers run 1 step/s each (async-ps sums, allreduce the same for one type).
inline std::shared_ptr<const perf::ThroughputModel> unit_speed() {
  return std::make_shared<perf::TableThroughputModel>(
      std::vector<perf::TablePoint>{{"K80", 1, 1.0}, {"K80", 2, 2.0}, {"K80", 8, 8.0}}, "unit");
}

// `count` spot K80 workers, 1000 steps, 10 s start-up, no market unless given.
inline Scenario base_scenario(int count, cloud::Market market = cloud::Market::spot) {
  Scenario s;
  s.name = "test";
  s.total_steps = 1000;
  s.workers.push_back({k80(), market, count});
  s.throughput = unit_speed();
  s.startup.spot_mean_s = 10.0;
  s.startup.on_demand_mean_s = 10.0;
  s.recovery_options.reform_s = 5.0;
  s.recovery_options.restart_s = 20.0;
  return s;
}

// Availability ticks (1 = spot can be had) in runs of random lengths: each tick the state is drawn
// again with a probability in [0.02, 0.62), up with a probability drawn once per trace.
inline std::vector<std::uint8_t> random_availability(Rng& rng, int ticks) {
  const double p_up = rng.uniform();
  const double p_change = 0.02 + 0.6 * rng.uniform();
  std::vector<std::uint8_t> trace(ticks);
  std::uint8_t state = rng.uniform() < p_up;
  for (auto& tick : trace) {
    if (rng.uniform() < p_change) state = rng.uniform() < p_up;
    tick = state;
  }
  return trace;
}

}  // namespace transient::sim::testing
