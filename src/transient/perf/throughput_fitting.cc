#include "transient/perf/throughput_fitting.h"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <utility>

#include "transient/core/error.h"
#include "transient/core/structured_input.h"
#include "transient/perf/checkpoint_time_model.h"
#include "transient/perf/internal/cluster_composition.h"
#include "transient/perf/restart_time_model.h"

namespace transient::perf {
namespace {

// The fewest workloads the analytic model's stage 1 is fitted on (fit_analytic_single).
constexpr std::size_t kAnalyticMinWorkloads = 5;

cloud::InstanceType worker_type(const SpeedMeasurement& m, const ThroughputFitOptions& options) {
  cloud::InstanceType type;
  type.name = m.gpu + " worker";
  type.gpu = m.gpu;
  type.gpus = 1;
  type.gpu_tflops = m.gpu_tflops;
  type.network_gbps = options.worker_network_gbps;
  return type;
}

std::vector<SpeedMeasurement> without(const std::vector<SpeedMeasurement>& all,
                                      const std::string& workload) {
  std::vector<SpeedMeasurement> out;
  for (const auto& m : all) {
    if (m.workload != workload) out.push_back(m);
  }
  return out;
}

std::vector<SpeedMeasurement> without_gpu(const std::vector<SpeedMeasurement>& all,
                                          const std::string& gpu) {
  std::vector<SpeedMeasurement> out;
  for (const auto& m : all) {
    if (m.gpu != gpu) out.push_back(m);
  }
  return out;
}

std::vector<std::string> gpus_of(const std::vector<SpeedMeasurement>& all) {
  std::vector<std::string> out;
  for (const auto& m : all) {
    if (std::find(out.begin(), out.end(), m.gpu) == out.end()) out.push_back(m.gpu);
  }
  return out;
}

std::vector<std::string> workloads_of(const std::vector<SpeedMeasurement>& all) {
  std::vector<std::string> out;
  for (const auto& m : all) {
    if (std::find(out.begin(), out.end(), m.workload) == out.end()) out.push_back(m.workload);
  }
  return out;
}

// Least squares with coefficients >= 0 where `nonneg` says so: solve, drop the most negative
// constrained coefficient (fix it at 0), repeat. Enough for a handful of columns.
Eigen::VectorXd nonneg_least_squares(const Eigen::MatrixXd& a, const Eigen::VectorXd& b,
                                     const std::vector<bool>& nonneg) {
  const int k = static_cast<int>(a.cols());
  std::vector<bool> active(k, true);
  Eigen::VectorXd out = Eigen::VectorXd::Zero(k);
  for (int round = 0; round <= k; ++round) {
    std::vector<int> columns;
    for (int j = 0; j < k; ++j) {
      if (active[j]) columns.push_back(j);
    }
    if (columns.empty()) break;
    Eigen::MatrixXd sub(a.rows(), columns.size());
    for (std::size_t j = 0; j < columns.size(); ++j) sub.col(j) = a.col(columns[j]);
    const Eigen::VectorXd x = sub.colPivHouseholderQr().solve(b);
    int worst = -1;
    double worst_value = 0;
    for (std::size_t j = 0; j < columns.size(); ++j) {
      if (nonneg[columns[j]] && x[j] < worst_value) {
        worst = columns[j];
        worst_value = x[j];
      }
    }
    if (worst < 0) {
      out.setZero();
      for (std::size_t j = 0; j < columns.size(); ++j) out[columns[j]] = x[j];
      return out;
    }
    active[worst] = false;
  }
  return out;
}

// Stage 1 of the analytic model on single-worker speeds.
AnalyticParams fit_analytic_single(const std::vector<SpeedMeasurement>& points,
                                   const ThroughputFitOptions& options) {
  if (workloads_of(points).size() < kAnalyticMinWorkloads) {
    throw InputError("the analytic model needs single-worker speeds of at least " +
                     std::to_string(kAnalyticMinWorkloads) + " workloads; the data has " +
                     std::to_string(workloads_of(points).size()));
  }
  const int rows = static_cast<int>(points.size());
  // Columns: one compute column per (family, GPU) measured, one tensor column per GPU, then
  // overhead and bytes. Per-tensor costs at the worker (kernel launches) and in its RPCs to the
  // servers cannot be told apart in these data; they are all counted as compute.
  std::vector<std::string> compute_keys, gpus;
  for (const auto& m : points) {
    const std::string key = find_workload(m.workload).family + "@" + m.gpu;
    if (std::find(compute_keys.begin(), compute_keys.end(), key) == compute_keys.end()) {
      compute_keys.push_back(key);
    }
    if (std::find(gpus.begin(), gpus.end(), m.gpu) == gpus.end()) gpus.push_back(m.gpu);
  }
  const int c = static_cast<int>(compute_keys.size());
  const int g = static_cast<int>(gpus.size());
  Eigen::MatrixXd a = Eigen::MatrixXd::Zero(rows, c + g + 2);
  Eigen::VectorXd b(rows);
  for (int i = 0; i < rows; ++i) {
    const auto& m = points[i];
    const Workload& w = find_workload(m.workload);
    const double step = 1.0 / m.steps_per_s;
    const std::string key = w.family + "@" + m.gpu;
    const int column = static_cast<int>(std::find(compute_keys.begin(), compute_keys.end(), key) -
                                        compute_keys.begin());
    const double link = options.worker_network_gbps * 1e9 / 8.0;
    a(i, column) = w.flops_per_step() / (m.gpu_tflops * 1e12);
    const int gpu_column =
        static_cast<int>(std::find(gpus.begin(), gpus.end(), m.gpu) - gpus.begin());
    a(i, c + gpu_column) = w.tensors;
    a(i, c + g) = 1.0;
    a(i, c + g + 1) = 2.0 * w.gradient_bytes / link;
    // Rows are divided by the measured step: least squares on relative error.
    a.row(i) /= step;
    b[i] = 1.0;
  }
  const Eigen::VectorXd x = nonneg_least_squares(a, b, std::vector<bool>(c + g + 2, true));
  AnalyticParams p;
  const double tiny = 1e-9;
  // Per family: the geometric mean of its GPUs' efficiencies; generic: of all.
  std::map<std::string, std::pair<double, int>> log_sums;
  for (int j = 0; j < c; ++j) {
    const double efficiency = 1.0 / std::max(x[j], tiny);
    p.efficiency[compute_keys[j]] = efficiency;
    const std::string family = compute_keys[j].substr(0, compute_keys[j].find('@'));
    for (const std::string& group : {family, std::string("generic")}) {
      log_sums[group].first += std::log(efficiency);
      log_sums[group].second += 1;
    }
  }
  for (const auto& [group, sum] : log_sums) {
    p.efficiency[group] = std::exp(sum.first / sum.second);
  }
  double log_tensor_sum = 0;
  int positive = 0;
  for (int j = 0; j < g; ++j) {
    p.per_tensor_s[gpus[j]] = x[c + j];
    if (x[c + j] > 0) {
      log_tensor_sum += std::log(x[c + j]);
      ++positive;
    }
  }
  p.per_tensor_s["generic"] = positive > 0 ? std::exp(log_tensor_sum / positive) : 0.0;
  for (const auto& m : points) p.fitted_gpu_tflops[m.gpu] = m.gpu_tflops;
  p.step_overhead_s = x[c + g];
  p.communication.worker_per_tensor_s = 0.0;
  p.communication.network_efficiency = x[c + g + 1] > 1e-3 ? 1.0 / x[c + g + 1] : 1e3;
  return p;
}

using ClusterPredictor = std::function<double(const SpeedMeasurement&, const CommunicationParams&)>;

// The parameter servers' constants that stage 2 searches; the rest of CommunicationParams stays
// as stage 1 left it.
struct ServerConstants {
  double ps_per_tensor_s = 0;
  double ps_network_gbps = 0;
  double contention_sharpness = 0;

