#include "transient/market/availability_trace_model.h"

#include <cmath>
#include <sstream>

#include "transient/core/bounds.h"
#include "transient/core/duration.h"
#include "transient/core/error.h"
#include "transient/core/structured_input.h"

namespace transient::market {

struct AvailabilityTraceModel::Trace {
  std::vector<std::uint8_t> ticks;
  double gap_s = 0.0;
  // For tick i: the first tick j >= i (counting on past the end into the repeated trace, so
  // j < 2n) at 0 / at 1; -1 if the trace has none.
  std::vector<std::int64_t> next_zero;
  std::vector<std::int64_t> next_one;

  std::int64_t size() const { return static_cast<std::int64_t>(ticks.size()); }
  double duration_s() const { return gap_s * static_cast<double>(ticks.size()); }
};

namespace {

using Trace = AvailabilityTraceModel::Trace;

std::vector<std::int64_t> next_with(const std::vector<std::uint8_t>& ticks, std::uint8_t value) {
  const auto n = static_cast<std::int64_t>(ticks.size());
  std::vector<std::int64_t> next(n, -1);
  std::int64_t seen = -1;
  // Two passes backwards over the doubled trace fill in the wrap-around.
  for (std::int64_t k = 2 * n - 1; k >= 0; --k) {
    if (ticks[k % n] == value) seen = k;
    if (k < n) next[k] = seen;
  }
  return next;
}

class AvailabilityTimeline : public MarketTimeline {
 public:
  AvailabilityTimeline(std::shared_ptr<const Trace> trace, double offset_s, double cap_s)
      : trace_(std::move(trace)), offset_s_(offset_s), cap_s_(cap_s) {}

  double revocation_time_s(double launch_s, Rng& /*rng*/) override {
    const Position p = locate(launch_s);
    // A server cannot be had while the trace is at 0: it is lost at once.
    if (trace_->ticks[p.index] == 0) return launch_s;
    const std::int64_t zero = trace_->next_zero[p.index];
    const double end_s = launch_s + cap_s_;
    if (zero < 0) return end_s;
    return std::min(end_s, tick_start_s(p.base + zero));
  }

  bool available_at(double t_s) override { return trace_->ticks[locate(t_s).index] == 1; }

  double next_available_s(double t_s) override {
    const Position p = locate(t_s);
    if (trace_->ticks[p.index] == 1) return t_s;
    const std::int64_t one = trace_->next_one[p.index];
    return one < 0 ? kNever : tick_start_s(p.base + one);
  }

 private:
  struct Position {
    std::int64_t index;  // tick in the trace
    std::int64_t base;   // ticks before the current repetition of the trace
  };

  Position locate(double t_s) const {
    const auto k = static_cast<std::int64_t>(std::floor((offset_s_ + t_s) / trace_->gap_s));
    const std::int64_t index = ((k % trace_->size()) + trace_->size()) % trace_->size();
    return Position{index, k - index};
  }
  // Run time (s) at which unrolled tick `k` starts.
  double tick_start_s(std::int64_t k) const {
    return static_cast<double>(k) * trace_->gap_s - offset_s_;
  }

