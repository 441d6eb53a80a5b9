#include "transient/market/lifetime_model.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "transient/core/bounds.h"
#include "transient/core/csv_table.h"
#include "transient/core/error.h"
#include "transient/core/text.h"

namespace transient::market {

// A server's lifetime, in hours: at most the 30 days every duration is bounded by.
constexpr Bound kLifetimeHours{0.0, bounds::kMaxDurationS / 3600.0, "h"};
namespace {

class LifetimeTimeline : public MarketTimeline {
 public:
  explicit LifetimeTimeline(std::shared_ptr<const internal::EmpiricalCdf> cdf)
      : cdf_(std::move(cdf)) {}

  double revocation_time_s(double launch_s, Rng& rng) override {
    return launch_s + cdf_->sample_s(rng);
  }
  bool available_at(double /*t_s*/) override { return true; }
  double next_available_s(double t_s) override { return t_s; }

 private:
  std::shared_ptr<const internal::EmpiricalCdf> cdf_;
};

std::string cap_text(double cap_s) {
  if (!std::isfinite(cap_s)) return "no cap";
  std::ostringstream out;
  out << "cap " << cap_s / 3600.0 << " h";
  return out.str();
}

}  // namespace

LifetimeModel::LifetimeModel(std::string description, internal::EmpiricalCdf cdf)
    : description_(std::move(description)),
      cdf_(std::make_shared<const internal::EmpiricalCdf>(std::move(cdf))) {}

std::unique_ptr<MarketTimeline> LifetimeModel::start_run(double /*start_hour_of_day*/,
                                                         Rng& /*rng*/) const {
  return std::make_unique<LifetimeTimeline>(cdf_);
}

std::unique_ptr<LifetimeModel> LifetimeModel::fit_gce_2019(const std::string& path,
                                                           const std::string& gpu,
                                                           const std::string& zone, double cap_s) {
  const CsvTable table = CsvTable::read_file(path);
  const int gpu_column = table.require_column({"gpu"});
  const int zone_column = table.require_column({"zone"});
  const int hours_column = table.require_column({"lifetime_hours"});
  std::set<std::string> gpus;
  std::set<std::string> zones_for_gpu;
  std::vector<double> lifetimes_s;
  for (const CsvRow& row : table.rows()) {
    const std::string& row_gpu = table.text(row, gpu_column);
    const std::string& row_zone = table.text(row, zone_column);
    const double hours = table.number(row, hours_column, kLifetimeHours);
    gpus.insert(row_gpu);
    if (!gpu.empty() && !same_ignoring_case(row_gpu, gpu)) continue;
    zones_for_gpu.insert(row_zone);
    if (!zone.empty() && !same_ignoring_case(row_zone, zone)) continue;
    lifetimes_s.push_back(hours * 3600.0);
  }
  if (!gpu.empty() && zones_for_gpu.empty()) {
    // No file in the error: the bad value is the caller's parameter, not the data file, and the
    // scenario loader places a file-less error at the parameter's line.
    throw InputError("gpu \"" + gpu + "\": no lifetimes measured in " + path +
                     "; accepted: " + join(gpus));
  }
  if (lifetimes_s.empty()) {
    throw InputError("zone \"" + zone + "\": no lifetimes measured in " + path + " for " +
                     (gpu.empty() ? std::string("any gpu") : gpu) +
                     "; accepted zones: " + join(zones_for_gpu));
  }
  std::ostringstream description;
  description << "GCE 2019 preemptible " << (gpu.empty() ? std::string("GPU") : gpu) << " lifetimes"
              << (zone.empty() ? std::string() : " in " + zone) << " (" << lifetimes_s.size()
              << " servers, " << cap_text(cap_s) << "; "
              << "cake-lab/transient-deep-learning)";
  auto model = std::make_unique<LifetimeModel>(
      description.str(), internal::EmpiricalCdf::from_samples(lifetimes_s, cap_s));
  for (double& lifetime : lifetimes_s) lifetime = std::min(lifetime, cap_s);
  model->measured_s_ = std::move(lifetimes_s);
  return model;
}

std::unique_ptr<LifetimeModel> LifetimeModel::from_cdf_file(const std::string& path, double cap_s) {
  std::ifstream in(path);
  if (!in) throw InputError(path, 0, "cannot open the file (does it exist and is it readable?)");
  std::vector<std::pair<double, double>> points;
  std::string text;
  int line = 0;
  while (std::getline(in, text)) {
    ++line;
    // A UTF-8 byte order mark is not part of the first row (CsvTable drops it too).
    if (line == 1 && text.compare(0, 3, "\xEF\xBB\xBF") == 0) text.erase(0, 3);
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::istringstream fields(text);
    double hours = 0.0;
    double fraction = 0.0;
    std::string rest;
    if (!(fields >> hours >> fraction) || (fields >> rest)) {
      throw InputError(
          path, line,
          "expected two numbers `lifetime_hours cumulative_fraction`, found \"" + text + "\"");
    }
    if (!kLifetimeHours.contains(hours) || !(fraction >= 0.0 && fraction <= 1.0)) {
      throw InputError(path, line,
                       "accepted: lifetime_hours " + kLifetimeHours.accepted() +
                           " and cumulative_fraction in [0, 1]");
    }
    if (!points.empty() &&
        (hours < points.back().first / 3600.0 || fraction < points.back().second)) {
      throw InputError(path, line, "the CDF decreases; accepted: points in increasing order");
    }
    points.emplace_back(hours * 3600.0, fraction);
  }
  if (points.empty()) throw InputError(path, 0, "no CDF points");
  if (points.back().first < 1.0) {
    // Every server revoked as it starts: a run would request servers without end.
    throw InputError(path, line,
                     "every lifetime is under a second; accepted: a CDF whose last point is at "
                     "1 s (0.000278 h) or more");
  }
  if (std::abs(points.back().second - 1.0) > 1e-6) {
    throw InputError(path, line,
                     "the CDF ends at " + std::to_string(points.back().second) +
                         "; accepted: a last cumulative_fraction of 1");
  }
  std::string stem = path.substr(path.find_last_of('/') + 1);
  std::ostringstream description;
  description << "GCE preemptible VM lifetime CDF " << stem << " (" << cap_text(cap_s)
              << "; prateek-s/scispot, HPDC 2020)";
  return std::make_unique<LifetimeModel>(
      description.str(), internal::EmpiricalCdf::from_points(std::move(points), cap_s));
}

}  // namespace transient::market
