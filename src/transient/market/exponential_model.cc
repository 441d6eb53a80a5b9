#include "transient/market/exponential_model.h"

#include <algorithm>
#include <cmath>

#include "transient/core/error.h"

namespace transient::market {
namespace {

class ExponentialTimeline : public MarketTimeline {
 public:
  ExponentialTimeline(double mean_lifetime_s, double cap_s)
      : mean_lifetime_s_(mean_lifetime_s), cap_s_(cap_s) {}

  double revocation_time_s(double launch_s, Rng& rng) override {
    return launch_s + std::min(cap_s_, rng.exponential(1.0 / mean_lifetime_s_));
  }
  bool available_at(double /*t_s*/) override { return true; }
  double next_available_s(double t_s) override { return t_s; }

 private:
  double mean_lifetime_s_;
  double cap_s_;
};

}  // namespace

ExponentialModel::ExponentialModel(double mean_lifetime_s, double cap_s, std::string description)
    : mean_lifetime_s_(mean_lifetime_s), cap_s_(cap_s), description_(std::move(description)) {
  TRANSIENT_CHECK_GT(mean_lifetime_s_, 0.0);
  TRANSIENT_CHECK_GT(cap_s_, 0.0);
}

std::optional<double> ExponentialModel::mean_for_bucket_s(const std::string& bucket) {
  double share = 0.0;
  if (bucket == "<5%") {
    share = 0.025;
  } else if (bucket == "5-10%") {
    share = 0.075;
  } else if (bucket == "10-15%") {
    share = 0.125;
  } else if (bucket == "15-20%") {
    share = 0.175;
  } else if (bucket == ">20%") {
    share = 0.25;
  } else {
    return std::nullopt;
  }
  return 30.0 * 86400.0 / -std::log1p(-share);
}

std::unique_ptr<MarketTimeline> ExponentialModel::start_run(double /*start_hour_of_day*/,
                                                            Rng& /*rng*/) const {
  return std::make_unique<ExponentialTimeline>(mean_lifetime_s_, cap_s_);
}

double ExponentialModel::sample_lifetime_s(Rng& rng) const {
  return std::min(cap_s_, rng.exponential(1.0 / mean_lifetime_s_));
}

}  // namespace transient::market
