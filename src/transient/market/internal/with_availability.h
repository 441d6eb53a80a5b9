// A revocation model whose spot availability comes from an availability trace: lifetimes from
// the wrapped model, "can a server be had now?" from the trace (replayed from its own offset).
// Used when a lifetime-type model is given an `availability` parameter. A server launched while
// the trace says unavailable is lost at once, as in trace replay. Immutable; safe to share.
#pragma once

#include <memory>
#include <string>

#include "transient/market/availability_trace_model.h"
#include "transient/market/revocation_model.h"

namespace transient::market::internal {

class WithAvailability : public RevocationModel {
 public:
  WithAvailability(std::unique_ptr<RevocationModel> lifetimes,
                   std::unique_ptr<AvailabilityTraceModel> availability);

  std::string name() const override { return lifetimes_->name(); }
  std::string describe() const override;
  std::unique_ptr<MarketTimeline> start_run(double start_hour_of_day, Rng& rng) const override;
  double sample_lifetime_s(Rng& rng) const override { return lifetimes_->sample_lifetime_s(rng); }
  double cap_s() const override { return lifetimes_->cap_s(); }

 private:
  std::unique_ptr<RevocationModel> lifetimes_;
  std::unique_ptr<AvailabilityTraceModel> availability_;
};

}  // namespace transient::market::internal
