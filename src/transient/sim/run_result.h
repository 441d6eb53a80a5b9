// What one simulated run produced: the summary figures and, when asked for, its timeline.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace transient::sim {

enum class EventKind : std::uint8_t {
  requested,   // a server was requested (logged, not queued)
  ready,       // a server finished starting and joined
  notice,      // a preemption notice for a spot server
  revoked,     // a spot server was revoked
  released,    // a server was released by a policy (logged, not queued)
  checkpoint,  // a periodic checkpoint was written
  done,        // the job reached its steps
  deadline,    // the deadline passed
  decision,    // a market-policy decision tick
  horizon,     // the run gave up
  budget,      // the run's cost reached the scenario's budget: renting stops
};

// A run gives up after this many server requests: servers revoked about as they start would be
// requested without end (each kept in the run's memory). Far above any run's requests (64
// workers replaced every hour for 30 days: 46,080).
inline constexpr int kMaxRequestsPerRun = 1'000'000;

std::string_view to_string(EventKind kind);

struct TimelineEntry {
  double time_s = 0.0;
  EventKind kind = EventKind::requested;
  int server = -1;     // the server's index in the run, -1 for job events
  std::string detail;  // e.g. "n1-standard-4+k80 spot", "progress 31000 steps"
};

struct RunResult {
  bool finished = false;           // the job reached its steps before the horizon (and the budget)
  bool failed = false;             // the recovery model failed the job (async-ps-chief, "fail")
  bool stopped_at_budget = false;  // its cost reached Scenario::budget_usd: renting stopped
  bool request_cap = false;        // it gave up after kMaxRequestsPerRun server requests
  bool missed_deadline = false;    // not finished by the deadline (without one: never)
  double time_s = 0.0;             // finish time (or the time the run ended)
  double cost_usd = 0.0;           // every server, billed per second
  double spot_cost_usd = 0.0;      // part of cost_usd paid for spot servers
  int revocations = 0;             // spot servers revoked
  int requests = 0;                // servers requested, the initial ones included
  double redone_steps = 0.0;       // steps lost to rollbacks and done again
  int checkpoints = 0;             // checkpoints written
  std::uint64_t events = 0;        // events the engine processed
};

}  // namespace transient::sim
