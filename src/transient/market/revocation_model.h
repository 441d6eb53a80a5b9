// How spot servers are revoked and when they can be had: the plug-in point between measured
// market data (lifetimes, hazards, traces) and the simulator / the revocation injector.
//
// A RevocationModel is immutable after construction and safe to share between threads. Each
// simulated run asks it for a MarketTimeline (one realisation of the market: e.g. a trace
// replayed from an offset drawn with the run's Rng); the timeline is used by one thread only.
// Times are seconds since the run's start; the run's start hour of day is given to start_run so
// hour-of-day models can place it on the clock.
#pragma once

#include <limits>
#include <memory>
#include <string>

#include "transient/core/random.h"

namespace transient::market {

inline constexpr double kNever = std::numeric_limits<double>::infinity();

class MarketTimeline {
 public:
  virtual ~MarketTimeline() = default;

  // Absolute time (s) at which a spot server that became ready at `launch_s` is revoked, or
  // kNever. Draws from `rng` where the model is random. The cloud's cap (GCE: 24 h) is honoured.
  virtual double revocation_time_s(double launch_s, Rng& rng) = 0;

  // Whether a new spot server can be obtained at `t_s`.
  virtual bool available_at(double t_s) = 0;

  // Earliest time >= `t_s` at which a new spot server can be obtained, or kNever.
  virtual double next_available_s(double t_s) = 0;

  // The job no longer holds the spot server whose revocation_time_s was `revoke_s` (released,
  // or revoked): where a server holds what no other can have (a fleet's node), it is free again
  // for the next request. Nothing elsewhere. Two held servers with the same `revoke_s` are told
  // apart by nothing: the one freed is either.
  virtual void released(double /*revoke_s*/) {}

  // The time (since the run's start) after which the timeline changes no more: a node trace's
  // last event, after which the fleet stays as it was. kNever where the market goes on (the
  // models, availability traces, which repeat).
  virtual double data_end_s() const { return kNever; }
};

class RevocationModel {
 public:
  virtual ~RevocationModel() = default;

  // The registry name, e.g. "lifetime", "trace".
  virtual std::string name() const = 0;
  // One line for people: what the model is and which data it was fitted on.
  virtual std::string describe() const = 0;

  // One realisation of the market for a run starting at `start_hour_of_day` (0..24, local time
  // of the zone); anything the run needs up front (a trace offset) is drawn from `rng`.
  virtual std::unique_ptr<MarketTimeline> start_run(double start_hour_of_day, Rng& rng) const = 0;

  // One server lifetime in seconds for a server launched at the start of a fresh run (used by
  // `transient market sample` and the model summaries). kNever if the server is never revoked.
  virtual double sample_lifetime_s(Rng& rng) const = 0;

  // The longest a spot server can live (GCE: 24 h), or kNever if there is no cap. A lifetime equal
  // to the cap is a server that reached it.
  virtual double cap_s() const { return kNever; }

  // Whether spot comes and goes with the time alone: every server that can be had at a moment is
  // revoked at the same later moment, whichever server it is and whenever it started (a spot
  // availability trace without a cap). Then a schedule of decision ticks says what any server
  // meets, and an offline optimum on it is a bound. False where each server draws its own
  // lifetime (or takes its own node of a fleet).
  virtual bool spot_by_time() const { return false; }

  // Whether each spot server is had and revoked on its own: when a server requested at a moment
  // is obtained and revoked depends on that moment, on draws of its own and on the spot servers
  // the job holds then, not on the servers it held before (a lifetime model, an hour-of-day or
  // exponential one, an availability trace, capped or not; a fleet's node events, where a node
  // held is not free for another server but is again once released). Then a run that gives
  // the n-th request of each decision tick draws of its own (Simulator) shows an offline optimum
  // what every server of a job that holds one at a time would meet.
  virtual bool spot_by_launch() const { return false; }
};

}  // namespace transient::market
