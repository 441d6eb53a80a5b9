#include "transient/launch/revocation_schedule.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <iterator>
#include <utility>

#include "transient/core/duration.h"
#include "transient/core/error.h"

namespace transient::launch {
namespace {

constexpr double kMinPeriodS = 0.1;           // the shortest period of an "every" rule
constexpr double kMaxTimeS = 30 * 24 * 3600;  // the latest time or longest period of a rule

constexpr const char* kAccepted =
    "accepted: ACTION@TIME:TARGET, e.g. kill@30s:rank0, preempt@45s:worker2, stop@60s:any, "
    "kill@every20s:any, kill@step120:any (ACTION kill|preempt|stop, TARGET rankN|workerN|any)";

[[noreturn]] void fail(const std::string& text, const std::string& what) {
  throw InputError("--revoke: \"" + text + "\" " + what + "; " + kAccepted);
}

std::string in_quotes(const std::string& text) { return "\"" + text + "\""; }

// N of "rankN" / "workerN": digits only, small enough for an int.
std::optional<int> parse_index(const std::string& digits) {
  if (digits.empty() || digits.size() > 9) return std::nullopt;
  for (char c : digits) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
  }
  return std::stoi(digits);
}

bool starts_with(const std::string& text, const std::string& prefix) {
  return text.compare(0, prefix.size(), prefix) == 0;
}

}  // namespace

RevokeRule parse_revoke_rule(const std::string& text) {
  RevokeRule rule;
  rule.text = text;

  const std::size_t at = text.find('@');
  if (at == std::string::npos) fail(text, "has no '@'");
  const std::string action = text.substr(0, at);
  if (action == "kill") {
    rule.action = RevokeAction::kKill;
  } else if (action == "preempt") {
    rule.action = RevokeAction::kPreempt;
  } else if (action == "stop") {
    rule.action = RevokeAction::kStop;
  } else {
    fail(text, "has an unknown action " + in_quotes(action));
  }

  const std::size_t colon = text.find(':', at + 1);
  if (colon == std::string::npos) fail(text, "has no ':' before the target");
  std::string time = text.substr(at + 1, colon - at - 1);
  if (starts_with(time, "every")) {
    rule.every = true;
    const std::optional<double> period_s = parse_duration_s(time.substr(5));
    // Bounded where it enters: a period of 1e-300 s would fire without end at one instant.
    if (!period_s || !std::isfinite(*period_s) || *period_s < kMinPeriodS ||
        *period_s > kMaxTimeS) {
      fail(text,
           "has a bad period " + in_quotes(time) + " (every needs a duration from 100ms to 30d)");
    }
    rule.at_s = *period_s;
  } else if (starts_with(time, "step")) {
    const std::string count = time.substr(4);
    if (count.empty() || count.size() > 12 ||
        count.find_first_not_of("0123456789") != std::string::npos) {
      fail(text, "has a bad step " + in_quotes(time) + " (step + a whole number, e.g. step120)");
    }
    rule.at_step = std::stoll(count);
  } else {
    const std::optional<double> at_s = parse_duration_s(time);
    if (!at_s || !std::isfinite(*at_s) || *at_s > kMaxTimeS) {
      fail(text, "has a bad time " + in_quotes(time) +
                     " (a duration from 0 to 30d such as 30s, 1.5m, 250ms)");
    }
    rule.at_s = *at_s;
  }

  const std::string target = text.substr(colon + 1);
  std::string digits;
  if (target == "any") {
    rule.target = TargetKind::kAny;
    return rule;
  } else if (starts_with(target, "rank")) {
    rule.target = TargetKind::kRank;
    digits = target.substr(4);
  } else if (starts_with(target, "worker")) {
    rule.target = TargetKind::kWorker;
    digits = target.substr(6);
  } else {
    fail(text, "has an unknown target " + in_quotes(target));
  }
  const std::optional<int> index = parse_index(digits);
  if (!index)
    fail(text, "has a bad target " + in_quotes(target) + " (N must be a whole number >= 0)");
  rule.index = *index;
  return rule;
}

std::string to_string(RevokeAction action) {
  switch (action) {
    case RevokeAction::kKill:
      return "kill";
    case RevokeAction::kPreempt:
      return "preempt";
    case RevokeAction::kStop:
      return "stop";
  }
  return "unknown";
}

