// How long a requested server takes to be ready: provisioning + staging + booting, from
// CM-DARE's measurements of GCE K80 and P100 servers (cmdare/startup_time/{pre,on_demand}_{east,
// west}/), one sample per measured server; or a built-in default per market when the data is not
// available. Sampling picks one measured server's total uniformly (the measurements are few and
// tightly grouped, so no smoothing is needed).
//
// Immutable after construction; safe to share between threads.
#pragma once

#include <string>
#include <vector>

#include "transient/cloud/instance_type.h"
#include "transient/core/random.h"

namespace transient::market {

class StartupModel {
 public:
  // The measured start-up times for `market` (spot = CM-DARE's "pre" folders), GPU `gpu` (K80 or
  // P100; empty = both) and side `region` ("east" or "west"; empty = both), read from `data_dir`.
  // Throws InputError for a missing folder or file (naming the path and --data-dir), a bad row,
  // or a gpu/region with no measurements (listing the accepted ones).
  static StartupModel load_cmdare(const std::string& data_dir, cloud::Market market,
                                  const std::string& gpu = "", const std::string& region = "");
  // load_cmdare(data_dir, market) if `data_dir` holds cmdare/startup_time/, else
  // builtin_default(market). Errors in data that is there are still InputErrors.
  static StartupModel load_or_default(const std::string& data_dir, cloud::Market market);
  // A fixed delay per market when no data is at hand: the means of all of CM-DARE's
  // measurements, 87.3 s for spot and 71.0 s for on-demand servers.
  static StartupModel builtin_default(cloud::Market market);

  // REQUIRES: !samples_s.empty(), every sample >= 0.
  StartupModel(std::vector<double> samples_s, std::string description);

  double sample_s(Rng& rng) const { return samples_s_[rng.below(samples_s_.size())]; }
  double mean_s() const;
  double median_s() const;
  // Standard deviation of the samples (0 for a single one).
  double stddev_s() const;
  const std::vector<double>& samples_s() const { return samples_s_; }
  const std::string& describe() const { return description_; }

 private:
  std::vector<double> samples_s_;  // sorted
  std::string description_;
};

}  // namespace transient::market