  CommunicationParams applied_to(CommunicationParams comm) const {
    comm.ps_per_tensor_s = ps_per_tensor_s;
    comm.ps_network_gbps = ps_network_gbps;
    comm.contention_sharpness = contention_sharpness;
    return comm;
  }
};

// The percentage error over measured clusters of `Model` built with `params` whose servers'
// constants are replaced: what stage 2's grid search minimises, some 12,500 times per fit. What
// no server constant changes is worked out once: each async-ps cluster's speed without the
// servers' contention (internal::async_ps_load, from the model's worker times), and the error of
// an all-reduce cluster, which has no servers. An evaluation is then the servers' cap and the
// smooth minimum per cluster, as the model's predict() composes them.
template <typename Model, typename Params>
class ClusterError {
 public:
  ClusterError(const std::vector<SpeedMeasurement>& points, const Params& params,
               const ThroughputFitOptions& options)
      : communication_(params.communication) {
    std::vector<std::pair<const Workload*, std::unique_ptr<Model>>> models;
    for (const auto& m : points) {
      const Workload* workload = &find_workload(m.workload);
      auto it = std::find_if(models.begin(), models.end(),
                             [&](const auto& built) { return built.first == workload; });
      if (it == models.end()) {
        models.emplace_back(workload, std::make_unique<Model>(*workload, params));
        it = models.end() - 1;
      }
      ClusterShape shape;
      shape.workers.push_back({worker_type(m, options), m.workers});
      shape.parameter_servers = m.parameter_servers;
      Point point;
      point.workload = workload;
      point.measured = m.steps_per_s;
      point.servers = std::max(1, shape.parameter_servers);
      if (shape.architecture == Architecture::async_ps) {
        point.uncontended_steps_per_s =
            internal::async_ps_load(shape, *workload, it->second->worker_times(shape),
                                    communication_)
                .uncontended_steps_per_s;
      } else {
        point.fixed_error =
            std::abs(it->second->predict(shape).steps_per_s - point.measured) / point.measured;
      }
      points_.push_back(point);
    }
  }

  double operator()(const ServerConstants& constants) const {
    const CommunicationParams comm = constants.applied_to(communication_);
    double sum = 0;
    for (const Point& point : points_) {
      if (point.fixed_error) {
        sum += *point.fixed_error;
        continue;
      }
      const double cap = 1.0 / internal::server_step_s(*point.workload, point.servers, comm);
      const double predicted = internal::contended_steps_per_s(point.uncontended_steps_per_s, cap,
                                                               comm.contention_sharpness);
      sum += std::abs(predicted - point.measured) / point.measured;
    }
    return 100.0 * sum / static_cast<double>(points_.size());
  }

