// Seeded random numbers that give the same sequence on every platform for a seed.
//
// The engine is std::mt19937_64 (its output is fixed by the standard); the conversions to doubles
// are ours because the standard library's distributions differ between implementations, and a
// simulation run must be reproducible from its seed alone. Not thread-safe: one Rng per thread or
// per simulated run (Monte Carlo run i uses seed base + i).
#pragma once

#include <cmath>
#include <cstdint>
#include <random>

namespace transient {

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : engine_(seed) {}

  std::uint64_t next_u64() { return engine_(); }

  // Uniform in [0, 1), 53 random bits.
  double uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }

  // Uniform in [lo, hi).
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }

  // Uniform integer in [0, n). REQUIRES: n > 0.
  std::uint64_t below(std::uint64_t n) {
    // Rejection sampling keeps the result unbiased for any n.
    const std::uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    std::uint64_t x = engine_();
    while (x >= limit) x = engine_();
    return x % n;
  }

  // Exponentially distributed with the given rate (events per unit). REQUIRES: rate > 0.
  double exponential(double rate) { return -std::log1p(-uniform()) / rate; }

  // Standard normal by Box-Muller (one of the pair is discarded to keep the state simple).
  double normal() {
    const double u1 = 1.0 - uniform();  // (0, 1]
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
  }

 private:
  std::mt19937_64 engine_;
};

}  // namespace transient
