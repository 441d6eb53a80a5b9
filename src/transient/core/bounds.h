// Bounds on the numbers that enter the program (docs/errors.md, "Bounds").
//
// Every number read from a file or a flag is checked where it is read against limits that are
// physically sensible for what it measures, so that a NaN, an infinity or an absurd magnitude
// (1e100 FLOPs per sample, a price of 1e30 $/h) never reaches a model, a solver or a printed
// result. A Bound is a closed range with a unit; its text goes into the error line
// ("accepted: a number from 1 to 1e18 FLOPs").
//
// The bounds shared by several parsers are named here; a parser with a bound of its own writes
// it next to the field it reads.
#pragma once

#include <string>

namespace transient {

struct Bound {
  double lo = 0.0;        // smallest accepted value
  double hi = 0.0;        // largest accepted value
  const char* unit = "";  // what the number counts, for messages ("s", "$ per hour"); may be ""
  bool whole = false;     // only whole numbers

  // True when `value` is finite, within [lo, hi], and whole if asked.
  bool contains(double value) const;
  // "a number from 1 to 1e18 FLOPs", "a whole number from 1 to 64".
  std::string accepted() const;
};

namespace bounds {

inline constexpr double kMaxDurationS = 30 * 86400.0;  // 30 days: every time and duration

inline constexpr Bound kDurationS{0.0, kMaxDurationS, "s (30 days)"};
inline constexpr Bound kStepTimeS{1e-6, kMaxDurationS, "s"};
inline constexpr Bound kFlopsPerSample{1.0, 1e18, "FLOPs"};
inline constexpr Bound kGpuTflops{0.0, 1e4, "TFLOPS"};
inline constexpr Bound kPriceUsdPerH{0.0, 1e4, "$ per hour"};
inline constexpr Bound kBudgetUsd{0.01, 1e9, "$"};
inline constexpr Bound kBandwidthGbps{0.0, 1e5, "Gbit/s"};
inline constexpr Bound kBytes{0.0, 1e15, "bytes"};
inline constexpr Bound kMemoryGib{0.0, 1e6, "GiB"};
inline constexpr Bound kBatch{1.0, 1e6, "samples", true};
inline constexpr Bound kParameters{0.0, 1e13, "parameters", true};
inline constexpr Bound kTensors{1.0, 1e7, "tensors", true};
inline constexpr Bound kServers{1.0, 1e4, "servers", true};
inline constexpr Bound kStepsPerS{0.0, 1e6, "steps per second"};

}  // namespace bounds

// `value` when it is finite. A result about to be printed (a step time, a cost) that is NaN or
// infinite is a bug, since every input is bounded: throws CheckFailure("<what> is inf ...") so that
// the CLI reports an internal failure naming the figure instead of printing it.
double check_result(double value, const std::string& what);

// A short form of a number for messages: "1e+18" as "1e18", "0.25", "nan", "inf".
std::string number_text(double value);

}  // namespace transient
