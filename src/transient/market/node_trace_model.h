// The `trace` revocation model for node event traces (Bamboo's spot fleet traces: rows
// `time_ms,add|remove,nodeN`): the cloud's spot capacity is the set of nodes present at a time.
// A server launched at time t takes one free present node (drawn with the run's Rng) and is
// revoked when that node is removed; a new server can be had while some present node is not
// taken. After the trace's last event the fleet stays as it was (its nodes are never revoked).
//
// The model is immutable and safe to share; each run's timeline remembers which nodes its servers
// hold: a node is taken until its removal or until the job releases the server (`released`), as
// a released instance goes back to the cloud's pool.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "transient/market/revocation_model.h"

namespace transient::market {

class NodeTraceModel : public RevocationModel {
 public:
  // A node's presence in the trace: [added_s, removed_s); removed_s = kNever if never removed.
  struct Presence {
    int node = 0;
    double added_s = 0.0;
    double removed_s = kNever;
  };

  // Reads the CSV at `path` (an optional header line, then `time_ms,add|remove,node` rows in
  // time order). Throws InputError at the line of a bad row: a non-number or negative time, time
  // going backwards, an event other than add/remove, adding a present node or removing an absent
  // one. `offset_s` < 0 draws the offset uniformly in [0, duration) for every run.
  static std::unique_ptr<NodeTraceModel> read(const std::string& path, double offset_s,
                                              double cap_s);

  // This trace replayed from `offset_s` instead (negative: drawn for every run), sharing its
  // events. For a reader that checks the offset itself, naming where it was written.
  // REQUIRES: offset_s < duration_s().
  std::unique_ptr<NodeTraceModel> with_offset(double offset_s) const;

  NodeTraceModel(std::vector<Presence> presences, int nodes, double duration_s, double offset_s,
                 double cap_s, std::string source);

  std::string name() const override { return "trace"; }
  std::string describe() const override;
  std::unique_ptr<MarketTimeline> start_run(double start_hour_of_day, Rng& rng) const override;
  // Lifetime of a server launched at the first available moment of a fresh run.
  double sample_lifetime_s(Rng& rng) const override;
  double cap_s() const override { return cap_s_; }
  // A request's node is drawn among the nodes present and not held by the job's servers.
  bool spot_by_launch() const override { return true; }

  // The trace's facts, for summaries and tests.
  double duration_s() const { return duration_s_; }  // time of the last event
  int removals() const;                              // remove events = drops
  int peak_nodes() const;                            // most nodes present at once
  double mean_nodes() const;                         // time-averaged nodes present

 private:
  std::shared_ptr<const std::vector<Presence>> presences_;  // by node, then time
  int nodes_;
  double duration_s_;
  double offset_s_;
  double cap_s_;
  std::string source_;
};

}  // namespace transient::market