  std::shared_ptr<const Trace> trace_;
  double offset_s_;
  double cap_s_;
};

}  // namespace

// Between two ticks of a trace: SkyPilot's are 10 minutes apart; a day is the coarsest that still
// says anything about a server's life.
constexpr Bound kGapS{1e-3, 86400.0, "s"};

std::unique_ptr<AvailabilityTraceModel> AvailabilityTraceModel::read(const std::string& path,
                                                                     double offset_s,
                                                                     double cap_s) {
  const nlohmann::json json = load_json_file(path);
  const char* accepted =
      "; accepted: {\"metadata\": {\"gap_seconds\": G}, \"data\": [0|1, ...]} (SkyPilot spot "
      "traces)";
  if (!json.is_object() || !json.contains("metadata") || !json.contains("data") ||
      !json["data"].is_array() || !json["metadata"].is_object() ||
      !json["metadata"].contains("gap_seconds") || !json["metadata"]["gap_seconds"].is_number()) {
    throw InputError(path, 0, std::string("not an availability trace") + accepted);
  }
  const double gap_s = json["metadata"]["gap_seconds"].get<double>();
  if (!kGapS.contains(gap_s)) {
    throw InputError(path, 0,
                     "metadata.gap_seconds is " + number_text(gap_s) +
                         "; accepted: " + kGapS.accepted() + " between ticks");
  }
  std::vector<std::uint8_t> ticks;
  ticks.reserve(json["data"].size());
  for (std::size_t i = 0; i < json["data"].size(); ++i) {
    const auto& tick = json["data"][i];
    // Compared as JSON numbers: get<int>() of 4294967297 would wrap around to 1.
    if (!tick.is_number_integer() || (tick != 0 && tick != 1)) {
      throw InputError(path, 0,
                       "data[" + std::to_string(i) + "] is " + tick.dump() + "; accepted: 0 or 1");
    }
    ticks.push_back(static_cast<std::uint8_t>(tick.get<int>()));
  }
  if (ticks.empty()) throw InputError(path, 0, std::string("no ticks in data") + accepted);
  bool any_available = false;
  for (auto tick : ticks) any_available = any_available || tick == 1;
  if (!any_available) {
    throw InputError(path, 0,
                     "no tick is available (all 0): spot servers can never be had; model this "
                     "market as on-demand only");
  }
  if (offset_s >= gap_s * static_cast<double>(ticks.size())) {
    throw InputError(path, 0,
                     "offset " + format_duration(offset_s) + " is beyond the trace's " +
                         format_duration(gap_s * static_cast<double>(ticks.size())) +
                         "; accepted: an offset inside the trace, or random");
  }
  return std::make_unique<AvailabilityTraceModel>(std::move(ticks), gap_s, offset_s, cap_s, path);
}

AvailabilityTraceModel::AvailabilityTraceModel(std::vector<std::uint8_t> ticks, double gap_s,
                                               double offset_s, double cap_s, std::string source)
    : offset_s_(offset_s), cap_s_(cap_s), source_(std::move(source)) {
  TRANSIENT_CHECK(!ticks.empty());
  TRANSIENT_CHECK_GT(gap_s, 0.0);
  auto trace = std::make_shared<Trace>();
  trace->next_zero = next_with(ticks, 0);
  trace->next_one = next_with(ticks, 1);
  trace->ticks = std::move(ticks);
  trace->gap_s = gap_s;
  trace_ = std::move(trace);
}

std::unique_ptr<AvailabilityTraceModel> AvailabilityTraceModel::with_offset(double offset_s) const {
  TRANSIENT_CHECK_LT(offset_s, duration_s());
  auto model = std::make_unique<AvailabilityTraceModel>(*this);
  model->offset_s_ = offset_s;
  return model;
}

std::string AvailabilityTraceModel::describe() const {
  std::ostringstream out;
  out << "replay of spot availability trace " << source_.substr(source_.find_last_of('/') + 1)
      << " (" << trace_->ticks.size() << " ticks of " << trace_->gap_s << " s, "
      << static_cast<int>(std::round(100.0 * available_fraction())) << "% available, " << drops()
      << " drops; offset " << (offset_s_ < 0.0 ? std::string("random") : format_duration(offset_s_))
      << ")";
  return out.str();
}

std::unique_ptr<MarketTimeline> AvailabilityTraceModel::start_run(double /*start_hour_of_day*/,
                                                                  Rng& rng) const {
  const double offset_s = offset_s_ >= 0.0 ? offset_s_ : rng.uniform(0.0, trace_->duration_s());
  return std::make_unique<AvailabilityTimeline>(trace_, offset_s, cap_s_);
}

double AvailabilityTraceModel::sample_lifetime_s(Rng& rng) const {
  auto timeline = start_run(0.0, rng);
  const double launch_s = timeline->next_available_s(0.0);
  return timeline->revocation_time_s(launch_s, rng) - launch_s;
}

double AvailabilityTraceModel::gap_s() const { return trace_->gap_s; }

double AvailabilityTraceModel::duration_s() const { return trace_->duration_s(); }

double AvailabilityTraceModel::available_fraction() const {
  std::int64_t ones = 0;
  for (auto tick : trace_->ticks) ones += tick;
  return static_cast<double>(ones) / static_cast<double>(trace_->ticks.size());
}

int AvailabilityTraceModel::drops() const {
  int drops = 0;
  for (std::size_t i = 1; i < trace_->ticks.size(); ++i) {
    drops += trace_->ticks[i - 1] == 1 && trace_->ticks[i] == 0;
  }
  return drops;
}

}  // namespace transient::market
