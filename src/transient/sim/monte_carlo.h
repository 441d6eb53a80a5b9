// Many simulated runs of one scenario, and their statistics.
//
// Run i uses seed `seed + i`; runs are split over `threads` std::threads (each with its own
// Simulator) and their results are kept in run order, so the results, and every statistic, are
// the same for any number of threads.
//
// summarize() is the one definition of the run statistics: `transient simulate` prints it and the
// planner (plan/planner.h) judges its plans by it, so both report the same figures for the same
// scenario, seed and runs. A run that did not finish (gave up at the horizon, or failed) is not a
// fast run: the time percentiles count it as infinitely long, so the p95 time is infinite (printed
// "never") when more than 5% of the runs did not finish; the mean time is over the finished runs.
// Runs stopped at the scenario's budget, or that gave up after kMaxRequestsPerRun server requests,
// did not finish either.
#pragma once

#include <cstdint>
#include <vector>

#include "transient/sim/run_result.h"
#include "transient/sim/scenario.h"

namespace transient::sim {

struct MonteCarloOptions {
  int runs = 1000;         // number of runs, >= 1
  std::uint64_t seed = 1;  // run i uses seed + i
  int threads = 1;         // worker threads, >= 1 (more than runs are not started)
};

// Mean and nearest-rank percentiles of one figure over the runs.
struct Distribution {
  double mean = 0.0;
  double p50 = 0.0;
  double p95 = 0.0;
  double p99 = 0.0;
};

struct MonteCarloSummary {
  int runs = 0;          // runs simulated
  int finished = 0;      // runs that reached the job's steps
  int failed = 0;        // runs the recovery model failed (never finished)
  int budget_stops = 0;  // runs whose cost reached the scenario's budget (never finished)
  int request_caps = 0;  // runs that gave up after kMaxRequestsPerRun requests (never finished)
  // Time to finish: the mean over the finished runs (infinity if none finished); the percentiles
  // over all runs, an unfinished run counting as infinity.
  Distribution time_s;
  Distribution cost_usd;                   // over all runs
  Distribution revocations;                // spot servers revoked per run, over all runs
  Distribution redone_steps;               // steps lost and done again per run, over all runs
  double mean_revocations = 0.0;           // revocations.mean
  double mean_redone_steps = 0.0;          // redone_steps.mean
  double deadline_miss_probability = 0.0;  // share of runs not finished by the deadline (0: none)
  std::uint64_t events = 0;                // events processed, all runs
  // Every run's time, increasing, an unfinished run's as infinity (what time_s's percentiles
  // are taken from).
  std::vector<double> sorted_time_s;

  // The share of runs that did not finish, in [0, 1] (0 without runs).
  double unfinished_share() const;
  // The nearest-rank `p` quantile of time, counted as time_s's percentiles are
  // (time_quantile_s(0.95) == time_s.p95). REQUIRES: 0 < p <= 1.
  double time_quantile_s(double p) const;
};

// Counts of values in `bins` equal bins between the least and the greatest value: counts[i] holds
// the values in [edges[i], edges[i+1]) (the last bin includes its upper edge), so every value is
// counted once. No values: no bins; all values equal: one bin of width 0 holding them all.
struct Histogram {
  std::vector<double> edges;  // bins + 1 increasing edges
  std::vector<int> counts;    // values per bin
};
Histogram histogram(const std::vector<double>& values, int bins);

// Every run's result, in run order. Throws InputError for a scenario the simulator rejects.
std::vector<RunResult> run_many(const Scenario& scenario, const MonteCarloOptions& options);

MonteCarloSummary summarize(const std::vector<RunResult>& results);

// run_many followed by summarize.
MonteCarloSummary run_monte_carlo(const Scenario& scenario, const MonteCarloOptions& options);

}  // namespace transient::sim
