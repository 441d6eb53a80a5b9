// `transient predict (--workload NAME | --profile FILE) --cluster SPEC ...`: a cluster's speed
// from a throughput model, before renting it.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>
#include <string>

#include "transient/cli/batch_flags.h"
#include "transient/cli/commands.h"
#include "transient/cli/validators.h"
#include "transient/cloud/catalog_registry.h"
#include "transient/core/bounds.h"
#include "transient/core/error.h"
#include "transient/core/text.h"
#include "transient/perf/cluster_spec.h"
#include "transient/perf/registry.h"
#include "transient/perf/workload.h"

namespace transient::cli {
namespace {

struct PredictArgs {
  std::string workload;
  std::string profile;
  std::string cluster;
  std::string arch = "allreduce";  // what `transient train` runs
  BatchFlags batch;
  int ps = 0;
  std::string model_file;
  std::string throughput = "analytic";
  std::string catalog = "gce-2019";
  bool json = false;
};

void predict(const PredictArgs& args) {
  if (args.workload.empty() == args.profile.empty()) {
    throw InputError("predict needs exactly one of --workload NAME or --profile FILE");
  }
  perf::Architecture architecture;
  if (!perf::parse_architecture(args.arch, architecture)) {
    throw InputError("--arch " + args.arch + ": accepted: ps, async-ps, allreduce, sync");
  }
  const cloud::Catalog catalog = cloud::load_catalog(args.catalog);
  const perf::ClusterSpec spec = perf::parse_cluster_spec(args.cluster, catalog);
  int servers = args.ps > 0 ? args.ps : std::max(1, spec.parameter_servers());
  if (args.ps < 0) throw InputError("--ps " + std::to_string(args.ps) + ": accepted: 1 or more");
  if (args.ps > 0 && architecture == perf::Architecture::allreduce) {
    // All-reduce has no parameter servers: the count would be ignored.
    throw InputError("--ps " + std::to_string(args.ps) +
                     ": parameter servers are for --arch ps; the all-reduce architecture (the "
                     "default, what `transient train` runs) has none; accepted: --ps with --arch "
                     "ps");
  }
  if (args.ps > 0 && spec.parameter_servers() > 0 && args.ps != spec.parameter_servers()) {
    // Two counts of parameter servers: which one was meant is not guessed.
    throw InputError("--ps " + std::to_string(args.ps) + ": the --cluster " + args.cluster +
                     " has " + counted(spec.parameter_servers(), "parameter server") +
                     "; accepted: the count in one place, --ps or ps entries of the spec");
  }
  perf::require_no_servers_for_allreduce(spec, architecture, "--cluster");
  const perf::ClusterShape shape = spec.shape(architecture, servers);
  perf::require_network(shape, args.catalog);

  perf::ThroughputParams params;
  args.batch.set_params(params);
  if (!args.workload.empty()) params.values["workload"] = args.workload;
  if (!args.profile.empty()) params.values["profile"] = args.profile;
  if (!args.model_file.empty()) params.values["model"] = args.model_file;
  if (args.throughput != "analytic" && args.throughput != "fitted") {
    throw InputError("--throughput " + args.throughput + ": accepted: analytic, fitted");
  }
  const auto model = perf::create_throughput_model(args.throughput, params);
  const int reference = args.workload.empty()
                            ? perf::load_workload_profile(args.profile).batch_per_worker
                            : perf::find_workload(args.workload).batch_per_worker;
  const perf::JobBatch batch = args.batch.batch();
  const int workers = shape.total_workers();
  // Samples per step: every update's with parameter servers, the whole cluster's with all-reduce.
  const bool allreduce = architecture == perf::Architecture::allreduce;
  if (allreduce) batch.require_a_sample_per_worker(workers, reference, args.batch.source());
  const double step_samples = batch.step_samples(allreduce ? workers : 1, reference);
  perf::Prediction p = model->predict(shape);
  p.step_time_s = check_result(p.step_time_s, "step time of " + args.cluster);
  p.steps_per_s = check_result(p.steps_per_s, "steps per second of " + args.cluster);
  p.samples_per_s = check_result(p.samples_per_s, "samples per second of " + args.cluster);

  if (args.json) {
    const nlohmann::json out = {
        {"cluster", args.cluster},
        {"architecture", perf::to_string(architecture)},
        {"parameter_servers", architecture == perf::Architecture::async_ps ? servers : 0},
        {"servers", shape.total_servers()},
        {"workers", workers},
        {batch.mode == perf::JobBatch::Mode::global ? "global_batch" : "per_worker_batch",
         batch.samples > 0 ? batch.samples : reference},
        {"step_samples", std::llround(step_samples)},
        {"model", model->name()},
        {"steps_per_s", p.steps_per_s},
        {"step_time_s", p.step_time_s},
        {"samples_per_s", p.samples_per_s},
        {"bottleneck", p.bottleneck}};
    fmt::print("{}\n", out.dump(2));
    return;
  }
  fmt::print("{}\n", model->describe());
  std::string groups;
  for (const auto& group : shape.workers) {
    groups += fmt::format(
        "{}{} x {} ({}{})", groups.empty() ? "" : ", ", group.count, group.type.name,
        group.type.gpus > 1 ? std::to_string(group.type.gpus) + " x " : "", group.type.gpu);
  }
  fmt::print("cluster: {}; {} (one per GPU); {}", groups, counted(workers, "worker"),
             perf::to_string(architecture));
  if (architecture == perf::Architecture::async_ps) {
    fmt::print(" with {}", counted(servers, "parameter server"));
  }
  fmt::print("; {}\n", batch.text(reference));
  // Workers of different types split a step's samples in proportion to their speed (as
  // `transient train` does), not evenly.
  const bool mixed = std::any_of(shape.workers.begin(), shape.workers.end(), [&](const auto& g) {
    return g.type.name != shape.workers.front().type.name;
  });
  // Samples are counted whole ("10001", not "1e+04"); a worker's share of a global batch may not
  // be whole (128 among 3).
  const auto samples_text = [](double samples) {
    return samples == std::floor(samples) ? fmt::format("{:.0f}", samples)
                                          : fmt::format("{:.4g}", samples);
  };
  if (allreduce && mixed) {
    fmt::print(
        "step time {:.4g} s per step of {} samples (split among the workers in "
        "proportion to their speed)",
        p.step_time_s, samples_text(step_samples));
  } else if (allreduce) {
    fmt::print("step time {:.4g} s per step of {} samples ({} per worker)", p.step_time_s,
               samples_text(step_samples), samples_text(batch.worker_samples(workers, reference)));
  } else {
    fmt::print("step time {:.4g} s per worker step of {} samples", p.step_time_s,
               samples_text(step_samples));
  }
  fmt::print("; cluster {:.4g} steps/s, {:.4g} samples/s\nbottleneck: {}\n", p.steps_per_s,
             p.samples_per_s, p.bottleneck);
}

}  // namespace

void add_predict_command(CLI::App& app) {
  auto args = std::make_shared<PredictArgs>();
  auto* command = app.add_subcommand(
      "predict", "Predict a cluster's training speed (step time, steps/s, samples/s, bottleneck)");
  command->add_option("--workload", args->workload,
                      "a built-in workload: resnet-15, resnet-32, shake-shake-small, "
                      "shake-shake-big, custom1..custom10, ...");
  command->add_option("--profile", args->profile, "a workload profile JSON file");
  command
      ->add_option("--cluster", args->cluster,
                   "SPEC: [COUNTx]TYPE[@ZONE][:spot|:on-demand],... where TYPE is an instance "
                   "type or a GPU name of the catalog, or ps; e.g. 4xk80:spot or 2xv100,2xk80")
      ->required();
  command
      ->add_option("--arch", args->arch,
                   "allreduce (what `transient train` runs) or ps (asynchronous parameter servers)")
      ->capture_default_str();
  args->batch.add_to(*command);
  command
      ->add_option("--ps", args->ps,
                   "parameter servers for --arch ps (default: the spec's ps entries, else 1)")
      ->transform(within(bounds::kServers));
  command->add_option("--model", args->model_file, "a model file written by `transient fit`");
  command->add_option("--throughput", args->throughput, "analytic or fitted")
      ->capture_default_str();
  command->add_option("--catalog", args->catalog, "a built-in catalog name or a catalog CSV")
      ->capture_default_str();
  command->add_flag("--json", args->json, "print JSON");
  command->callback([args] { predict(*args); });
}

}  // namespace transient::cli
