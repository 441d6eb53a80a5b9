// Monte Carlo parallelism across runs: `work(t)` on `threads` std::threads, t = 0..threads-1,
// joined before it returns; the first exception a thread threw is rethrown here. Each call of
// work must touch only what its thread owns.
#pragma once

#include <exception>
#include <thread>
#include <vector>

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

}  // namespace transient::sim::internal