std::optional<std::string> resolve_target(const Injection& injection,
                                          const std::vector<std::string>& members,
                                          const std::vector<std::string>& running, Rng& rng) {
  const auto is_member = [&](const std::string& id) {
    return std::find(members.begin(), members.end(), id) != members.end();
  };
  if (!injection.worker_id.empty()) {
    const bool is_running =
        std::find(running.begin(), running.end(), injection.worker_id) != running.end();
    if (is_running || is_member(injection.worker_id)) return injection.worker_id;
    return std::nullopt;
  }
  switch (injection.target) {
    case TargetKind::kRank:
      if (injection.index >= 0 && static_cast<std::size_t>(injection.index) < members.size()) {
        return members[static_cast<std::size_t>(injection.index)];
      }
      return std::nullopt;
    case TargetKind::kWorker: {
      const std::string id = "w" + std::to_string(injection.index);
      if (is_member(id)) return id;
      return std::nullopt;
    }
    case TargetKind::kAny:
      if (members.empty()) return std::nullopt;
      return members[static_cast<std::size_t>(rng.below(members.size()))];
  }
  return std::nullopt;
}

RevocationSchedule::RevocationSchedule(std::vector<RevokeRule> rules) {
  rules_.reserve(rules.size());
  for (RevokeRule& rule : rules) {
    TRANSIENT_CHECK(std::isfinite(rule.at_s) && rule.at_s >= 0.0);
    // An "every" rule with no period would fire without end at one instant.
    if (rule.every) TRANSIENT_CHECK_GT(rule.at_s, 0.0);
    rules_.push_back(ArmedRule{std::move(rule), 0, false});
  }
}

void RevocationSchedule::use_market(std::shared_ptr<const market::RevocationModel> model,
                                    double time_scale, std::uint64_t seed) {
  TRANSIENT_CHECK(model != nullptr);
  TRANSIENT_CHECK(std::isfinite(time_scale) && time_scale > 0.0);
  model_ = std::move(model);
  time_scale_ = time_scale;
  rng_ = Rng(seed);
}

void RevocationSchedule::on_worker_started(const std::string& worker_id, double now_s) {
  if (!model_) return;
  market_pending_.erase(
      std::remove_if(market_pending_.begin(), market_pending_.end(),
                     [&](const Injection& injection) { return injection.worker_id == worker_id; }),
      market_pending_.end());
  const double lifetime_s = model_->sample_lifetime_s(rng_);
  if (!std::isfinite(lifetime_s)) return;  // kNever: this worker is never revoked
  Injection injection;
  injection.at_s = now_s + lifetime_s / time_scale_;
  injection.action = RevokeAction::kPreempt;
  injection.target = TargetKind::kWorker;
  injection.worker_id = worker_id;
  injection.rule = "market:" + model_->name();
  market_pending_.push_back(std::move(injection));
}

double RevocationSchedule::next_time_s(const ArmedRule& armed) {
  // Multiplying rather than adding the period keeps the 1000th occurrence exactly on its grid.
  return armed.rule.every ? armed.rule.at_s * static_cast<double>(armed.fired + 1)
                          : armed.rule.at_s;
}

std::vector<Injection> RevocationSchedule::due(double now_s, std::int64_t step) {
  std::vector<Injection> out;
  for (ArmedRule& armed : rules_) {
    if (armed.rule.at_step >= 0) {
      if (armed.done || step < armed.rule.at_step) continue;
      Injection injection;
      injection.at_s = now_s;
      injection.action = armed.rule.action;
      injection.target = armed.rule.target;
      injection.index = armed.rule.index;
      injection.rule = armed.rule.text;
      out.push_back(std::move(injection));
      armed.done = true;
      continue;
    }
    while (!armed.done && next_time_s(armed) <= now_s) {
      Injection injection;
      injection.at_s = next_time_s(armed);
      injection.action = armed.rule.action;
      injection.target = armed.rule.target;
      injection.index = armed.rule.index;
      injection.rule = armed.rule.text;
      out.push_back(std::move(injection));
      ++armed.fired;
      if (!armed.rule.every) armed.done = true;
    }
  }
  auto not_due =
      std::stable_partition(market_pending_.begin(), market_pending_.end(),
                            [&](const Injection& injection) { return injection.at_s <= now_s; });
  std::move(market_pending_.begin(), not_due, std::back_inserter(out));
  market_pending_.erase(market_pending_.begin(), not_due);
  // Stable: equal times keep the order documented in the header.
  std::stable_sort(out.begin(), out.end(),
                   [](const Injection& a, const Injection& b) { return a.at_s < b.at_s; });
  return out;
}

std::optional<double> RevocationSchedule::next_at() const {
  std::optional<double> next;
  const auto consider = [&](double t_s) {
    if (!next || t_s < *next) next = t_s;
  };
  for (const ArmedRule& armed : rules_) {
    if (!armed.done && armed.rule.at_step < 0) consider(next_time_s(armed));
  }
  for (const Injection& injection : market_pending_) consider(injection.at_s);
  return next;
}

bool RevocationSchedule::empty() const { return rules_.empty() && !model_; }

}  // namespace transient::launch
