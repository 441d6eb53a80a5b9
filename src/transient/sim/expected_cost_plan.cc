#include "transient/sim/expected_cost_plan.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "transient/core/error.h"

namespace transient::sim {
namespace {

constexpr double kCannotFinish = std::numeric_limits<double>::infinity();
// Grid points planned over all ticks at most (a few tens of MB of decisions); the grid is made
// coarser than a tenth of a tick for longer jobs.
constexpr double kMostPoints = 300000.0;
// States per grid point: (running, available) pairs, each with its ages.
constexpr int kAges = AvailabilityPrior::kMaxAge + 2;  // unknown, then 0..kMaxAge
constexpr int kPairs = 5;  // (none, no spot), (none, spot), (spot, spot), (on demand, either)
constexpr int kStates = kPairs * kAges;

int pair_index(ClusterMode running, bool available) {
  switch (running) {
    case ClusterMode::idle:
      return available ? 1 : 0;
    case ClusterMode::spot:
      return available ? 2 : 0;  // spot servers without spot are revoked: none run
    case ClusterMode::on_demand:
      return available ? 4 : 3;
  }
  return 0;
}

int age_index(int age) { return age < 0 ? 0 : std::min(age, AvailabilityPrior::kMaxAge) + 1; }

}  // namespace

int ExpectedCostPlan::state_index(ClusterMode running, bool available, int age) const {
  return pair_index(running, available) * kAges + age_index(age);
}

ExpectedCostPlan::ExpectedCostPlan(const OfflineMarket& job, const AvailabilityPrior& prior)
    : job_(job) {
  job_.spot_ticks.clear();
  const double g = job.tick_s;
  TRANSIENT_CHECK_GT(g, 0.0);
  TRANSIENT_CHECK_EQ(g, prior.tick_s());
  TRANSIENT_CHECK_LT(job.spot_changeover_s, g);
  TRANSIENT_CHECK_LT(job.on_demand_changeover_s, g);
  TRANSIENT_CHECK_LT(job.notice_s, g);
  TRANSIENT_CHECK_GT(job.work_s, 0.0);
  TRANSIENT_CHECK(std::isfinite(job.deadline_s));
  const double work = job.work_s;
  const double deadline = job.deadline_s;
  ticks_ = std::max(0, static_cast<int>(std::ceil(deadline / g - 1e-9)));
  const double band_s = std::max(g, std::min(work, deadline - work));
  cell_s_ = std::max(g / 10.0, ticks_ * band_s / kMostPoints);
  cells_ = static_cast<int>(std::ceil(work / cell_s_ - 1e-9));
  auto point_s = [&](int j) { return std::min(work, j * cell_s_); };

  lo_.assign(ticks_, 0);
  hi_.assign(ticks_, -1);
  offset_.assign(ticks_, 0);
  std::size_t size = 0;
  for (int i = 0; i < ticks_; ++i) {
    const double t0 = i * g;
    // Below lo no schedule finishes (even running already, without a changeover); above hi is
    // more work than time has passed.
    lo_[i] = std::max(0, static_cast<int>(std::ceil((work - (deadline - t0)) / cell_s_ - 1e-9)));
    hi_[i] = std::min(cells_, static_cast<int>(std::floor(t0 / cell_s_)) + 1);
    offset_[i] = size;
    if (hi_[i] >= lo_[i]) size += static_cast<std::size_t>(hi_[i] - lo_[i] + 1) * kStates;
  }
  decisions_.assign(size, static_cast<std::uint8_t>(ClusterMode::on_demand));

  const double fixed = job.fixed_usd_per_s;
  const double moves_on = prior.moves_on();
  const double on_demand_rate = job.on_demand_usd_per_s + fixed;
  const double spot_rate = job.spot_usd_per_s + fixed;
  // The values of the next tick's states (after the last tick: unfinished, infinitely dear).
  std::vector<double> next((cells_ + 1) * kStates, kCannotFinish);
  std::vector<double> current((cells_ + 1) * kStates, kCannotFinish);
  for (int s = 0; s < kStates; ++s) next[cells_ * kStates + s] = 0.0;
  // Where `progress_s` of work falls on the next tick's grid, found once for all the states that
  // reach it: `below` and `above` are the grid points around it, f the share of the way between.
  struct Where {
    bool done = false;  // the work is done: nothing more to pay
    const double* below = nullptr;
    const double* above = nullptr;
    double f = 0.0;
  };
  auto where = [&](double progress_s) {
    Where w;
    if (progress_s >= work - 1e-9) {
      w.done = true;
      return w;
    }
    const int j = std::min(cells_ - 1, static_cast<int>(std::floor(progress_s / cell_s_)));
    w.below = next.data() + static_cast<std::size_t>(j) * kStates;
    w.above = w.below + kStates;
    w.f = (progress_s - j * cell_s_) / (point_s(j + 1) - j * cell_s_);
    return w;
  };
  // The value of `state` there, interpolated.
  auto value = [](const Where& w, int state) {
    if (w.done) return 0.0;
    const double v0 = w.below[state];
    if (!std::isfinite(v0)) return kCannotFinish;  // the point below cannot finish: take no chance
    const double v1 = w.above[state];
    // Past the progress the next tick plans for: no less dear than below it.
    if (!std::isfinite(v1)) return v0;
    return v0 + w.f * (v1 - v0);
  };
  // The prior's chance that the availability holds through a tick, by state.
  double holds[kStates];
  for (int pair = 0; pair < kPairs; ++pair) {
    for (int a = 0; a < kAges; ++a)
      holds[pair * kAges + a] = prior.holds(pair == 1 || pair == 2 || pair == 4, a - 1);
  }

  for (int i = ticks_ - 1; i >= 0; --i) {
    const double t0 = i * g;
    std::fill(current.begin(), current.end(), kCannotFinish);
    for (int s = 0; s < kStates; ++s) current[cells_ * kStates + s] = 0.0;
    for (int j = lo_[i]; j <= hi_[i]; ++j) {
      const double p = point_s(j);
      const double left_s = work - p;
      std::uint8_t* decided = decisions_.data() + offset_[i] + (j - lo_[i]) * kStates;
      if (left_s <= 1e-9) {
        for (int s = 0; s < kStates; ++s) current[j * kStates + s] = 0.0;
        continue;
      }
      // The progress each course of action reaches in the tick (running already, or after a
      // changeover; spot's if revoked keeps the work up to the notice), on the next tick's grid.
      const double od_start_s = job.on_demand_changeover_s;
      const double spot_start_s = job.spot_changeover_s;
      const Where idle_at = where(p);
      const Where running_at = where(p + g);  // on demand or on spot, running already
      const Where od_started_at = where(p + g - od_start_s);
      const Where spot_running_revoked_at = where(p + std::max(0.0, g - job.notice_s));
      const Where spot_started_at = where(p + g - spot_start_s);
      const Where spot_started_revoked_at =
          where(p + std::max(0.0, g - spot_start_s - job.notice_s));
      for (int pair = 0; pair < kPairs; ++pair) {
        const bool available = pair == 1 || pair == 2 || pair == 4;
        const ClusterMode running = pair <= 1   ? ClusterMode::idle
                                    : pair == 2 ? ClusterMode::spot
                                                : ClusterMode::on_demand;
        for (int a = 0; a < kAges; ++a) {
          const int age = a - 1;
          const double holding = holds[pair * kAges + a];
          const int same_age = age < 0 ? -1 : std::min(age + 1, AvailabilityPrior::kMaxAge);
          // Expected value of the next tick for servers `then` running at `done` if availability
          // holds (spot servers lose the notice's work, at `if_revoked`, and stop if it does not).
          auto expected = [&](ClusterMode then, const Where& done, const Where& if_revoked) {
            const double kept = value(done, state_index(then, available, same_age));
            const ClusterMode after_change = then == ClusterMode::spot ? ClusterMode::idle : then;
            double changed = value(if_revoked, state_index(after_change, !available, 0));
            // A spot period that ends may go on at once in another zone (the job moves on).
            if (available && moves_on > 0.0) {
              changed = moves_on * value(if_revoked, state_index(after_change, true, 0)) +
                        (1.0 - moves_on) * changed;
            }
            return holding * kept + (1.0 - holding) * changed;
          };
          // Finishing within the tick at `rate` after a changeover of `start_s`.
          auto finishing = [&](double start_s, double rate) {
            return t0 + start_s + left_s <= deadline ? rate * (start_s + left_s) : kCannotFinish;
          };
          double best = fixed * g + expected(ClusterMode::idle, idle_at, idle_at);
          ClusterMode choice = ClusterMode::idle;
          {
            const bool on = running == ClusterMode::on_demand;
            const double start_s = on ? 0.0 : od_start_s;
            const Where& at = on ? running_at : od_started_at;
            const double q = start_s + left_s < g
                                 ? finishing(start_s, on_demand_rate)
                                 : on_demand_rate * g + expected(ClusterMode::on_demand, at, at);
            if (q < best) {
              best = q;
              choice = ClusterMode::on_demand;
            }
          }
          if (available) {
            const bool on = running == ClusterMode::spot;
            const double start_s = on ? 0.0 : spot_start_s;
            const double q =
                start_s + left_s < g
                    ? finishing(start_s, spot_rate)
                    : spot_rate * g +
                          expected(ClusterMode::spot, on ? running_at : spot_started_at,
                                   on ? spot_running_revoked_at : spot_started_revoked_at);
            if (q <= best) {
              best = q;
              choice = ClusterMode::spot;
            }
          }
          if (!std::isfinite(best)) choice = ClusterMode::on_demand;
          const int state = pair * kAges + a;
          current[j * kStates + state] = best;
          decided[state] = static_cast<std::uint8_t>(choice);
        }
      }
    }
    std::swap(current, next);
  }
  for (int available = 0; available < 2; ++available) {
    start_cost_usd_[available] = ticks_ > 0 && lo_[0] == 0
                                     ? next[state_index(ClusterMode::idle, available != 0, -1)]
                                     : kCannotFinish;
  }
}

bool ExpectedCostPlan::made_for(const OfflineMarket& job) const {
  return job.tick_s == job_.tick_s && job.work_s == job_.work_s &&
         job.deadline_s == job_.deadline_s && job.notice_s == job_.notice_s &&
         job.spot_usd_per_s == job_.spot_usd_per_s &&
         job.on_demand_usd_per_s == job_.on_demand_usd_per_s &&
         job.fixed_usd_per_s == job_.fixed_usd_per_s;
}

ClusterMode ExpectedCostPlan::decide(int tick, double progress_s, ClusterMode running,
                                     bool available, int age) const {
  if (tick < 0 || tick >= ticks_) return ClusterMode::on_demand;
  // The grid point at or below the progress: the plan of a little less work done is the safer.
  const int j = std::min(hi_[tick], static_cast<int>(std::floor(progress_s / cell_s_ + 1e-9)));
  if (j < lo_[tick]) return ClusterMode::on_demand;
  const std::size_t at = offset_[tick] + static_cast<std::size_t>(j - lo_[tick]) * kStates +
                         state_index(running, available, age);
  return static_cast<ClusterMode>(decisions_[at]);
}

double ExpectedCostPlan::expected_cost_usd(bool available) const {
  return start_cost_usd_[available ? 1 : 0];
}

}  // namespace transient::sim
