// Monte Carlo parallelism across runs.
// - run_in_threads: `work(t)` on `threads` std::threads, t = 0..threads-1, joined before it
//   returns; the first exception a thread threw is rethrown here. Each call of work must touch
//   only what its thread owns.
// - run_seeded: `options.runs` runs of a Sim built from `scenario` (Sim(scenario).run(seed)),
//   run i with seed options.seed + i, results in run order whatever the threads; each thread owns
//   one Sim. Throws InputError for fewer than one run or thread.
#pragma once

#include <algorithm>
#include <cstdint>
#include <exception>
#include <thread>
#include <utility>
#include <vector>

#include "transient/core/error.h"

namespace transient::sim::internal {

template <typename Work>
void run_in_threads(int threads, Work work) {
  if (threads <= 1) {
    work(0);
    return;
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
}

template <typename Sim, typename Scenario, typename Options>
auto run_seeded(const Scenario& scenario, const Options& options) {
  if (options.runs < 1) throw InputError("--runs must be >= 1");
  if (options.threads < 1) throw InputError("--threads must be >= 1");
  std::vector<decltype(std::declval<Sim&>().run(std::uint64_t{}))> results(options.runs);
  const int threads = std::min(options.threads, options.runs);
  std::vector<Sim> simulators;
  simulators.reserve(threads);
  for (int t = 0; t < threads; ++t) simulators.emplace_back(scenario);
  run_in_threads(threads, [&](int t) {
    for (int i = t; i < options.runs; i += threads) {
      results[i] = simulators[t].run(options.seed + static_cast<std::uint64_t>(i));
    }
  });
  return results;
}

}  // namespace transient::sim::internal
