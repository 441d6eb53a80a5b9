#include "transient/perf/table_throughput_model.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "transient/core/bounds.h"
#include "transient/core/csv_table.h"
#include "transient/core/error.h"
#include "transient/core/text.h"
#include "transient/perf/internal/cmdare_speeds.h"
#include "transient/perf/workload.h"

namespace transient::perf {
namespace {

// A measured speed: a step of 1 us to 30 days (bounds::kStepTimeS), so at most the 1e6 steps/s
// that measurement sets accept, and never 0 (a worker that never finishes a step).
constexpr Bound kTableStepsPerS{1.0 / bounds::kMaxDurationS, 1e6,
                                "steps per second (a step of 1 us to 30 days)"};

// The speed in column `speed` of `row`, within kTableStepsPerS. A decimal number beyond a double
// (1e309, 1e-400) is out of range too, not "not a number".
double speed_in_table(const CsvTable& table, const CsvRow& row, int speed) {
  const std::string& field = row.fields.at(speed);
  const bool decimal =
      !field.empty() && field.find_first_not_of("0123456789+-.eE \t") == std::string::npos;
  if (decimal && !parse_number(field)) {
    errno = 0;
    char* end = nullptr;
    std::strtod(field.c_str(), &end);
    if (errno == ERANGE) {
      table.fail(row, "column \"" + table.header().at(speed) + "\": " + field +
                          " is out of range; accepted: " + kTableStepsPerS.accepted());
    }
  }
  return table.number(row, speed, kTableStepsPerS);
}

}  // namespace

TableThroughputModel::TableThroughputModel(std::vector<TablePoint> points, std::string source)
    : source_(std::move(source)) {
  if (points.empty()) throw InputError(source_ + ": the speed table has no rows");
  for (const auto& point : points) {
    if (point.gpu.empty() || !bounds::kServers.contains(point.workers) ||
        !kTableStepsPerS.contains(point.steps_per_s)) {
      throw InputError(source_ + ": bad speed row (gpu \"" + point.gpu + "\", workers " +
                       std::to_string(point.workers) + ", steps/s " +
                       number_text(point.steps_per_s) + "); accepted: a GPU name, workers " +
                       bounds::kServers.accepted() + ", steps/s " + kTableStepsPerS.accepted());
    }
    Curve& curve = curves_[lowercase(point.gpu)];
    if (curve.gpu.empty()) curve.gpu = point.gpu;
    for (const auto& existing : curve.points) {
      if (existing.first == point.workers) {
        throw InputError(source_ + ": two speeds for " + std::to_string(point.workers) + " x " +
                         point.gpu + "; accepted: one row per GPU and worker count");
      }
    }
    curve.points.emplace_back(point.workers, point.steps_per_s);
  }
  for (auto& [key, curve] : curves_) std::sort(curve.points.begin(), curve.points.end());
}

std::vector<std::string> TableThroughputModel::cmdare_workloads() {
  return {"resnet-15", "resnet-32", "shake-shake-small", "shake-shake-big"};
}

TableThroughputModel TableThroughputModel::cmdare(const std::string& workload) {
  std::vector<TablePoint> points;
  const std::string key = workload_key(workload);
  for (const auto& row : internal::cmdare_cluster_speeds()) {
    if (workload_key(row.workload) == key)
      points.push_back({row.gpu, row.workers, row.steps_per_s});
  }
  if (points.empty()) {
    throw InputError("unknown workload \"" + workload + "\" for the table model; accepted: " +
                     join(cmdare_workloads()) + " (CM-DARE's measurements), or a table file");
  }
  return TableThroughputModel(std::move(points),
                              "CM-DARE cluster scaling (ICDCS 2020), " + workload_key(workload));
}

TableThroughputModel TableThroughputModel::from_csv(const std::string& path) {
  const CsvTable table = CsvTable::read_file(path);
  const int gpu = table.require_column({"gpu"});
  const int workers = table.require_column({"workers", "num_workers"});
  const int speed = table.require_column({"steps_per_s", "speed_steps_per_sec_mean"});
  std::vector<TablePoint> points;
  for (const auto& row : table.rows()) {
    const double count = table.number(row, workers, bounds::kServers);
    const double steps_per_s = speed_in_table(table, row, speed);
    points.push_back({table.text(row, gpu), static_cast<int>(count), steps_per_s});
  }
  return TableThroughputModel(std::move(points), path);
}

std::string TableThroughputModel::describe() const {
  return "measured steps/s by GPU and worker count, interpolated (" + source_ + ")";
}

std::vector<std::string> TableThroughputModel::gpus() const {
  std::vector<std::string> out;
  for (const auto& [key, curve] : curves_) out.push_back(curve.gpu);
  return out;
}

const TableThroughputModel::Curve& TableThroughputModel::curve(const std::string& gpu) const {
  const auto it = curves_.find(lowercase(gpu));
  if (it == curves_.end()) {
    throw InputError("the speed table (" + source_ + ") has no GPU \"" + gpu +
                     "\"; accepted: " + join(gpus()));
  }
  return it->second;
}

double TableThroughputModel::steps_per_s(const std::string& gpu, double workers) const {
  const Curve& c = curve(gpu);
  if (workers <= 0.0) return 0.0;
  const auto& p = c.points;
  if (workers <= p.front().first) return p.front().second * workers / p.front().first;
  if (workers >= p.back().first) return p.back().second * workers / p.back().first;
  for (std::size_t i = 1; i < p.size(); ++i) {
    if (workers <= p[i].first) {
      const double f = (workers - p[i - 1].first) / (p[i].first - p[i - 1].first);
      return p[i - 1].second + f * (p[i].second - p[i - 1].second);
    }
  }
  return p.back().second;
}

Prediction TableThroughputModel::predict(const ClusterShape& cluster) const {
  const int total = cluster.total_workers();
  Prediction prediction;
  if (total == 0) return prediction;
  if (cluster.architecture == Architecture::async_ps) {
    for (const auto& group : cluster.workers) {
      if (group.count == 0) continue;
      prediction.steps_per_s += group.count * steps_per_s(group.type.gpu, total) / total;
    }
    return prediction;
  }
  double slowest = std::numeric_limits<double>::infinity();
  int kinds = 0;
  for (const auto& group : cluster.workers) {
    if (group.count == 0) continue;
    ++kinds;
    const double per_worker = steps_per_s(group.type.gpu, total) / total;
    if (per_worker < slowest) {
      slowest = per_worker;
      prediction.bottleneck = "slowest worker (" + group.type.gpu + ")";
    }
  }
  if (kinds < 2) prediction.bottleneck.clear();
  prediction.steps_per_s = total * slowest;
  return prediction;
}

}  // namespace transient::perf
