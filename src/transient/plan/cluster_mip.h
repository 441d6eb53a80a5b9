// The planner's mixed-integer programme, solved with COIN-OR CBC (CbcModel over Clp).
//
// Each option is one (instance type, market) that may be bought 0..max_count times; the speed of
// n servers of one option, from the throughput model, is precomputed for n = 1..max_count, and a
// binary y[o][n] selects "n servers of option o" (at most one n per option). The cluster's speed
// t is the sum of the selected options' speeds (the linearisation of a heterogeneous mix), capped
// by `cap_steps_per_s` (a shared parameter server saturates); its price P is the fixed servers'
// price plus the selected servers'. Both are linear in y. Options of one `kind` (a type sold in
// several regions) are bought in one of them at most; with `max_regions`, a binary per region r
// with y[o][n] <= z[r(o)] and sum z <= max_regions keeps a cluster in that many regions. So:
// - fastest():  max t            s.t. t >= min speed (deadline), P <= 3600 B/steps t (budget);
// - cheapest(): min P / t (= $ per step) under the same constraints, by Dinkelbach's parametric
//   method: min P - lambda t, lambda <- P/t of the solution, until the optimum is 0 (exact for
//   the linearised model, a few MIPs).
// Earlier choices are excluded by no-good cuts, which gives the top-k. Not thread-safe; one
// ClusterMip per thread.
#pragma once

#include <limits>
#include <optional>
#include <vector>

namespace transient::plan {

struct MipOption {
  double usd_per_h = 0.0;           // price of one server, > 0
  std::vector<double> steps_per_s;  // [n - 1]: speed of n servers of this option alone
  int region = 0;                   // where it is sold (any numbering); see max_regions
  int kind = -1;                    // options of one kind >= 0: at most one bought; -1: none
};

struct MipConstraints {
  double min_steps_per_s = 0.0;                                       // from the deadline
  double max_usd_per_step = std::numeric_limits<double>::infinity();  // budget / steps
  std::vector<std::vector<int>> excluded;  // counts per option of choices to exclude
};

struct MipChoice {
  std::vector<int> counts;   // servers per option, 0 = none
  double usd_per_h = 0.0;    // P, the fixed servers included
  double steps_per_s = 0.0;  // t as the programme sees it
};

class ClusterMip {
 public:
  // REQUIRES: every option's steps_per_s has the same size >= 1 (max_count); max_servers >= 1.
  // max_regions: the regions a choice may span (MipOption::region); 0 = any number.
  ClusterMip(std::vector<MipOption> options, double fixed_usd_per_h, double cap_steps_per_s,
             int max_servers, bool homogeneous, int max_regions = 0);

  // nullopt when no choice meets the constraints. fastest() returns the cheapest of the fastest.
  std::optional<MipChoice> fastest(const MipConstraints& constraints);
  std::optional<MipChoice> cheapest(const MipConstraints& constraints);
  // The lowest price per hour (the epsilon-constraint step of the Pareto front).
  std::optional<MipChoice> lowest_price(const MipConstraints& constraints);

  // MIPs solved so far.
  int solves() const { return solves_; }

 private:
  // min fixed + P - lambda t (fastest: min -t); nullopt if infeasible.
  std::optional<MipChoice> solve(const MipConstraints& constraints, bool fastest, double lambda);
  MipChoice choice_from(const std::vector<int>& counts) const;

  std::vector<MipOption> options_;
  double fixed_usd_per_h_;
  double cap_steps_per_s_;
  int max_servers_;
  bool homogeneous_;
  int max_regions_;
  int max_count_;
  int solves_ = 0;
};

}  // namespace transient::plan
