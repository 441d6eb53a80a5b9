#include "transient/market/internal/with_availability.h"

namespace transient::market::internal {
namespace {

class WithAvailabilityTimeline : public MarketTimeline {
 public:
  WithAvailabilityTimeline(std::unique_ptr<MarketTimeline> lifetimes,
                           std::unique_ptr<MarketTimeline> availability)
      : lifetimes_(std::move(lifetimes)), availability_(std::move(availability)) {}

  double revocation_time_s(double launch_s, Rng& rng) override {
    if (!availability_->available_at(launch_s)) return launch_s;
    return lifetimes_->revocation_time_s(launch_s, rng);
  }
  bool available_at(double t_s) override { return availability_->available_at(t_s); }
  double next_available_s(double t_s) override { return availability_->next_available_s(t_s); }

 private:
  std::unique_ptr<MarketTimeline> lifetimes_;
  std::unique_ptr<MarketTimeline> availability_;
};

}  // namespace

WithAvailability::WithAvailability(std::unique_ptr<RevocationModel> lifetimes,
                                   std::unique_ptr<AvailabilityTraceModel> availability)
    : lifetimes_(std::move(lifetimes)), availability_(std::move(availability)) {}

std::string WithAvailability::describe() const {
  return lifetimes_->describe() + "; availability: " + availability_->describe();
}

std::unique_ptr<MarketTimeline> WithAvailability::start_run(double start_hour_of_day,
                                                            Rng& rng) const {
  auto lifetimes = lifetimes_->start_run(start_hour_of_day, rng);
  auto availability = availability_->start_run(start_hour_of_day, rng);
  return std::make_unique<WithAvailabilityTimeline>(std::move(lifetimes), std::move(availability));
}

}  // namespace transient::market::internal
