#include "transient/sim/simulator.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <sstream>

#include "transient/core/duration.h"
#include "transient/core/error.h"

namespace transient::sim {
namespace {

std::string fixed(double value, int digits) {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(digits);
  out << value;
  return out.str();
}

// The decision tick holding `t_s`.
std::int64_t tick_of(double t_s, double tick_s) {
  return static_cast<std::int64_t>(std::floor(t_s / tick_s + 1e-9));
}

// The random stream of the n-th request of tick `tick` in the run `seed` (spot_by_launch
// markets), one per use: splitmix64's finaliser over the seed, the tick, the request's place in
// it and the use, so that the run and its offline optimum draw the same numbers whatever was
// requested before.
enum class RequestDraw : std::uint64_t { revocation = 0, spot_startup = 1, on_demand_startup = 2 };

Rng request_stream(std::uint64_t seed, std::int64_t tick, int n, RequestDraw use) {
  std::uint64_t z = seed ^ (static_cast<std::uint64_t>(tick) * 0x9e3779b97f4a7c15ULL) ^
                    (static_cast<std::uint64_t>(n) * 0xc2b2ae3d27d4eb4fULL) ^
                    (static_cast<std::uint64_t>(use) * 0x165667b19e3779f9ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return Rng(z ^ (z >> 31));
}

// The server that the n-th spot request of tick `tick`, made at `request_s`, gets in the run
// `seed` (spot_by_launch markets).
SpotServer spot_server(market::MarketTimeline& timeline, std::uint64_t seed, std::int64_t tick,
                       int n, double request_s) {
  SpotServer server;
  server.obtain_s = timeline.next_available_s(request_s);
  if (!std::isfinite(server.obtain_s)) return server;
  Rng own = request_stream(seed, tick, n, RequestDraw::revocation);
  server.revoke_s = timeline.revocation_time_s(server.obtain_s, own);
  return server;
}

// How long the server of a request takes to start, drawn from `rng`.
double sample_startup_s(const StartupOptions& startup, cloud::Market market, Rng& rng) {
  const auto& model = market == cloud::Market::spot ? startup.spot_model : startup.on_demand_model;
  if (model) return model->sample_s(rng);
  const double mean =
      market == cloud::Market::spot ? startup.spot_mean_s : startup.on_demand_mean_s;
  const double std = market == cloud::Market::spot ? startup.spot_std_s : startup.on_demand_std_s;
  if (std <= 0.0) return mean;
  return std::max(0.0, mean + std * rng.normal());
}

// The start-up of the n-th request for `market` in tick `tick` of the run `seed`
// (spot_by_launch markets): a stream of its own, as the server's revocation.
double request_startup_s(const StartupOptions& startup, std::uint64_t seed, std::int64_t tick,
                         int n, cloud::Market market) {
  Rng own = request_stream(
      seed, tick, n,
      market == cloud::Market::spot ? RequestDraw::spot_startup : RequestDraw::on_demand_startup);
  return sample_startup_s(startup, market, own);
}

}  // namespace

bool optimum_is_a_bound(const Scenario& s) {
  if (!s.market || s.market->spot_by_time()) return true;
  return s.market->spot_by_launch() && s.workers.size() == 1 && s.workers[0].count == 1;
}

std::string_view to_string(EventKind kind) {
  switch (kind) {
    case EventKind::requested:
      return "requested";
    case EventKind::ready:
      return "ready";
    case EventKind::notice:
      return "notice";
    case EventKind::revoked:
      return "revoked";
    case EventKind::released:
      return "released";
    case EventKind::checkpoint:
      return "checkpoint";
    case EventKind::done:
      return "done";
    case EventKind::deadline:
      return "deadline";
    case EventKind::decision:
      return "decision";
    case EventKind::horizon:
      return "horizon";
    case EventKind::budget:
      return "budget";
  }
  return "?";
}

Simulator::Simulator(Scenario scenario) : scenario_(std::move(scenario)) {
  if (!scenario_.throughput) throw InputError("the scenario has no throughput model");
  if (scenario_.workers.empty()) throw InputError("the scenario has no workers");
  if (!(scenario_.total_steps > 0.0)) throw InputError("the job's steps must be > 0");
  if (!(scenario_.budget_usd > 0.0)) throw InputError("the budget must be > 0 $");
  // A checkpoint every millisecond is billions of events a run; one that takes its whole interval
  // to write leaves no time to train.
  if (scenario_.checkpoint_interval_s != 0.0 && !(scenario_.checkpoint_interval_s >= 1.0)) {
    throw InputError("periodic checkpoints every " + fixed(scenario_.checkpoint_interval_s, 3) +
                     " s; accepted: 0 (none) or an interval of at least 1 s");
  }
  if (scenario_.checkpoint_interval_s > 0.0 &&
      !(scenario_.checkpoint_write_s < scenario_.checkpoint_interval_s)) {
    throw InputError("a checkpoint written in " + fixed(scenario_.checkpoint_write_s, 3) +
                     " s every " + fixed(scenario_.checkpoint_interval_s, 3) +
                     " s; accepted: a write shorter than the interval");
  }
  recovery_ = create_recovery_model(scenario_.recovery, scenario_.recovery_options);
  replacement_ = create_replacement_policy(scenario_.replacement);
  if (scenario_.market_policy != "none") {
    market_policy_ = create_market_policy(scenario_.market_policy);
    if (scenario_.workers.size() != 1) {
      throw InputError(
          "a market policy moves one homogeneous group of workers between markets; "
          "the scenario has " +
          std::to_string(scenario_.workers.size()) + " worker groups");
    }
    if (!(scenario_.decision_interval_s > 0.0)) {
      throw InputError("the decision interval must be > 0 s");
    }
    // Every policy is weighed against both markets' prices (the deadline state, the optimum).
    const cloud::InstanceType& type = scenario_.workers[0].type;
    if (!type.sold_in_both_markets()) {
      const cloud::Market lacking =
          type.has_market(cloud::Market::spot) ? cloud::Market::on_demand : cloud::Market::spot;
      throw InputError("a market policy moves the workers between spot and on demand, and \"" +
                       type.name + "\" has no " + std::string(cloud::to_string(lacking)) +
                       " price; accepted: a type sold in both markets, or market = \"none\"");
    }
  }

  // A type is its name where it is sold: the same name in another zone or region has its own
  // prices and its own links (as plan::Configuration::shape groups workers).
  auto type_index = [&](const cloud::InstanceType& type) {
    for (int i = 0; i < static_cast<int>(types_.size()); ++i) {
      if (types_[i].name == type.name && types_[i].zone == type.zone &&
          types_[i].region == type.region) {
        return i;
      }
    }
    types_.push_back(type);
    return static_cast<int>(types_.size() - 1);
  };
  for (const auto& group : scenario_.workers) {
    if (group.count < 1) throw InputError("a worker group has a count below 1");
    group_type_.push_back(type_index(group.type));
  }
  for (const auto& type : scenario_.replacement_types) type_index(type);
  for (const auto& group : scenario_.parameter_servers) {
    parameter_server_usd_per_s_ +=
        group.count * group.type.price_usd_per_h(cloud::Market::on_demand) * kHoursPerSecond;
    parameter_server_count_ += group.count;
  }
  counts_.assign(types_.size(), 0);

  if (market_policy_) {
    counts_[group_type_[0]] = scenario_.workers[0].count;
    full_cluster_steps_per_s_ = speed_for_counts();
    counts_[group_type_[0]] = 0;
    if (!(full_cluster_steps_per_s_ > 0.0)) {
      throw InputError("the throughput model predicts no progress for the cluster");
    }
    std::shared_ptr<const AvailabilityPrior> prior = scenario_.market_prior;
    if (!prior) {
      prior = scenario_.market ? std::make_shared<AvailabilityPrior>(AvailabilityPrior::sample(
                                     *scenario_.market, scenario_.start_hour_of_day,
                                     scenario_.decision_interval_s, AvailabilityPrior::kModelSpanS))
                               : std::make_shared<AvailabilityPrior>(std::vector<std::uint8_t>{1},
                                                                     scenario_.decision_interval_s);
    }
    market_policy_->know_market(std::move(prior));
    spot_by_launch_ =
        scenario_.market && scenario_.market->spot_by_launch() && !scenario_.market->spot_by_time();
    if (market_policy_->needs_offline_market()) {
      const double spot =
          scenario_.startup.mean_s(cloud::Market::spot) + recovery_->restart_pause_s();
      const double on_demand =
          scenario_.startup.mean_s(cloud::Market::on_demand) + recovery_->restart_pause_s();
      if (std::max({spot, on_demand, scenario_.notice_s}) >= scenario_.decision_interval_s) {
        throw InputError("the " + scenario_.market_policy +
                         " policy needs a decision interval longer than the start-up plus the "
                         "restart pause and the notice (" +
                         fixed(std::max({spot, on_demand, scenario_.notice_s}), 1) + " s)");
      }
    }
  }
  servers_.reserve(256);
  queue_.reserve(1024);
}

double Simulator::speed_for_counts() {
  // Up to 8 types of up to 255 workers pack into one key; other clusters are not cached.
  std::uint64_t key = 0;
  bool packable = counts_.size() <= 8;
  for (std::size_t i = 0; i < counts_.size() && packable; ++i) {
    if (counts_[i] > 255) packable = false;
    key |= static_cast<std::uint64_t>(counts_[i]) << (8 * i);
  }
  if (packable) {
    const auto it = speed_cache_.find(key);
    if (it != speed_cache_.end()) return it->second;
  }
  perf::ClusterShape shape;
  shape.architecture = scenario_.architecture;
  shape.parameter_servers = std::max(1, parameter_server_count_);
  for (std::size_t i = 0; i < counts_.size(); ++i) {
    if (counts_[i] > 0) shape.workers.push_back({types_[i], counts_[i]});
  }
  const double speed = scenario_.throughput->predict(shape).steps_per_s;
  if (packable) speed_cache_.emplace(key, speed);
  return speed;
}

RunResult Simulator::run(std::uint64_t seed, std::vector<TimelineEntry>* timeline,
                         TimelineDetail detail) {
  rng_ = Rng(seed);
  seed_ = seed;
  request_tick_ = -1;
  requests_in_tick_ = {0, 0};
  log_ = timeline;
  log_checkpoints_ = detail == TimelineDetail::every_event;
  queue_.clear();
  servers_.clear();
  std::fill(counts_.begin(), counts_.end(), 0);
  result_ = RunResult{};
  now_s_ = last_advance_s_ = 0.0;
  progress_steps_ = checkpoint_steps_ = rate_steps_per_s_ = pause_until_s_ = 0.0;
  members_ = pending_ = 0;
  chief_ = -1;
  running_ = ended_ = false;
  done_s_ = market::kNever;
  mode_ = ClusterMode::idle;
  budget_s_ = market::kNever;
  budget_reached_ = budget_stale_ = false;
  billed_ = 0;
  billed_usd_per_s_ = billed_offset_usd_ = 0.0;
  waiting_.clear();

  timeline_.reset();
  if (scenario_.market) {
    timeline_ = scenario_.market->start_run(scenario_.start_hour_of_day, rng_);
  }
  if (scenario_.deadline_s < scenario_.horizon_s) {
    queue_.push(scenario_.deadline_s, EventKind::deadline, -1, 0);
  }
  queue_.push(scenario_.horizon_s, EventKind::horizon, -1, 0);
  if (scenario_.checkpoint_interval_s > 0.0) {
    queue_.push(scenario_.checkpoint_interval_s, EventKind::checkpoint, -1, 0);
  }
  if (market_policy_) {
    if (market_policy_->needs_offline_market()) {
      const OfflineMarket market = offline_market(seed);
      market_policy_->begin_run(&market);
    } else {
      market_policy_->begin_run(nullptr);
    }
    on_decision();
  } else {
    for (std::size_t g = 0; g < scenario_.workers.size(); ++g) {
      for (int i = 0; i < scenario_.workers[g].count; ++i) {
        request(group_type_[g], scenario_.workers[g].market);
      }
    }
  }

  while (!ended_ && !queue_.empty()) {
    // The job's finish moves at every membership change, so it is kept beside the queue rather
    // than queued again each time; it comes first when it ties with a queued event. The budget's
    // moment, kept the same way, comes next: a run that finishes as it reaches the budget has
    // finished, and nothing after it is bought.
    if (budget_stale_) schedule_budget();
    internal::Event event;
    if (done_s_ <= queue_.top().time_s && done_s_ <= budget_s_) {
      event = internal::Event{done_s_, 0, 0, -1, EventKind::done};
    } else if (budget_s_ <= queue_.top().time_s) {
      event = internal::Event{budget_s_, 0, 0, -1, EventKind::budget};
    } else {
      event = queue_.pop();
      if (event.server >= 0 && servers_[event.server].generation != event.generation) continue;
    }
    now_s_ = event.time_s;
    advance();
    ++result_.events;
    switch (event.kind) {
      case EventKind::ready:
        on_ready(event.server);
        break;
      case EventKind::notice:
        on_notice(event.server);
        break;
      case EventKind::revoked:
        on_revoked(event.server);
        break;
      case EventKind::checkpoint:
        on_checkpoint();
        break;
      case EventKind::decision:
        on_decision();
        break;
      case EventKind::done:
        progress_steps_ = scenario_.total_steps;
        result_.finished = true;
        ended_ = true;
        log(EventKind::done, -1, "");
        break;
      case EventKind::deadline:
        log(EventKind::deadline, -1, "");
        break;
      case EventKind::horizon:
        ended_ = true;
        log(EventKind::horizon, -1, "");
        break;
      case EventKind::budget:
        on_budget();
        break;
      case EventKind::requested:
      case EventKind::released:
        break;
    }
  }

  result_.time_s = now_s_;
  for (auto& server : servers_) {
    if (server.state != ServerState::gone) bill(server);
  }
  result_.cost_usd += parameter_server_usd_per_s_ * now_s_;
  // Without a deadline nothing can miss it: an unfinished run is counted as unfinished alone.
  result_.missed_deadline =
      scenario_.deadline_s != kNoDeadline && (!result_.finished || now_s_ > scenario_.deadline_s);
  timeline_.reset();
  log_ = nullptr;
  return result_;
}

void Simulator::advance() {
  if (running_) {
    const double from = std::max(last_advance_s_, pause_until_s_);
    if (now_s_ > from) progress_steps_ += rate_steps_per_s_ * (now_s_ - from);
  }
  last_advance_s_ = now_s_;
}

void Simulator::update_rate() { rate_steps_per_s_ = members_ > 0 ? speed_for_counts() : 0.0; }

void Simulator::reschedule_done() {
  done_s_ = market::kNever;
  if (!running_ || !(rate_steps_per_s_ > 0.0)) return;
  const double remaining = std::max(0.0, scenario_.total_steps - progress_steps_);
  done_s_ = std::max(now_s_, pause_until_s_) + remaining / rate_steps_per_s_;
}

double StartupOptions::mean_s(cloud::Market market) const {
  if (market == cloud::Market::spot) return spot_model ? spot_model->mean_s() : spot_mean_s;
  return on_demand_model ? on_demand_model->mean_s() : on_demand_mean_s;
}

void Simulator::request(int type, cloud::Market market) {
  if (ended_) return;  // a request of a loop that the cap below has ended
  if (result_.requests >= kMaxRequestsPerRun) {
    // Servers revoked about as they start (a market of lifetimes far shorter than a start-up, a
    // cluster too large for its market) would be requested without end, each kept in servers_:
    // the run gives up, unfinished.
    result_.request_cap = true;
    ended_ = true;
    if (log_) {
      log(EventKind::horizon, -1,
          "gave up after " + std::to_string(kMaxRequestsPerRun) + " server requests");
    }
    return;
  }
  const int index = static_cast<int>(servers_.size());
  Server server;
  server.type = type;
  server.market = market;
  server.obtain_s = now_s_;
  server.usd_per_s = types_[type].price_usd_per_h(market) * kHoursPerSecond;
  const bool revocable = market == cloud::Market::spot && timeline_ != nullptr;
  SpotServer drawn;                 // spot_by_launch_: the server this request gets
  std::optional<double> startup_s;  // and its start-up
  if (spot_by_launch_) {
    const std::int64_t tick = tick_of(now_s_, scenario_.decision_interval_s);
    if (tick != request_tick_) requests_in_tick_ = {0, 0};
    request_tick_ = tick;
    const bool spot = market == cloud::Market::spot;
    const int n = requests_in_tick_[spot ? 0 : 1]++;
    if (revocable) {
      drawn = spot_server(*timeline_, seed_, tick, n, now_s_);
      server.obtain_s = drawn.obtain_s;
    }
    startup_s = request_startup_s(scenario_.startup, seed_, tick, n, market);
  } else if (revocable) {
    server.obtain_s = timeline_->next_available_s(now_s_);
  }
  ++result_.requests;
  server.will_be_ready = std::isfinite(server.obtain_s);
  server.revoke_s = market::kNever;
  servers_.push_back(server);
  if (server.will_be_ready && std::isfinite(scenario_.budget_usd)) {
    if (server.obtain_s <= now_s_) {
      count_billed(index, 1);
    } else {
      waiting_.push_back(index);
      budget_stale_ = true;
    }
  }
  if (log_) {
    log(EventKind::requested, index,
        server.obtain_s > now_s_
            ? (server.will_be_ready ? "waits for spot until " + format_duration(server.obtain_s)
                                    : "no spot server can be had")
            : "");
  }
  if (!server.will_be_ready) return;
  ++pending_;
  if (!startup_s) startup_s = sample_startup_s(scenario_.startup, market, rng_);
  queue_.push(server.obtain_s + *startup_s, EventKind::ready, index, 0);
  if (revocable) {
    const double revoke_s =
        spot_by_launch_ ? drawn.revoke_s : timeline_->revocation_time_s(server.obtain_s, rng_);
    servers_[index].revoke_s = revoke_s;
    if (std::isfinite(revoke_s)) {
      const double notice_s = std::max(server.obtain_s, revoke_s - scenario_.notice_s);
      queue_.push(notice_s, EventKind::notice, index, 0);
      queue_.push(revoke_s, EventKind::revoked, index, 0);
    }
  }
}

void Simulator::bill(Server& server) {
  const double seconds = now_s_ - server.obtain_s;
  if (seconds <= 0.0) return;
  const double usd = seconds * server.usd_per_s;
  result_.cost_usd += usd;
  if (server.market == cloud::Market::spot) result_.spot_cost_usd += usd;
}

void Simulator::roll_back_to(double steps) {
  if (steps < progress_steps_) {
    result_.redone_steps += progress_steps_ - steps;
    progress_steps_ = steps;
  }
  checkpoint_steps_ = std::min(checkpoint_steps_, progress_steps_);
}

void Simulator::try_form() {
  if (running_ || members_ == 0 || pending_ > 0) return;
  if (recovery_->has_chief() && chief_ < 0) return;
  running_ = true;
  roll_back_to(checkpoint_steps_);
  pause_until_s_ = now_s_ + recovery_->restart_pause_s();
  update_rate();
  reschedule_done();
}

void Simulator::on_ready(int index) {
  Server& server = servers_[index];
  server.state = ServerState::member;
  --pending_;
  ++members_;
  ++counts_[server.type];
  if (recovery_->has_chief() && chief_ < 0) chief_ = index;
  if (log_) log(EventKind::ready, index, index == chief_ ? "chief" : "");
  if (running_) {
    const RecoveryEffect effect =
        recovery_->on_join({progress_steps_, checkpoint_steps_, false, members_});
    roll_back_to(effect.progress_steps);
    pause_until_s_ = std::max(pause_until_s_, now_s_) + effect.pause_s;
    update_rate();
    reschedule_done();
  } else {
    try_form();
  }
}

void Simulator::on_notice(int index) {
  if (log_) log(EventKind::notice, index, "");
  if (scenario_.checkpoint_on_notice && running_ && servers_[index].state == ServerState::member) {
    checkpoint_steps_ = progress_steps_;
    ++result_.checkpoints;
  }
}

void Simulator::count_billed(int index, int sign) {
  const Server& server = servers_[index];
  billed_ += sign;
  billed_usd_per_s_ += sign * server.usd_per_s;
  billed_offset_usd_ += sign * server.usd_per_s * server.obtain_s;
  if (billed_ == 0) billed_usd_per_s_ = billed_offset_usd_ = 0.0;  // no rounding left over
  budget_stale_ = true;
}

void Simulator::schedule_budget() {
  double next_obtain_s = market::kNever;
  for (std::size_t i = 0; i < waiting_.size();) {
    const int index = waiting_[i];
    if (servers_[index].obtain_s <= now_s_) {
      waiting_[i] = waiting_.back();
      waiting_.pop_back();
      count_billed(index, 1);
    } else {
      next_obtain_s = std::min(next_obtain_s, servers_[index].obtain_s);
      ++i;
    }
  }
  budget_stale_ = false;
  const double usd_per_s = parameter_server_usd_per_s_ + billed_usd_per_s_;
  const double spent_usd = result_.cost_usd + parameter_server_usd_per_s_ * now_s_ +
                           billed_usd_per_s_ * now_s_ - billed_offset_usd_;
  const double reached_s =
      usd_per_s > 0.0 ? now_s_ + std::max(0.0, scenario_.budget_usd - spent_usd) / usd_per_s
                      : market::kNever;
  budget_reached_ = reached_s <= next_obtain_s;
  budget_s_ = std::min(reached_s, next_obtain_s);
}

void Simulator::on_budget() {
  if (!budget_reached_) {
    // A waiting server is had: billed from now on.
    schedule_budget();
    return;
  }
  result_.stopped_at_budget = true;
  ended_ = true;
  if (log_) log(EventKind::budget, -1, "renting stops at $" + fixed(scenario_.budget_usd, 2));
}

void Simulator::leave(int index, bool graceful) {
  Server& server = servers_[index];
  ++server.generation;
  bill(server);
  if (server.will_be_ready && std::isfinite(scenario_.budget_usd)) {
    const auto waiting = std::find(waiting_.begin(), waiting_.end(), index);
    if (waiting != waiting_.end()) {
      *waiting = waiting_.back();
      waiting_.pop_back();
      budget_stale_ = true;
    } else {
      count_billed(index, -1);
    }
  }
  // Its node of a fleet (node traces) is free again for the next request.
  if (server.market == cloud::Market::spot && timeline_ && server.will_be_ready) {
    timeline_->released(server.revoke_s);
  }
  const ServerState before = server.state;
  server.state = ServerState::gone;
  if (before == ServerState::pending) {
    if (server.will_be_ready) --pending_;
    return;
  }
  --members_;
  --counts_[server.type];
  const bool was_chief = index == chief_;
  if (was_chief) chief_ = -1;
  if (!running_) return;
  if (graceful) {
    // A policy moving the cluster: checkpoint, stop, and restart once the new servers are in.
    checkpoint_steps_ = progress_steps_;
    running_ = false;
  } else if (members_ == 0) {
    running_ = false;
    roll_back_to(checkpoint_steps_);
  } else {
    const RecoveryEffect effect =
        recovery_->on_leave({progress_steps_, checkpoint_steps_, was_chief, members_ + 1});
    roll_back_to(effect.progress_steps);
    if (effect.fail) {
      result_.failed = true;
      ended_ = true;
    } else if (effect.stop) {
      running_ = false;
    } else {
      pause_until_s_ = std::max(pause_until_s_, now_s_) + effect.pause_s;
    }
  }
  update_rate();
  reschedule_done();
}

void Simulator::release(int index) {
  if (log_) log(EventKind::released, index, "");
  leave(index, /*graceful=*/true);
}

void Simulator::on_revoked(int index) {
  ++result_.revocations;
  const Server revoked = servers_[index];
  if (log_) {
    log(EventKind::revoked, index, revoked.state == ServerState::pending ? "while starting" : "");
  }
  leave(index, /*graceful=*/false);
  if (ended_) return;
  if (market_policy_) {
    // Servers revoked at this same moment (a trace revokes a zone's servers together) go first,
    // so that the policy sees the cluster as the market leaves it, not release them gracefully.
    for (int i = 0; i < static_cast<int>(servers_.size()) && !ended_; ++i) {
      if (servers_[i].state != ServerState::gone && servers_[i].revoke_s <= now_s_) {
        ++result_.revocations;
        if (log_) log(EventKind::revoked, i, "");
        leave(i, /*graceful=*/false);
      }
    }
    if (ended_) return;
    reconcile(market_policy_->decide(deadline_state()));
  } else {
    replace(revoked);
  }
  try_form();
}

void Simulator::replace(const Server& revoked) {
  ReplacementContext context;
  context.types = &types_;
  context.revoked = {revoked.type, revoked.market};
  context.spot_available =
      timeline_ == nullptr || !replacement_->uses_availability() || timeline_->available_at(now_s_);
  if (const auto choice = replacement_->choose(context)) request(choice->type, choice->market);
}

void Simulator::on_checkpoint() {
  if (running_) {
    checkpoint_steps_ = progress_steps_;
    ++result_.checkpoints;
    pause_until_s_ = std::max(pause_until_s_, now_s_) + scenario_.checkpoint_write_s;
    reschedule_done();
    if (log_ && log_checkpoints_) {
      log(EventKind::checkpoint, -1, "at " + fixed(progress_steps_, 0) + " steps");
    }
  }
  queue_.push(now_s_ + scenario_.checkpoint_interval_s, EventKind::checkpoint, -1, 0);
}

DeadlineState Simulator::deadline_state() const {
  DeadlineState state;
  state.now_s = now_s_;
  state.progress_steps = progress_steps_;
  state.checkpoint_steps = checkpoint_steps_;
  state.total_steps = scenario_.total_steps;
  state.deadline_s = scenario_.deadline_s;
  state.steps_per_s = full_cluster_steps_per_s_;
  state.spot_changeover_s =
      scenario_.startup.mean_s(cloud::Market::spot) + recovery_->restart_pause_s();
  state.on_demand_changeover_s =
      scenario_.startup.mean_s(cloud::Market::on_demand) + recovery_->restart_pause_s();
  state.decision_interval_s = scenario_.decision_interval_s;
  state.mode = mode_;
  // Spot can be had, or the job holds spot servers it can keep: on a fleet's node events the node
  // a server holds is taken, not gone, and may be the only one present.
  state.spot_available = timeline_ == nullptr || timeline_->available_at(now_s_);
  for (std::size_t i = 0; i < servers_.size() && !state.spot_available; ++i) {
    const Server& server = servers_[i];
    state.spot_available = server.market == cloud::Market::spot &&
                           server.state != ServerState::gone && server.will_be_ready &&
                           server.obtain_s <= now_s_ && server.revoke_s > now_s_;
  }
  state.notice_s = scenario_.notice_s;
  if (running_ && members_ == scenario_.workers[0].count) {
    state.training_from_s = std::max(now_s_, pause_until_s_);
  }
  state.checkpoint_on_notice = scenario_.checkpoint_on_notice;
  const auto& group = scenario_.workers[0];
  state.spot_usd_per_s =
      group.count * group.type.price_usd_per_h(cloud::Market::spot) * kHoursPerSecond;
  state.on_demand_usd_per_s =
      group.count * group.type.price_usd_per_h(cloud::Market::on_demand) * kHoursPerSecond;
  return state;
}

void Simulator::on_decision() {
  const ClusterMode mode = market_policy_->decide(deadline_state());
  if (log_ && mode != mode_) log(EventKind::decision, -1, std::string(to_string(mode)));
  reconcile(mode);
  try_form();
  queue_.push(now_s_ + scenario_.decision_interval_s, EventKind::decision, -1, 0);
}

void Simulator::reconcile(ClusterMode mode) {
  mode_ = mode;
  const int type = group_type_[0];
  const cloud::Market market =
      mode == ClusterMode::spot ? cloud::Market::spot : cloud::Market::on_demand;
  int alive = 0;
  for (int i = 0; i < static_cast<int>(servers_.size()); ++i) {
    const Server& server = servers_[i];
    if (server.state == ServerState::gone) continue;
    if (mode == ClusterMode::idle || server.market != market) {
      release(i);
    } else {
      ++alive;
    }
  }
  if (mode == ClusterMode::idle) return;
  for (int i = alive; i < scenario_.workers[0].count; ++i) request(type, market);
}

OfflineMarket Simulator::offline_market(std::uint64_t seed) const {
  OfflineMarket market;
  market.tick_s = scenario_.decision_interval_s;
  market.work_s = scenario_.total_steps / full_cluster_steps_per_s_;
  market.deadline_s = scenario_.deadline_s;
  market.spot_changeover_s =
      scenario_.startup.mean_s(cloud::Market::spot) + recovery_->restart_pause_s();
  market.on_demand_changeover_s =
      scenario_.startup.mean_s(cloud::Market::on_demand) + recovery_->restart_pause_s();
  market.notice_s = scenario_.notice_s;
  const auto& group = scenario_.workers[0];
  market.spot_usd_per_s =
      group.type.has_market(cloud::Market::spot)
          ? group.count * group.type.price_usd_per_h(cloud::Market::spot) * kHoursPerSecond
          : 0.0;
  market.on_demand_usd_per_s =
      group.count * group.type.price_usd_per_h(cloud::Market::on_demand) * kHoursPerSecond;
  market.fixed_usd_per_s = parameter_server_usd_per_s_;
  const int ticks = static_cast<int>(std::ceil(scenario_.deadline_s / market.tick_s)) + 1;
  const double g = market.tick_s;
  market.spot_ticks.assign(ticks, 1);
  if (scenario_.market && group.type.has_market(cloud::Market::spot)) {
    // The same realisation as the run: the run's stream before start_run, replayed.
    Rng rng(seed);
    std::shared_ptr<market::MarketTimeline> timeline =
        scenario_.market->start_run(scenario_.start_hour_of_day, rng);
    if (spot_by_launch_ && optimum_is_a_bound(scenario_)) {
      // Each server on its own: the optimum asks for the servers the run's requests would get.
      market.spot_server = [timeline, seed, g](double request_s, int n) {
        const SpotServer server = spot_server(*timeline, seed, tick_of(request_s, g), n, request_s);
        // Asked in any order, each request as if the job held no other spot server (a fleet's
        // node taken by one query is free again for the next).
        if (std::isfinite(server.obtain_s)) timeline->released(server.revoke_s);
        return server;
      };
      market.changeover_s = [startup = scenario_.startup, pause = recovery_->restart_pause_s(),
                             seed, g](ClusterMode mode, double request_s, int n) {
        const auto kind =
            mode == ClusterMode::spot ? cloud::Market::spot : cloud::Market::on_demand;
        return request_startup_s(startup, seed, tick_of(request_s, g), n, kind) + pause;
      };
      return market;
    }
    // Spot in tick i: from when it can first be had in the tick until its revocation (the
    // revocation drawn on copies of the run's stream).
    market.spot_from_s.assign(ticks, 0.0);
    market.spot_to_s.assign(ticks, 0.0);
    for (int i = 0; i < ticks; ++i) {
      const double t = i * g;
      double from = timeline->available_at(t) ? t : timeline->next_available_s(t);
      double to = from;
      if (from < t + g) {
        Rng probe = rng;
        const double revoke_s = timeline->revocation_time_s(from, probe);
        timeline->released(revoke_s);  // a probe holds no node of a fleet for the next one
        to = std::min(t + g, revoke_s);
      }
      if (to >= t + g - 1e-9) to = t + g;
      if (!(to > from)) to = from = t;
      market.spot_from_s[i] = from - t;
      market.spot_to_s[i] = to - t;
      market.spot_ticks[i] = from == t && to == t + g;
    }
  }
  if (!group.type.has_market(cloud::Market::spot)) {
    std::fill(market.spot_ticks.begin(), market.spot_ticks.end(), 0);
  }
  return market;
}

std::string Simulator::server_text(int index) const {
  const Server& server = servers_[index];
  return types_[server.type].name + " " + std::string(cloud::to_string(server.market));
}

void Simulator::log(EventKind kind, int server, const std::string& detail) {
  if (!log_) return;
  std::string text;
  if (server >= 0) text = server_text(server);
  if (kind == EventKind::done || kind == EventKind::deadline || kind == EventKind::horizon ||
      kind == EventKind::budget || kind == EventKind::revoked) {
    text += (text.empty() ? "" : ", ") + std::string("progress ") + fixed(progress_steps_, 0) +
            " steps";
  }
  if (!detail.empty()) text += (text.empty() ? "" : ", ") + detail;
  log_->push_back({now_s_, kind, server, text});
}

}  // namespace transient::sim
