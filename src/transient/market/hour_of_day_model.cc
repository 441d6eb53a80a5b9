#include "transient/market/hour_of_day_model.h"

#include <algorithm>
#include <cmath>

#include "transient/core/bounds.h"
#include "transient/core/csv_table.h"
#include "transient/core/error.h"

namespace transient::market {

// Revocations counted in one hour-of-day bin.
constexpr Bound kCount{0.0, 1e9, "revocations"};
namespace {

constexpr double kHourS = 3600.0;
constexpr double kDayS = 86400.0;

class HourOfDayTimeline : public MarketTimeline {
 public:
  HourOfDayTimeline(std::shared_ptr<const HourOfDayModel> model, double start_hour)
      : model_(std::move(model)), start_hour_(start_hour) {}

  double revocation_time_s(double launch_s, Rng& rng) override {
    const double hour = std::fmod(start_hour_ + launch_s / kHourS, 24.0);
    return launch_s + model_->lifetime_from_hour_s(hour, rng);
  }
  bool available_at(double /*t_s*/) override { return true; }
  double next_available_s(double t_s) override { return t_s; }

 private:
  std::shared_ptr<const HourOfDayModel> model_;
  double start_hour_;
};

}  // namespace

HourOfDayModel::HourOfDayModel(const std::array<double, 24>& weights, double mean_lifetime_s,
                               double cap_s, double start_hour, std::string description)
    : cap_s_(cap_s), start_hour_(start_hour), description_(std::move(description)) {
  TRANSIENT_CHECK_GT(mean_lifetime_s, 0.0);
  TRANSIENT_CHECK_GT(cap_s, 0.0);
  double total = 0.0;
  for (double w : weights) {
    TRANSIENT_CHECK_GE(w, 0.0);
    total += w;
  }
  TRANSIENT_CHECK_GT(total, 0.0);
  for (int h = 0; h < 24; ++h) hazard_per_s_[h] = weights[h] * 24.0 / total / mean_lifetime_s;
}

std::array<double, 24> HourOfDayModel::read_weights(const std::string& path,
                                                    const std::string& gpu) {
  const CsvTable table = CsvTable::read_file(path);
  const int hour_column = table.require_column({"hour_of_day_bin", "hour"});
  std::vector<int> columns;
  if (gpu.empty()) {
    for (int c = 0; c < static_cast<int>(table.header().size()); ++c) {
      if (c != hour_column) columns.push_back(c);
    }
  } else {
    const auto column = table.find_column(gpu);
    if (!column || *column == hour_column) {
      std::string names;
      for (int c = 0; c < static_cast<int>(table.header().size()); ++c) {
        if (c != hour_column) names += (names.empty() ? "" : ", ") + table.header()[c];
      }
      throw InputError(path, table.header_line(),
                       "no column for gpu \"" + gpu + "\"; accepted: " + names + ", any");
    }
    columns.push_back(*column);
  }
  std::array<double, 24> weights{};
  for (const CsvRow& row : table.rows()) {
    const double bin = table.number(row, hour_column);
    if (bin < 0.0 || bin > 24.0 || bin != std::floor(bin)) {
      table.fail(row, "column \"" + table.header()[hour_column] + "\": " + row.fields[hour_column] +
                          " is not accepted; accepted: 0..24");
    }
    for (int c : columns) {
      const double count = table.number(row, c, kCount);
      weights[static_cast<int>(bin) % 24] += count;
    }
  }
  double total = 0.0;
  for (double w : weights) total += w;
  if (total <= 0.0) throw InputError(path, 0, "no revocations counted; accepted: counts > 0");
  return weights;
}

std::unique_ptr<MarketTimeline> HourOfDayModel::start_run(double start_hour_of_day,
                                                          Rng& /*rng*/) const {
  // The timeline holds a copy so that it stays valid whatever happens to this model.
  // The model's own start_hour, when given, is the hour its runs start at (it was read and
  // then ignored here, the run's taken instead).
  return std::make_unique<HourOfDayTimeline>(std::make_shared<const HourOfDayModel>(*this),
                                             start_hour_ >= 0.0 ? start_hour_ : start_hour_of_day);
}

double HourOfDayModel::sample_lifetime_s(Rng& rng) const {
  const double hour = start_hour_ >= 0.0 ? start_hour_ : rng.uniform(0.0, 24.0);
  return lifetime_from_hour_s(hour, rng);
}

double HourOfDayModel::lifetime_from_hour_s(double hour_of_day, Rng& rng) const {
  // Inversion of the cumulative hazard: the server dies when it has accumulated an Exp(1) draw.
  double remaining = rng.exponential(1.0);
  // Every whole day accumulates the same hazard wherever it starts: skip whole days at once.
  double daily = 0.0;
  for (double h : hazard_per_s_) daily += h * kHourS;
  double lived_s = std::floor(remaining / daily) * kDayS;
  remaining -= std::floor(remaining / daily) * daily;
  double clock_s = std::fmod(hour_of_day, 24.0) * kHourS;
  while (lived_s < cap_s_ && remaining > 0.0) {
    const int hour = std::min(23, static_cast<int>(clock_s / kHourS));
    const double segment_s = (hour + 1) * kHourS - clock_s;
    const double accumulated = hazard_per_s_[hour] * segment_s;
    if (accumulated >= remaining) {
      lived_s += remaining / hazard_per_s_[hour];
      break;
    }
    remaining -= accumulated;
    lived_s += segment_s;
    clock_s = hour == 23 ? 0.0 : (hour + 1) * kHourS;
  }
  return std::min(lived_s, cap_s_);
}

}  // namespace transient::market
