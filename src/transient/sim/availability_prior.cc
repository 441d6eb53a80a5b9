#include "transient/sim/availability_prior.h"

#include <algorithm>

#include "transient/core/error.h"

namespace transient::sim {
namespace {

// Chances are kept off 0 and 1 so that the plan never takes a revocation for impossible.
constexpr double kLeast = 1e-3;

}  // namespace

// One zone: a job that follows its spot stays while it lasts (the periods of the ticks).
AvailabilityPrior::AvailabilityPrior(const std::vector<std::uint8_t>& ticks, double tick_s)
    : AvailabilityPrior(following({ticks}, tick_s)) {}

AvailabilityPrior::AvailabilityPrior(const std::vector<int>& outages,
                                     const std::vector<int>& spot_periods,
                                     double available_fraction, double moves_on, double tick_s)
    : tick_s_(tick_s),
      available_fraction_(available_fraction),
      moves_on_(std::clamp(moves_on, 0.0, 1.0 - kLeast)) {
  TRANSIENT_CHECK_GT(tick_s, 0.0);
  const std::vector<int>* lengths[2] = {&outages, &spot_periods};
  for (int a = 0; a < 2; ++a) {
    auto& holds = holds_[a];
    holds.assign(kMaxAge + 2, 0.5);
    if (lengths[a]->empty()) continue;
    // Of the ticks in periods of this kind, the share followed by another of the same kind.
    double ticks_in = 0.0;
    double followed = 0.0;
    for (const int l : *lengths[a]) {
      ticks_in += l;
      followed += l - 1;
    }
    const double pooled = followed / ticks_in;
    holds[0] = pooled;
    for (int age = 0; age <= kMaxAge; ++age) {
      // Periods that reached this tick (age + 1 ticks) and went on to the next one; the last
      // age pools every longer one.
      double reached = 0.0;
      double went_on = 0.0;
      for (const int l : *lengths[a]) {
        if (l < age + 1) continue;
        if (age < kMaxAge) {
          reached += 1.0;
          went_on += l >= age + 2;
        } else {
          reached += l - age;
          went_on += l - age - 1;
        }
      }
      // One pseudo-observation at the pooled rate keeps rare ages from extreme estimates.
      holds[age + 1] = (went_on + pooled) / (reached + 1.0);
    }
    for (double& h : holds) h = std::clamp(h, kLeast, 1.0 - kLeast);
  }
  if (outages.empty() && moves_on_ == 0.0) holds_[1].assign(kMaxAge + 2, 1.0 - kLeast);
}

AvailabilityPrior AvailabilityPrior::following(const std::vector<std::vector<std::uint8_t>>& zones,
                                               double tick_s) {
  TRANSIENT_CHECK(!zones.empty());
  std::size_t n = zones[0].size();
  for (const auto& z : zones) n = std::min(n, z.size());
  TRANSIENT_CHECK_GT(n, 0u);
  std::vector<int> lengths[2];
  int moved_on = 0;
  int ended = 0;  // spot periods followed by something (moving on or an outage)
  ZoneFollower follower(static_cast<int>(zones.size()));
  std::vector<std::uint8_t> up(zones.size());
  int spot_ticks = 0;
  int run = 0;
  int last = -2;  // the last tick's zone followed (-1: outage)
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t z = 0; z < zones.size(); ++z) up[z] = zones[z][i];
    const int zone = follower.next(static_cast<int>(i), up);
    spot_ticks += zone >= 0;
    const bool same = i > 0 && (zone >= 0) == (last >= 0) && !follower.moved_on();
    if (i > 0 && !same) {
      lengths[last >= 0 ? 1 : 0].push_back(run);
      if (last >= 0) {
        ++ended;
        moved_on += zone >= 0;
      }
      run = 0;
    }
    ++run;
    last = zone;
  }
  lengths[last >= 0 ? 1 : 0].push_back(run);
  return AvailabilityPrior(lengths[0], lengths[1],
                           static_cast<double>(spot_ticks) / static_cast<double>(n),
                           ended > 0 ? static_cast<double>(moved_on) / ended : 0.0, tick_s);
}

int ZoneFollower::next(int tick, const std::vector<std::uint8_t>& up) {
  const int zones = static_cast<int>(changed_.size());
  TRANSIENT_CHECK_EQ(static_cast<int>(up.size()), zones);
  for (int z = 0; z < zones; ++z) {
    if (tick > 0 && (up[z] != 0) != (up_[z] != 0)) changed_[z] = tick;
    up_[z] = up[z];
  }
  const int was = zone_;
  moved_on_ = false;
  if (zone_ >= 0 && up[zone_]) return zone_;
  // The zone it was last in while that has spot; otherwise the one up the longest.
  int best = -1;
  for (int z = 0; z < zones; ++z) {
    if (!up[z]) continue;
    if (best < 0 || z == last_zone_ || (best != last_zone_ && changed_[z] < changed_[best])) {
      best = z;
    }
  }
  zone_ = best;
  if (best >= 0) last_zone_ = best;
  if (tick == 0) {
    since_ = -1;
  } else if (was >= 0 || best >= 0) {  // not an outage going on
    since_ = tick;
    moved_on_ = was >= 0 && best >= 0;
  }
  return zone_;
}

AvailabilityPrior AvailabilityPrior::sample(const market::RevocationModel& model,
                                            double start_hour_of_day, double tick_s,
                                            double span_s) {
  return AvailabilityPrior(sample_ticks(model, start_hour_of_day, tick_s, span_s), tick_s);
}

std::vector<std::uint8_t> AvailabilityPrior::sample_ticks(const market::RevocationModel& model,
                                                          double start_hour_of_day, double tick_s,
                                                          double span_s) {
  Rng rng(0x5eed);
  auto timeline = model.start_run(start_hour_of_day, rng);
  double run_start_s = 0.0;  // where the timeline's run starts on the span
  const int n = std::max(1, static_cast<int>(span_s / tick_s));
  std::vector<std::uint8_t> ticks(n);
  for (int i = 0; i < n; ++i) {
    double t = i * tick_s - run_start_s;
    // A timeline whose data ends (a node trace) says nothing after it: the span goes on with
    // another run (a trace from a random offset draws another).
    const double end_s = timeline->data_end_s();
    if (t + tick_s > end_s && end_s >= tick_s) {
      timeline = model.start_run(start_hour_of_day, rng);
      run_start_s = i * tick_s;
      t = 0.0;
    }
    if (!timeline->available_at(t)) continue;
    const double revoke_s = timeline->revocation_time_s(t, rng);
    ticks[i] = revoke_s >= t + tick_s - 1e-9;
    timeline->released(revoke_s);  // a probe, not a server the next tick's probe cannot have
  }
  return ticks;
}

double AvailabilityPrior::holds(bool available, int age) const {
  const int index = age < 0 ? 0 : std::min(age, kMaxAge) + 1;
  return holds_[available ? 1 : 0][index];
}

}  // namespace transient::sim
