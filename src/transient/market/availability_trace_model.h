// The `trace` revocation model for spot availability traces (SkyPilot's spot-traces, the traces of
// "Can't Be Late", NSDI 2024): one tick every gap_seconds, 1 = a spot server can be had and kept,
// 0 = unavailable / preempted. A run replays the trace from an offset (fixed, or drawn by
// start_run); a server launched while the trace is at 1 is revoked at the next 0-tick, and all
// servers in the zone are revoked together. The trace repeats after its end, so any offset and
// any run length are valid.
//
// Immutable after construction; safe to share between threads. Queries are O(1): the next 0 and
// next 1 after every tick are precomputed.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "transient/market/revocation_model.h"

namespace transient::market {

class AvailabilityTraceModel : public RevocationModel {
 public:
  // Reads the JSON trace at `path` ({"metadata": {"gap_seconds": G}, "data": [0|1, ...]}).
  // `offset_s`: where runs start in the trace, or a negative number to draw it uniformly in
  // [0, duration) for every run. `cap_s`: the longest lifetime (kNever for none). Throws
  // InputError naming the file for a bad format, a tick other than 0 or 1, or a trace without
  // any available tick.
  static std::unique_ptr<AvailabilityTraceModel> read(const std::string& path, double offset_s,
                                                      double cap_s);

  // This trace replayed from `offset_s` instead (negative: drawn for every run), sharing its
  // ticks. For a reader that checks the offset itself, naming where it was written.
  // REQUIRES: offset_s < duration_s().
  std::unique_ptr<AvailabilityTraceModel> with_offset(double offset_s) const;

  // From ticks in memory; `source` names them in descriptions.
  AvailabilityTraceModel(std::vector<std::uint8_t> ticks, double gap_s, double offset_s,
                         double cap_s, std::string source);

  std::string name() const override { return "trace"; }
  std::string describe() const override;
  std::unique_ptr<MarketTimeline> start_run(double start_hour_of_day, Rng& rng) const override;
  // Lifetime of a server launched at the first available moment of a fresh run.
  double sample_lifetime_s(Rng& rng) const override;
  double cap_s() const override { return cap_s_; }
  bool spot_by_launch() const override { return true; }
  bool spot_by_time() const override { return cap_s_ == kNever; }

  // The trace's facts, for summaries and tests.
  double gap_s() const;
  double duration_s() const;
  double available_fraction() const;  // share of ticks at 1
  int drops() const;                  // 1 -> 0 transitions inside the trace (not across its end)

  struct Trace;  // the ticks and the precomputed next-0 / next-1 tables; shared with timelines

 private:
  std::shared_ptr<const Trace> trace_;
  double offset_s_;
  double cap_s_;
  std::string source_;
};

}  // namespace transient::market
