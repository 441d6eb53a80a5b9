#include "transient/sim/monte_carlo.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <thread>

#include "transient/core/error.h"
#include "transient/sim/simulator.h"

namespace transient::sim {
namespace {

Distribution distribution(std::vector<double> values) {
  Distribution d;
  if (values.empty()) return d;
  std::sort(values.begin(), values.end());
  double sum = 0.0;
  for (const double v : values) sum += v;
  d.mean = sum / static_cast<double>(values.size());
  auto rank = [&](double p) {
    const auto n = static_cast<double>(values.size());
    const auto index = static_cast<std::size_t>(std::max(1.0, std::ceil(p * n))) - 1;
    return values[std::min(index, values.size() - 1)];
  };
  d.p50 = rank(0.50);
  d.p95 = rank(0.95);
  d.p99 = rank(0.99);
  return d;
}

}  // namespace

std::vector<RunResult> run_many(const Scenario& scenario, const MonteCarloOptions& options) {
  if (options.runs < 1) throw InputError("--runs must be >= 1");
  if (options.threads < 1) throw InputError("--threads must be >= 1");
  std::vector<RunResult> results(options.runs);
  const int threads = std::min(options.threads, options.runs);
  // Each thread owns a Simulator and writes only its own slots of `results`.
  std::vector<Simulator> simulators;
  simulators.reserve(threads);
  for (int t = 0; t < threads; ++t) simulators.emplace_back(scenario);
  auto work = [&](int t) {
    for (int i = t; i < options.runs; i += threads) {
      results[i] = simulators[t].run(options.seed + static_cast<std::uint64_t>(i));
    }
  };
  if (threads == 1) {
    work(0);
    return results;
  }
  std::vector<std::exception_ptr> errors(threads);
  std::vector<std::thread> pool;
  pool.reserve(threads);
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      try {
        work(t);
      } catch (...) {
        errors[t] = std::current_exception();
      }
    });
  }
  for (auto& thread : pool) thread.join();
  for (const auto& error : errors) {
    if (error) std::rethrow_exception(error);
  }
  return results;
}

MonteCarloSummary summarize(const std::vector<RunResult>& results) {
  MonteCarloSummary s;
  s.runs = static_cast<int>(results.size());
  std::vector<double> times;
  std::vector<double> costs;
  std::vector<double> revocations;
  std::vector<double> redone;
  int missed = 0;
  for (const auto& r : results) {
    if (r.finished) {
      ++s.finished;
      times.push_back(r.time_s);
    }
    if (r.failed) ++s.failed;
    if (r.missed_deadline) ++missed;
    costs.push_back(r.cost_usd);
    revocations.push_back(r.revocations);
    redone.push_back(r.redone_steps);
    s.events += r.events;
  }
  s.time_s = distribution(std::move(times));
  s.cost_usd = distribution(std::move(costs));
  s.revocations = distribution(std::move(revocations));
  s.redone_steps = distribution(std::move(redone));
  s.mean_revocations = s.revocations.mean;
  s.mean_redone_steps = s.redone_steps.mean;
  if (s.runs > 0) s.deadline_miss_probability = static_cast<double>(missed) / s.runs;
  return s;
}

Histogram histogram(const std::vector<double>& values, int bins) {
  TRANSIENT_CHECK_GE(bins, 1);
  Histogram h;
  if (values.empty()) return h;
  const auto [low, high] = std::minmax_element(values.begin(), values.end());
  if (*low == *high) {
    h.edges = {*low, *high};
    h.counts = {static_cast<int>(values.size())};
    return h;
  }
  const double width = (*high - *low) / bins;
  for (int i = 0; i <= bins; ++i) h.edges.push_back(i == bins ? *high : *low + width * i);
  h.counts.assign(static_cast<std::size_t>(bins), 0);
  for (double v : values) {
    const int bin = std::min(bins - 1, static_cast<int>((v - *low) / width));
    ++h.counts[static_cast<std::size_t>(bin)];
  }
  return h;
}

MonteCarloSummary run_monte_carlo(const Scenario& scenario, const MonteCarloOptions& options) {
  return summarize(run_many(scenario, options));
}

}  // namespace transient::sim
