// `transient fit --data DIR [-o MODEL.json] [--report]`: fits the analytic and fitted throughput
// models on measurement files and cross-validates them; `--cross-validate gpu|model [--json]`
// prints one cross-validation's tables (or its predictions as JSON) and fits nothing else;
// `--profile IN.json --calibrated-profile OUT.json [--device NAME]` calibrates a workload profile
// on the trainer's job directories under --data (perf/profile_calibration.h).
#include <fmt/format.h>

#include <cmath>
#include <string>

#include "transient/cli/commands.h"
#include "transient/cli/validators.h"
#include "transient/core/atomic_file.h"
#include "transient/core/error.h"
#include "transient/core/text.h"
#include "transient/perf/measurement_set.h"
#include "transient/perf/profile_calibration.h"
#include "transient/perf/throughput_fitting.h"
#include "transient/perf/trainer_calibration.h"
#include "transient/perf/workload.h"

namespace transient::cli {
namespace {

struct FitArgs {
  std::string data_dir;
  std::string output;
  bool report = false;
  bool verbose = false;
  std::string cross_validate;  // "", "gpu" or "model"
  bool json = false;
  std::string profile;             // a workload profile to calibrate on the trainer's records
  std::string calibrated_profile;  // where to write it
  std::string device;              // what the records ran on; default: the profile's device
  perf::ThroughputFitOptions options;
};

// `value` with `decimals` decimals, or "-" where it is not a finite number.
std::string finite_or_dash(double value, int decimals) {
  return std::isfinite(value) ? fmt::format("{:.{}f}", value, decimals) : std::string("-");
}

// Our trainer's records: the calibration per model, each job's measured speed beside the
// calibration's, and the prediction for 1 to 3 workers with the same global batch.
void print_trainer_calibration(const perf::MeasurementSet& data) {
  const perf::TrainerCalibrationResult result = perf::calibrate_trainer(data);
  fmt::print("trainer records: {} steps in {} jobs", data.trainer_steps.size(), result.runs.size());
  if (!data.trainer_checkpoints.empty()) {
    double bytes = 0, seconds = 0;
    for (const auto& write : data.trainer_checkpoints) {
      bytes += write.bytes;
      seconds += write.write_s;
    }
    fmt::print("; {} checkpoint writes at {} MB/s", data.trainer_checkpoints.size(),
               finite_or_dash(seconds > 0 ? bytes / seconds / 1e6 : 0.0, 1));
  }
  fmt::print("\n");
  for (const auto& c : result.models) {
    fmt::print(
        "  {}: compute {:.4g} s + {:.4g} s/sample, other {:.4g} s, all-reduce {:.4g} s x "
        "(n-1)/n\n",
        c.model, c.compute_fixed_s, c.compute_per_sample_s, c.other_s, c.allreduce_full_s);
  }
  fmt::print("  {:<60} {:>8} {:>7} {:>6} {:>10} {:>10} {:>6}\n", "job", "model", "workers", "batch",
             "measured", "predicted", "error");
  for (const auto& run : result.runs) {
    // A calibration whose parts are all 0 (records of no compute, data or optimizer time)
    // predicts no step time: "-", never inf or nan.
    const double error = 100.0 * (run.predicted_samples_per_s - run.measured_samples_per_s) /
                         run.measured_samples_per_s;
    fmt::print("  {:<60} {:>8} {:>7} {:>6.0f} {:>10} {:>10} {:>6}\n", run.steps_csv, run.model,
               run.workers, run.global_batch, finite_or_dash(run.measured_samples_per_s, 1),
               finite_or_dash(run.predicted_samples_per_s, 1),
               std::isfinite(error) ? fmt::format("{:.1f}%", error) : std::string("-"));
  }
  for (const auto& c : result.models) {
    double batch = 0;
    for (const auto& run : result.runs) {
      if (run.model == c.model) batch = run.global_batch;
    }
    fmt::print("  {} with global batch {:.0f}: predicted samples/s", c.model, batch);
    for (int n = 1; n <= 3; ++n)
      fmt::print(" {}: {}", n, finite_or_dash(c.samples_per_s(n, batch), 1));
    fmt::print("\n");
  }
}

void calibrate(const FitArgs& args) {
  // Checked before the records are read, as -o is.
  require_writable_output(args.calibrated_profile, "--calibrated-profile", "the profile");
  const perf::Workload profile = perf::load_workload_profile(args.profile);
  std::string device = args.device;
  if (device.empty() && profile.measured) device = profile.measured->device;
  if (device.empty()) {
    throw InputError(args.profile, 0,
                     "the profile names no device (\"measured\") and --device is not given; "
                     "accepted: --device NAME, the GPU model (e.g. K80) or CPU the jobs ran on");
  }
  const perf::MeasurementSet data = perf::read_measurements(args.data_dir);
  const perf::ProfileCalibration c = perf::calibrate_profile(profile, data, device);
  write_file_atomically(args.calibrated_profile, perf::to_json(c.workload).dump(2) + "\n");
  fmt::print("calibrated {} on {} trainer steps of model {} (at most {} a step)\n", profile.name,
             c.steps, c.trainer_model, counted(c.max_workers, "worker"));
  // A CPU's step depends on its threads: both are said where known (a profile timed on all
  // cores beside workers that had one each).
  const auto with_threads = [](int threads) {
    return threads > 0 ? " with " + counted(threads, "thread") : std::string();
  };
  fmt::print("one worker on {}{}: {:.4g} s per step of {} samples, {:.1f} samples/s", device,
             with_threads(c.threads), c.workload.measured->step_time_s, c.workload.batch_per_worker,
             c.measured_samples_per_s);
  if (c.previous) {
    fmt::print(" (the profile had {:.4g} s per step of {} samples on {}{})",
               c.previous->step_time_s, profile.batch_per_worker, c.previous->device,
               with_threads(c.previous->threads));
  }
  fmt::print("\n");
  if (c.allreduce_full_s > 0) {
    fmt::print(
        "all-reduce in the records: {:.4g} s x (n-1)/n; not in the profile (predict models it "
        "from the cluster's network)\n",
        c.allreduce_full_s);
  }
  fmt::print("wrote {}\n", args.calibrated_profile);
}

void fit(const FitArgs& args) {
  if (!args.profile.empty()) return calibrate(args);
  // Checked before the fit (seconds of work), not after it.
  if (!args.output.empty()) require_writable_output(args.output, "-o", "the model");
  const perf::MeasurementSet data = perf::read_measurements(args.data_dir);
  if (!args.cross_validate.empty()) {
    if (data.single_worker.empty()) {
      throw InputError("--data " + args.data_dir +
                       ": --cross-validate needs single-worker GPU speeds (CM-DARE feature tables "
                       "or 0lat_* runs); none found");
    }
    const bool by_gpu = args.cross_validate == "gpu";
    const perf::CrossValidation cv = by_gpu ? perf::cross_validate_gpus(data, args.options)
                                            : perf::cross_validate(data, args.options);
    if (args.json) {
      fmt::print("{}\n", perf::cross_validation_json(cv).dump(2));
    } else {
      fmt::print("{}", by_gpu ? perf::gpu_accuracy_tables(cv) : perf::accuracy_tables(data, cv));
    }
    return;
  }
  if (data.single_worker.empty()) {
    if (!data.trainer_steps.empty()) {
      // The model file is fitted on single-worker speeds: with records alone -o cannot be met,
      // and saying so on a line of output after exit 0 would be a false success.
      if (!args.output.empty()) {
        throw InputError(args.output, 0,
                         "-o: --data " + args.data_dir +
                             " holds trainer records (steps.csv) but no single-worker GPU speeds "
                             "(CM-DARE feature tables or 0lat_* runs), which the model file is "
                             "fitted on; nothing written (without -o, fit prints the records' "
                             "calibration)");
      }
      print_trainer_calibration(data);
      return;
    }
    throw InputError("--data " + args.data_dir +
                     ": no single-worker speeds (CM-DARE feature tables or 0lat_* runs) and no "
                     "trainer steps.csv found; the models need one or the other");
  }
  if (!data.trainer_steps.empty()) print_trainer_calibration(data);
  const perf::CrossValidation cv = perf::cross_validate(data, args.options);
  const perf::PerfModelFile model = perf::fit_perf_model(data, args.options, cv);

  fmt::print(
      "read {} files ({} recognised but not used by perf): {} single-worker speeds, {} "
      "cluster speeds, {} published predictions\n",
      data.used.size() + data.not_used.size(), data.not_used.size(), data.single_worker.size(),
      data.cluster.size(), data.published.size());
  if (args.verbose) {
    for (const auto& line : data.used) fmt::print("  used: {}\n", line);
    for (const auto& line : data.not_used) fmt::print("  not used: {}\n", line);
  }
  const auto& a = model.analytic;
  fmt::print("analytic: efficiency");
  for (const auto& [family, value] : a.efficiency) fmt::print(" {} {:.4g}", family, value);
  fmt::print(
      "; step overhead {:.4g} s; worker {:.4g} s/tensor, network efficiency {:.3g}; "
      "server {:.4g} s/tensor, {:.3g} Gbit/s, sharpness {:.3g}\n",
      a.step_overhead_s, a.communication.worker_per_tensor_s, a.communication.network_efficiency,
      a.communication.ps_per_tensor_s, a.communication.ps_network_gbps,
      a.communication.contention_sharpness);
  fmt::print("fitted: {} (chosen by leave-one-model-out cross-validation among {} forms)\n",
             cv.chosen.label(), cv.candidate_mape.size());
  const auto& mape = model.report.at("mape_percent");
  // null where nothing was measured (no cluster speeds): "-", not 0%.
  const auto percent = [&](const char* key) {
    const auto& value = mape.at(key);
    return value.is_number() ? fmt::format("{:.1f}%", value.get<double>()) : std::string("-");
  };
  fmt::print(
      "leave-one-model-out MAPE: single worker analytic {}, fitted {}; cluster scaling analytic "
      "{}, fitted {}\n",
      percent("analytic_single_worker"), percent("fitted_single_worker"),
      percent("analytic_cluster"), percent("fitted_cluster"));
  for (const auto& [name, constants] : model.overheads.items()) {
    fmt::print("{}: {}\n", name, constants.dump());
  }
  if (args.report) fmt::print("\n{}", perf::accuracy_tables(data, cv));
  if (!args.output.empty()) {
    write_file_atomically(args.output, model.to_json().dump(2) + "\n");
    fmt::print("wrote {}\n", args.output);
  }
}

}  // namespace

void add_fit_command(CLI::App& app) {
  auto args = std::make_shared<FitArgs>();
  auto* command = app.add_subcommand(
      "fit",
      "Fit the analytic and fitted throughput models on measurements (CM-DARE's files, the "
      "trainer's steps.csv) and cross-validate them");
  command->add_option("--data", args->data_dir, "directory of measurement files (recursive)")
      ->required();
  command->add_option("-o,--output", args->output, "write the model file (JSON) here");
  command->add_flag("--report", args->report,
                    "print the accuracy tables (per workload and GPU, as in docs/models.md)");
  command->add_flag("--verbose", args->verbose, "list every file and what it gave");
  auto* cross =
      command
          ->add_option("--cross-validate", args->cross_validate,
                       "print only the tables of one cross-validation: gpu (leave one GPU "
                       "model out) or model (leave one workload out)")
          ->check(CLI::IsMember({"gpu", "model"}));
  command->add_flag("--json", args->json, "with --cross-validate: every prediction as JSON")
      ->needs(cross);
  cross->excludes(command->get_option("--output"))->excludes(command->get_option("--report"));
  auto* profile = command->add_option(
      "--profile", args->profile,
      "a workload profile (transient profile -o) to calibrate on the trainer's steps.csv under "
      "--data");
  auto* calibrated = command->add_option("--calibrated-profile", args->calibrated_profile,
                                         "with --profile: write the calibrated profile here");
  command
      ->add_option("--device", args->device,
                   "with --profile: the GPU model or CPU the jobs ran on (default: the "
                   "profile's measured device)")
      ->needs(profile);
  profile->needs(calibrated)->excludes(cross)->excludes(command->get_option("--output"));
  calibrated->needs(profile);
  command
      ->add_option("--worker-network-gbps", args->options.worker_network_gbps,
                   "network link of the measured workers")
      ->transform(within(Bound{0.01, bounds::kBandwidthGbps.hi, "Gbit/s"}))
      ->capture_default_str();
  command
      ->add_option("--server-network-gbps", args->options.server_network_gbps,
                   "network link of the measured parameter servers (the fitted server link is at "
                   "most this)")
      ->transform(within(Bound{0.01, bounds::kBandwidthGbps.hi, "Gbit/s"}))
      ->capture_default_str();
  command->callback([args] { fit(*args); });
}

}  // namespace transient::cli