 private:
  struct Point {
    const Workload* workload = nullptr;
    double measured = 0;
    int servers = 1;
    double uncontended_steps_per_s = 0;  // async-ps
    std::optional<double> fixed_error;   // all-reduce: no server constant changes it
  };
  CommunicationParams communication_;
  std::vector<Point> points_;
};

// Stage 2: the parameter-server constants by grid search (coarse, then refined around the best).
// The server's link is searched up to `max_server_gbps`, the nominal rate of the measured
// servers' network: a fit on clusters that never reach the server's limit (CM-DARE's K80s) does
// not identify it, and would otherwise place it anywhere above what they reached.
template <typename Model, typename Params>
CommunicationParams fit_servers(const std::vector<SpeedMeasurement>& points, const Params& params,
                                const ThroughputFitOptions& options) {
  const CommunicationParams& comm = params.communication;
  if (points.empty()) return comm;
  const ClusterError<Model, Params> cluster_error(points, params, options);
  const double max_server_gbps = options.server_network_gbps;
  const std::vector<double> sharpness = {1.5, 2, 3, 4, 6, 8, 12, 16, 24, 32};
  double best = std::numeric_limits<double>::infinity();
  ServerConstants best_servers{comm.ps_per_tensor_s, comm.ps_network_gbps,
                               comm.contention_sharpness};
  auto search = [&](double tensor_lo, double tensor_hi, double gbps_lo, double gbps_hi) {
    const int steps = 24;
    for (int i = 0; i <= steps; ++i) {
      for (int j = 0; j <= steps; ++j) {
        ServerConstants c;
        c.ps_per_tensor_s = i == 0 && tensor_lo <= 1e-9
                                ? 0.0
                                : tensor_lo * std::pow(tensor_hi / tensor_lo, i / double(steps));
        c.ps_network_gbps =
            std::min(gbps_lo * std::pow(gbps_hi / gbps_lo, j / double(steps)), max_server_gbps);
        for (double p : sharpness) {
          c.contention_sharpness = p;
          const double error = cluster_error(c);
          if (error < best) {
            best = error;
            best_servers = c;
          }
        }
      }
    }
  };
  search(1e-7, 1e-3, 0.5, 100);
  const double t = std::max(best_servers.ps_per_tensor_s, 1e-7);
  const double g = best_servers.ps_network_gbps;
  search(t / 3, t * 3, g / 2, g * 2);
  return best_servers.applied_to(comm);
}

ClusterPredictor analytic_predictor(const AnalyticParams& params,
                                    const ThroughputFitOptions& options) {
  return [params, options](const SpeedMeasurement& m, const CommunicationParams& comm) {
    AnalyticParams p = params;
    p.communication = comm;
    const AnalyticThroughputModel model(find_workload(m.workload), p);
    ClusterShape shape;
    shape.workers.push_back({worker_type(m, options), m.workers});
    shape.parameter_servers = m.parameter_servers;
    return model.predict(shape).steps_per_s;
  };
}

ClusterPredictor fitted_predictor(const FittedParams& params, const ThroughputFitOptions& options) {
  return [params, options](const SpeedMeasurement& m, const CommunicationParams& comm) {
    FittedParams p = params;
    p.communication = comm;
    const FittedThroughputModel model(find_workload(m.workload), p);
    ClusterShape shape;
    shape.workers.push_back({worker_type(m, options), m.workers});
    shape.parameter_servers = m.parameter_servers;
    return model.predict(shape).steps_per_s;
  };
}

// The regression of one candidate on single-worker speeds.
FittedParams fit_regression(const std::vector<SpeedMeasurement>& points,
                            const FittedCandidate& candidate, const ThroughputFitOptions& options) {
  const int rows = static_cast<int>(points.size());
  const int k = static_cast<int>(candidate.features.size());
  if (rows < k + 2) {
    throw InputError("the fitted model needs more single-worker measurements than " +
                     std::to_string(k + 1) + "; the data has " + std::to_string(rows));
  }
  const bool log_form = candidate.form == "log-linear";
  Eigen::MatrixXd x(rows, k);
  Eigen::VectorXd y(rows), weight(rows);
  for (int i = 0; i < rows; ++i) {
    const auto& m = points[i];
    const Workload& w = find_workload(m.workload);
    const auto type = worker_type(m, options);
    for (int j = 0; j < k; ++j) {
      double value = fitted_feature(candidate.features[j], w, type);
      if (log_form && !is_indicator_feature(candidate.features[j])) value = std::log(value);
      x(i, j) = value;
    }
    const double step = 1.0 / m.steps_per_s;
    y[i] = log_form ? std::log(step) : step;
    weight[i] = log_form ? 1.0 : 1.0 / step;  // relative error for the linear form
  }
  // Standardise, solve the (ridge) normal equations with an unpenalised intercept, undo.
  Eigen::VectorXd mean = x.colwise().mean();
  Eigen::VectorXd scale(k);
  for (int j = 0; j < k; ++j) {
    const double sd = std::sqrt((x.col(j).array() - mean[j]).square().mean());
    scale[j] = sd > 0 ? sd : 1.0;
  }
  Eigen::MatrixXd z(rows, k + 1);
  z.col(0).setOnes();
  for (int j = 0; j < k; ++j) z.col(j + 1) = (x.col(j).array() - mean[j]) / scale[j];
  const Eigen::MatrixXd zw = weight.asDiagonal() * z;
  const Eigen::VectorXd yw = weight.asDiagonal() * y;
  Eigen::MatrixXd normal = zw.transpose() * zw;
  for (int j = 1; j <= k; ++j) normal(j, j) += candidate.ridge_lambda * rows;
  const Eigen::VectorXd beta = normal.ldlt().solve(zw.transpose() * yw);

  FittedParams p;
  p.form = candidate.form;
  p.features = candidate.features;
  p.ridge_lambda = candidate.ridge_lambda;
  p.coefficients.assign(k + 1, 0.0);
  p.coefficients[0] = beta[0];
  for (int j = 0; j < k; ++j) {
    p.coefficients[j + 1] = beta[j + 1] / scale[j];
    p.coefficients[0] -= beta[j + 1] * mean[j] / scale[j];
  }
  return p;
}

double ape(double predicted, double measured) {
  return 100.0 * std::abs(predicted - measured) / measured;
}

std::string fixed(double value, int digits) {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(digits);
  out << value;
  return out.str();
}

double mean_of(const std::vector<double>& values) {
  double sum = 0;
  for (double v : values) sum += v;
  return values.empty() ? 0.0 : sum / static_cast<double>(values.size());
}

std::vector<double> all_errors(const std::vector<WorkloadError>& errors) {
  std::vector<double> out;
  for (const auto& e : errors) out.insert(out.end(), e.ape_percent.begin(), e.ape_percent.end());
  return out;
}

// The mean error of a report, null where nothing was measured (no cluster speeds): 0% would read
// as a perfect model.
nlohmann::json mean_or_null(const std::vector<double>& values) {
  return values.empty() ? nlohmann::json(nullptr) : nlohmann::json(mean_of(values));
}

// The same in a table cell: "-" where nothing was measured.
std::string mean_cell(const std::vector<double>& values) {
  return values.empty() ? std::string("-") : fixed(mean_of(values), 1);
}

double single_worker_cv_mape(const std::vector<SpeedMeasurement>& points,
                             const FittedCandidate& candidate,
                             const ThroughputFitOptions& options) {
  std::vector<double> errors;
  for (const auto& held_out : workloads_of(points)) {
    const FittedParams p = fit_regression(without(points, held_out), candidate, options);
    for (const auto& m : points) {
      if (m.workload != held_out) continue;
      errors.push_back(
          ape(1.0 / p.single_step_s(find_workload(m.workload), worker_type(m, options)),
              m.steps_per_s));
    }
  }
  return mean_of(errors);
}

// Whether every feature of `candidate` varies over `points`: a constant one (the GPU's TFLOPS
// when the points hold one GPU) is collinear with the intercept and cannot be fitted.
bool identifiable(const FittedCandidate& candidate, const std::vector<SpeedMeasurement>& points,
                  const ThroughputFitOptions& options) {
  for (const auto& feature : candidate.features) {
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (const auto& m : points) {
      const double value =
          fitted_feature(feature, find_workload(m.workload), worker_type(m, options));
      lo = std::min(lo, value);
      hi = std::max(hi, value);
    }
    if (!(hi - lo > 1e-12 * std::max(std::abs(hi), std::abs(lo)))) return false;
  }
  return true;
}

// Whether the regression of `candidate` can be fitted on `points` (fit_regression: two rows more
// than its features) and on every fold that leaves one model of them out.
bool fits(const FittedCandidate& candidate, const std::vector<SpeedMeasurement>& points) {
  return points.size() >= candidate.features.size() + 2;
}
bool fits_every_fold(const FittedCandidate& candidate,
                     const std::vector<SpeedMeasurement>& points) {
  for (const auto& held_out : workloads_of(points)) {
    if (!fits(candidate, without(points, held_out))) return false;
  }
  return true;
}

// A model's cluster predictions with the server constants they were fitted with.
struct FoldPredictor {
  ClusterPredictor predict;
  CommunicationParams communication;
};

// The errors of both models on `workload`'s clusters of `gpu`, if it has any, into `cv`.
void add_cluster_errors(const std::vector<SpeedMeasurement>& cluster, const std::string& workload,
                        const std::string& gpu, const FoldPredictor& analytic,
                        const FoldPredictor& fitted, CrossValidation& cv) {
  WorkloadError a{workload, gpu, {}, {}, {}}, f{workload, gpu, {}, {}, {}};
  for (const auto& m : cluster) {
    if (m.workload != workload || m.gpu != gpu) continue;
    a.add(analytic.predict(m, analytic.communication), m.steps_per_s);
    f.add(fitted.predict(m, fitted.communication), m.steps_per_s);
  }
  if (!a.ape_percent.empty()) {
    cv.analytic_cluster.push_back(a);
    cv.fitted_cluster.push_back(f);
  }
}

}  // namespace

FittedCandidate choose_candidate(const std::vector<SpeedMeasurement>& points,
                                 const ThroughputFitOptions& options) {
  double best = std::numeric_limits<double>::infinity();
  std::optional<FittedCandidate> chosen;
  for (const auto& candidate : fitted_candidates()) {
    // A form with more features than a fold has rows to fit is not cross-validated (a fold of a
    // nested cross-validation holds two models fewer than the data).
    if (!identifiable(candidate, points, options) || !fits_every_fold(candidate, points)) continue;
    const double error = single_worker_cv_mape(points, candidate, options);
    if (error < best * (1 - 1e-9)) {  // a tie (to rounding) keeps the first listed
      best = error;
      chosen = candidate;
    }
  }
  if (chosen) return *chosen;
  // Too few models to cross-validate any form: the first listed that the points fit, unchosen by
  // error (the cross-validation around a nested one still measures it); else the first, whose
  // fit says what is missing.
  for (const auto& candidate : fitted_candidates()) {
    if (identifiable(candidate, points, options) && fits(candidate, points)) return candidate;
  }
  return fitted_candidates().front();
}

std::string FittedCandidate::label() const {
  std::string out = form + "(";
  for (std::size_t i = 0; i < features.size(); ++i) out += (i ? "," : "") + features[i];
  out += ")";
  if (ridge_lambda > 0) out += " ridge " + fixed(ridge_lambda, 2);
  return out;
}

const std::vector<FittedCandidate>& fitted_candidates() {
  // Forms that differ only in which GPU figure divides a feature fit one GPU's data alike; on such
  // a tie (leaving a GPU out) the first listed wins: memory bandwidth, as the analytic model
  // carries its constants across GPUs (gpu_memory.h says why).
  static const std::vector<FittedCandidate> all = {
      {"linear",
       {"flops_per_memory", "shake_flops_per_memory", "tensors_per_memory", "gradient_bytes"},
       0.0},
      {"linear", {"flops_per_memory", "tensors_per_memory", "gradient_bytes"}, 0.0},
      {"linear", {"flops_per_tflops", "tensors", "gradient_bytes"}, 0.0},
      {"linear", {"flops_per_tflops", "shake_flops_per_tflops", "tensors", "gradient_bytes"}, 0.0},
      {"log-linear", {"flops", "tflops", "parameters", "tensors"}, 0.0},
      {"log-linear", {"flops", "tflops", "parameters", "tensors", "shake_shake"}, 0.0},
      {"log-linear", {"flops", "tflops", "parameters", "tensors", "shake_shake"}, 0.01},
      {"log-linear", {"flops", "tflops", "parameters", "tensors", "shake_shake"}, 0.1},
      {"log-linear", {"flops", "tflops", "tensors", "shake_shake"}, 0.0},
      {"log-linear", {"flops_per_tflops", "tensors", "shake_shake"}, 0.0},
      {"linear",
       {"flops_per_tflops", "shake_flops_per_tflops", "tensors_per_tflops", "gradient_bytes"},
       0.0},
      {"linear",
       {"flops_per_tflops", "shake_flops_per_tflops", "tensors_per_tflops", "tensors",
        "gradient_bytes"},
       0.0},
      {"log-linear", {"flops_per_tflops", "tensors_per_tflops", "parameters", "shake_shake"}, 0.0},
      {"log-linear", {"flops", "tflops", "tensors_per_tflops", "parameters", "shake_shake"}, 0.0},
  };
  return all;
}

double WorkloadError::mape() const { return mean_of(ape_percent); }

void WorkloadError::add(double predicted, double measured) {
  ape_percent.push_back(ape(predicted, measured));
  predicted_steps_per_s.push_back(predicted);
  measured_steps_per_s.push_back(measured);
}

double mape_percent(const std::vector<WorkloadError>& errors) {
  return mean_of(all_errors(errors));
}

double mape_percent(const std::vector<WorkloadError>& errors, const std::string& gpu) {
  std::vector<double> values;
  for (const auto& e : errors) {
    if (e.gpu == gpu) values.insert(values.end(), e.ape_percent.begin(), e.ape_percent.end());
  }
  return mean_of(values);
}

AnalyticParams fit_analytic(const MeasurementSet& data, const ThroughputFitOptions& options) {
  AnalyticParams p = fit_analytic_single(data.single_worker, options);
  p.communication = fit_servers<AnalyticThroughputModel>(data.cluster, p, options);
  p.source = "fitted on " + std::to_string(data.single_worker.size()) + " single-worker and " +
             std::to_string(data.cluster.size()) + " cluster speeds";
  return p;
}

FittedParams fit_fitted(const MeasurementSet& data, const FittedCandidate& candidate,
                        const ThroughputFitOptions& options) {
  FittedParams p = fit_regression(data.single_worker, candidate, options);
  // The worker-side transfer split and the ring's constants come from the analytic stage 1.
  p.communication = fit_analytic_single(data.single_worker, options).communication;
  p.communication = fit_servers<FittedThroughputModel>(data.cluster, p, options);
  p.source = "fitted on " + std::to_string(data.single_worker.size()) + " single-worker and " +
             std::to_string(data.cluster.size()) + " cluster speeds";
  return p;
}

CrossValidation cross_validate(const MeasurementSet& data, const ThroughputFitOptions& options) {
  CrossValidation cv;
  const auto single_workloads = workloads_of(data.single_worker);
  // Each fold holds one model fewer, and the analytic model is fitted on 5 at least.
  if (single_workloads.size() < kAnalyticMinWorkloads + 1) {
    throw InputError(
        "leave-one-model-out cross-validation needs single-worker speeds of at least " +
        std::to_string(kAnalyticMinWorkloads + 1) + " workloads (the analytic model's " +
        std::to_string(kAnalyticMinWorkloads) + " in each fold); the data has " +
        std::to_string(single_workloads.size()));
  }
  // Every candidate of the fitted model, by leave-one-model-out; the best is the model's form.
  double best = std::numeric_limits<double>::infinity();
  for (const auto& candidate : fitted_candidates()) {
    if (!identifiable(candidate, data.single_worker, options) ||
        !fits_every_fold(candidate, data.single_worker)) {
      continue;
    }
    const double error = single_worker_cv_mape(data.single_worker, candidate, options);
    cv.candidate_mape.emplace_back(candidate.label(), error);
    if (error < best * (1 - 1e-9)) {
      best = error;
      cv.chosen = candidate;
    }
  }
  if (cv.candidate_mape.empty()) cv.chosen = choose_candidate(data.single_worker, options);
  // The fitted model's own error is cross-validated with the choice inside each fold (nested),
  // so that choosing among candidates does not flatter it.
  for (const auto& held_out : single_workloads) {
    const auto train = without(data.single_worker, held_out);
    const FittedParams p = fit_regression(train, choose_candidate(train, options), options);
    for (const auto& m : data.single_worker) {
      if (m.workload != held_out) continue;
      WorkloadError e{held_out, m.gpu, {}, {}, {}};
      e.add(1.0 / p.single_step_s(find_workload(m.workload), worker_type(m, options)),
            m.steps_per_s);
      cv.fitted_single.push_back(e);
    }
    cv.fitted_folds.emplace(held_out, p);
  }
  for (const auto& held_out : single_workloads) {
    const AnalyticParams p = fit_analytic_single(without(data.single_worker, held_out), options);
    const AnalyticThroughputModel model(find_workload(held_out), p);
    for (const auto& m : data.single_worker) {
      if (m.workload != held_out) continue;
      ClusterShape shape;
      shape.workers.push_back({worker_type(m, options), 1});
      WorkloadError e{held_out, m.gpu, {}, {}, {}};
      // One worker and one server, as measured: the prediction with the default server
      // constants differs from the uncontended step by well under 0.1%.
      const double step = model.compute_s(shape.workers[0].type) +
                          internal::worker_transfer_s(model.workload(), options.worker_network_gbps,
                                                      p.communication);
      e.add(1.0 / step, m.steps_per_s);
      cv.analytic_single.push_back(e);
    }
    cv.analytic_folds.emplace(held_out, p);
  }
  // Cluster scaling: hold out one workload's whole curves (both stages refitted without it).
  for (const auto& held_out : workloads_of(data.cluster)) {
    MeasurementSet train;
    train.single_worker = without(data.single_worker, held_out);
    train.cluster = without(data.cluster, held_out);
    const AnalyticParams analytic = fit_analytic(train, options);
    const FittedParams fitted =
        fit_fitted(train, choose_candidate(train.single_worker, options), options);
    const auto predict_analytic = analytic_predictor(analytic, options);
    const auto predict_fitted = fitted_predictor(fitted, options);
    for (const std::string gpu : {"K80", "P100"}) {
      add_cluster_errors(data.cluster, held_out, gpu, {predict_analytic, analytic.communication},
                         {predict_fitted, fitted.communication}, cv);
    }
  }
  return cv;
}

CrossValidation cross_validate_gpus(const MeasurementSet& data,
                                    const ThroughputFitOptions& options) {
  const auto gpus = gpus_of(data.single_worker);
  if (gpus.size() < 2) {
    throw InputError(
        "leaving one GPU out needs single-worker speeds of at least 2 GPU models; the data has " +
        std::to_string(gpus.size()));
  }
  CrossValidation cv;
  cv.held_out = HeldOut::gpu;
  for (const auto& held_out : gpus) {
    MeasurementSet train;
    train.single_worker = without_gpu(data.single_worker, held_out);
    train.cluster = without_gpu(data.cluster, held_out);
    // Stage 1 alone predicts one worker, as in cross_validate(); both stages predict clusters.
    const AnalyticParams single = fit_analytic_single(train.single_worker, options);
    const FittedCandidate form = choose_candidate(train.single_worker, options);
    const FittedParams regression = fit_regression(train.single_worker, form, options);
    for (const auto& m : data.single_worker) {
      if (m.gpu != held_out) continue;
      const Workload& w = find_workload(m.workload);
      const cloud::InstanceType type = worker_type(m, options);
      const AnalyticThroughputModel model(w, single);
      WorkloadError a{m.workload, m.gpu, {}, {}, {}}, f{m.workload, m.gpu, {}, {}, {}};
      a.add(
          1.0 / (model.compute_s(type) +
                 internal::worker_transfer_s(w, options.worker_network_gbps, single.communication)),
          m.steps_per_s);
      f.add(1.0 / regression.single_step_s(w, type), m.steps_per_s);
      cv.analytic_single.push_back(a);
      cv.fitted_single.push_back(f);
    }
    cv.analytic_folds.emplace(held_out, single);
    cv.fitted_folds.emplace(held_out, regression);
    bool any_cluster = false;
    for (const auto& m : data.cluster) any_cluster = any_cluster || m.gpu == held_out;
    if (!any_cluster) continue;
    const AnalyticParams analytic = fit_analytic(train, options);
    const FittedParams fitted = fit_fitted(train, form, options);
    const auto predict_analytic = analytic_predictor(analytic, options);
    const auto predict_fitted = fitted_predictor(fitted, options);
    for (const auto& workload : workloads_of(data.cluster)) {
      add_cluster_errors(data.cluster, workload, held_out,
                         {predict_analytic, analytic.communication},
                         {predict_fitted, fitted.communication}, cv);
    }
  }
  return cv;
}

nlohmann::json PerfModelFile::to_json() const {
  return {{"format", "transient-perf-model"}, {"version", 1},
          {"analytic", analytic.to_json()},   {"fitted", fitted.to_json()},
          {"overheads", overheads},           {"report", report}};
}

PerfModelFile PerfModelFile::load(const std::string& path) {
  const nlohmann::json json = load_json_file(path);
  if (!json.is_object() || json_text(json, "format", "", path) != "transient-perf-model") {
    throw InputError(path, 1,
                     "not a model file of `transient fit` (needs \"format\": "
                     "\"transient-perf-model\")");
  }
  PerfModelFile file;
  file.analytic = json.contains("analytic") ? AnalyticParams::from_json(json.at("analytic"), path)
                                            : AnalyticParams::builtin();
  file.fitted = json.contains("fitted") ? FittedParams::from_json(json.at("fitted"), path)
                                        : FittedParams::builtin();
  file.report = json.contains("report") ? json.at("report") : nlohmann::json::object();
  return file;
}

PerfModelFile fit_perf_model(const MeasurementSet& data, const ThroughputFitOptions& options,
                             const CrossValidation& cv) {
  PerfModelFile file;
  file.analytic = fit_analytic(data, options);
  file.fitted = fit_fitted(data, cv.chosen, options);
  file.fitted.cv_mape_percent = mean_of(all_errors(cv.fitted_single));
  file.overheads = nlohmann::json::object();
  if (!data.checkpoints.empty()) {
    using Storage = CheckpointTimeModel::Storage;
    file.overheads["checkpoint_remote_bucket"] =
        CheckpointTimeModel::fit(data.checkpoints, Storage::remote_bucket).to_json();
    file.overheads["checkpoint_local_disk"] =
        CheckpointTimeModel::fit(data.checkpoints, Storage::local_disk).to_json();
  }
  if (!data.restarts.empty()) {
    file.overheads["restart_cold"] = RestartTimeModel::fit(data.restarts, false).to_json();
    file.overheads["restart_warm"] = RestartTimeModel::fit(data.restarts, true).to_json();
  }
  nlohmann::json candidates = nlohmann::json::array();
  for (const auto& [label, error] : cv.candidate_mape) {
    candidates.push_back({{"candidate", label}, {"single_worker_mape_percent", error}});
  }
  file.report = {
      {"files_used", data.used},
      {"files_not_used", data.not_used},
      {"fitted_candidates", candidates},
      {"chosen", cv.chosen.label()},
      {"mape_percent",
       {{"analytic_single_worker", mean_or_null(all_errors(cv.analytic_single))},
        {"fitted_single_worker", mean_or_null(all_errors(cv.fitted_single))},
        {"analytic_cluster", mean_or_null(all_errors(cv.analytic_cluster))},
        {"fitted_cluster", mean_or_null(all_errors(cv.fitted_cluster))}}},
  };
  return file;
}

std::string accuracy_tables(const MeasurementSet& data, const CrossValidation& cv) {
  std::ostringstream out;
  // CM-DARE's own errors, recomputed from its measured and predicted step times (its file's
  // "Error Mean" column has the K80 and P100 rows of shake16 swapped).
  std::map<std::pair<std::string, std::string>, double> published;
  for (const auto& p : data.published) {
    // As speeds, like ours: the error of 1/predicted step against 1/measured step.
    published[{p.workload, p.gpu}] = ape(1.0 / p.predicted_step_s, 1.0 / p.measured_step_s);
  }
  auto cell = [](const WorkloadError* e) { return e ? fixed(e->mape(), 1) : std::string("-"); };
  auto find = [](const std::vector<WorkloadError>& errors, const std::string& workload,
                 const std::string& gpu) -> const WorkloadError* {
    for (const auto& e : errors) {
      if (e.workload == workload && e.gpu == gpu) return &e;
    }
    return nullptr;
  };

  out << "Single worker (one parameter server), leave-one-model-out, MAPE of steps/s in %:\n\n";
  out << "| workload | K80 analytic | K80 fitted | K80 CM-DARE | P100 analytic | P100 fitted | "
         "P100 CM-DARE |\n";
  out << "|---|---:|---:|---:|---:|---:|---:|\n";
  std::vector<double> published_all;
  for (const auto& w : builtin_workloads()) {
    if (!find(cv.analytic_single, w.name, "K80") && !find(cv.analytic_single, w.name, "P100")) {
      continue;
    }
    out << "| " << w.name;
    for (const std::string gpu : {"K80", "P100"}) {
      out << " | " << cell(find(cv.analytic_single, w.name, gpu)) << " | "
          << cell(find(cv.fitted_single, w.name, gpu)) << " | ";
      const auto p = published.find({w.name, gpu});
      out << (p == published.end() ? std::string("-") : fixed(p->second, 1));
    }
    out << " |\n";
  }
  auto gpu_mape = [](const std::vector<WorkloadError>& errors, const std::string& gpu) {
    std::vector<double> values;
    for (const auto& e : errors) {
      if (e.gpu == gpu) values.insert(values.end(), e.ape_percent.begin(), e.ape_percent.end());
    }
    return mean_cell(values);
  };
  out << "| **all**";
  for (const std::string gpu : {"K80", "P100"}) {
    std::vector<double> cmdare;
    for (const auto& [key, error] : published) {
      if (key.second == gpu) cmdare.push_back(error);
    }
    out << " | **" << gpu_mape(cv.analytic_single, gpu) << "** | **"
        << gpu_mape(cv.fitted_single, gpu) << "** | **" << mean_cell(cmdare) << "**";
  }
  out << " |\n\n";
  for (const auto& [key, error] : published) published_all.push_back(error);
  out << "Both GPUs: analytic " << fixed(mean_of(all_errors(cv.analytic_single)), 1) << "%, fitted "
      << fixed(mean_of(all_errors(cv.fitted_single)), 1) << "% ("
      << all_errors(cv.analytic_single).size() << " predictions); CM-DARE's published "
      << (published_all.empty() ? std::string("-") : mean_cell(published_all) + "%") << " ("
      << published_all.size() << " predictions).\n\n";

  out << "Fitted-model candidates (single worker, leave-one-model-out MAPE %):\n\n";
  out << "| candidate | MAPE |\n|---|---:|\n";
  for (const auto& [label, error] : cv.candidate_mape) {
    out << "| " << label << (label == cv.chosen.label() ? " (chosen)" : "") << " | "
        << fixed(error, 1) << " |\n";
  }
  out << "\nCluster scaling (1-8 workers, one parameter server), leave-one-model-out, MAPE of "
         "cluster steps/s in %:\n\n";
  out << "| workload | GPU | analytic | fitted |\n|---|---|---:|---:|\n";
  for (std::size_t i = 0; i < cv.analytic_cluster.size(); ++i) {
    out << "| " << cv.analytic_cluster[i].workload << " | " << cv.analytic_cluster[i].gpu << " | "
        << fixed(cv.analytic_cluster[i].mape(), 1) << " | " << fixed(cv.fitted_cluster[i].mape(), 1)
        << " |\n";
  }
  out << "| **all** | | " << mean_cell(all_errors(cv.analytic_cluster)) << " | "
      << mean_cell(all_errors(cv.fitted_cluster)) << " |\n";
  return out.str();
}

namespace {

std::vector<std::string> gpus_in(const std::vector<WorkloadError>& errors) {
  std::vector<std::string> out;
  for (const auto& e : errors) {
    if (std::find(out.begin(), out.end(), e.gpu) == out.end()) out.push_back(e.gpu);
  }
  std::sort(out.begin(), out.end());
  return out;
}

const WorkloadError* find_error(const std::vector<WorkloadError>& errors,
                                const std::string& workload, const std::string& gpu) {
  for (const auto& e : errors) {
    if (e.workload == workload && e.gpu == gpu) return &e;
  }
  return nullptr;
}

nlohmann::json mape_by_gpu(const std::vector<WorkloadError>& errors) {
  nlohmann::json out = {{"all", mape_percent(errors)}};
  for (const auto& gpu : gpus_in(errors)) out[gpu] = mape_percent(errors, gpu);
  return out;
}

}  // namespace

std::string gpu_accuracy_tables(const CrossValidation& cv) {
  std::ostringstream out;
  const auto gpus = gpus_in(cv.analytic_single);
  auto cell = [](const WorkloadError* e) { return e ? fixed(e->mape(), 1) : std::string("-"); };
  out << "Single worker (one parameter server), leave-one-GPU-out (each GPU predicted by models "
         "fitted on the other GPU's measurements only), MAPE of steps/s in %:\n\n";
  out << "| workload |";
  for (const auto& gpu : gpus) out << " " << gpu << " analytic | " << gpu << " fitted |";
  out << "\n|---|";
  for (std::size_t i = 0; i < gpus.size(); ++i) out << "---:|---:|";
  out << "\n";
  for (const auto& w : builtin_workloads()) {
    bool any = false;
    for (const auto& gpu : gpus) any = any || find_error(cv.analytic_single, w.name, gpu);
    if (!any) continue;
    out << "| " << w.name << " |";
    for (const auto& gpu : gpus) {
      out << " " << cell(find_error(cv.analytic_single, w.name, gpu)) << " | "
          << cell(find_error(cv.fitted_single, w.name, gpu)) << " |";
    }
    out << "\n";
  }
  out << "| **all** |";
  for (const auto& gpu : gpus) {
    out << " **" << fixed(mape_percent(cv.analytic_single, gpu), 1) << "** | **"
        << fixed(mape_percent(cv.fitted_single, gpu), 1) << "** |";
  }
  out << "\n\nBoth GPUs: analytic " << fixed(mape_percent(cv.analytic_single), 1) << "%, fitted "
      << fixed(mape_percent(cv.fitted_single), 1) << "% (" << all_errors(cv.analytic_single).size()
      << " predictions). Fitted forms chosen without "
      << "the held-out GPU:";
  for (const auto& [gpu, params] : cv.fitted_folds) {
    FittedCandidate form{params.form, params.features, params.ridge_lambda};
    out << " " << gpu << " held out: " << form.label() << ";";
  }
  out << "\n";
  if (!cv.analytic_cluster.empty()) {
    out << "\nCluster scaling (1-8 workers, one parameter server), leave-one-GPU-out, MAPE of "
           "cluster steps/s in %:\n\n";
    out << "| workload | GPU | analytic | fitted |\n|---|---|---:|---:|\n";
    for (std::size_t i = 0; i < cv.analytic_cluster.size(); ++i) {
      out << "| " << cv.analytic_cluster[i].workload << " | " << cv.analytic_cluster[i].gpu << " | "
          << fixed(cv.analytic_cluster[i].mape(), 1) << " | "
          << fixed(cv.fitted_cluster[i].mape(), 1) << " |\n";
    }
    for (const auto& gpu : gpus_in(cv.analytic_cluster)) {
      out << "| **all** | " << gpu << " | **" << fixed(mape_percent(cv.analytic_cluster, gpu), 1)
          << "** | **" << fixed(mape_percent(cv.fitted_cluster, gpu), 1) << "** |\n";
    }
  }
  return out.str();
}

nlohmann::json cross_validation_json(const CrossValidation& cv) {
  auto predictions = [](const std::vector<WorkloadError>& analytic,
                        const std::vector<WorkloadError>& fitted) {
    nlohmann::json out = nlohmann::json::array();
    for (std::size_t i = 0; i < analytic.size(); ++i) {
      TRANSIENT_CHECK(analytic[i].workload == fitted[i].workload);
      out.push_back({{"workload", analytic[i].workload},
                     {"gpu", analytic[i].gpu},
                     {"measured_steps_per_s", analytic[i].measured_steps_per_s},
                     {"analytic_steps_per_s", analytic[i].predicted_steps_per_s},
                     {"fitted_steps_per_s", fitted[i].predicted_steps_per_s},
                     {"analytic_ape_percent", analytic[i].ape_percent},
                     {"fitted_ape_percent", fitted[i].ape_percent}});
    }
    return out;
  };
  nlohmann::json forms = nlohmann::json::object();
  for (const auto& [held_out, params] : cv.fitted_folds) {
    forms[held_out] = FittedCandidate{params.form, params.features, params.ridge_lambda}.label();
  }
  return {
      {"held_out", cv.held_out == HeldOut::gpu ? "gpu" : "model"},
      {"single_worker", predictions(cv.analytic_single, cv.fitted_single)},
      {"cluster", predictions(cv.analytic_cluster, cv.fitted_cluster)},
      {"fitted_forms", forms},
      {"mape_percent",
       {{"analytic",
         {{"single_worker", mape_by_gpu(cv.analytic_single)},
          {"cluster", mape_by_gpu(cv.analytic_cluster)}}},
        {"fitted",
         {{"single_worker", mape_by_gpu(cv.fitted_single)},
          {"cluster", mape_by_gpu(cv.fitted_cluster)}}}}},
  };
}

}  // namespace transient::perf
