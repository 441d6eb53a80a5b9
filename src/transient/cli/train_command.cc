// `transient train` and the `transient worker` process it starts.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "transient/cli/commands.h"
#include "transient/cli/torch_commands.h"
#include "transient/cli/validators.h"
#include "transient/cloud/catalog.h"
#include "transient/cloud/catalog_registry.h"
#include "transient/core/duration.h"
#include "transient/core/error.h"
#include "transient/launch/revocation_schedule.h"
#include "transient/market/data_dir.h"
#include "transient/market/registry.h"
#include "transient/train/trainer.h"

namespace transient::cli {
namespace {

// The steps of a training job, as the launcher bounds them (train/launcher.cc).
constexpr Bound kTrainingSteps{1.0, 1e9, "steps", true};

// "--checkpoint-every 200" is a number of steps; "30s", "5m", "1h" are durations; "0" means only
// the final state. Not given: the default of TrainOptions.
void parse_checkpoint_every(const std::string& text, train::TrainOptions& options) {
  if (text.empty()) return;
  const bool all_digits =
      text.size() <= 12 && text.find_first_not_of("0123456789") == std::string::npos;
  if (all_digits) {
    options.checkpoint_every_steps = std::stoll(text);
    options.checkpoint_every_s = 0;
    return;
  }
  // A duration ends in its unit: a bare 1.5 was taken as 1.5 s where a bare 200 is 200 steps,
  // and 1e3 (whose "e" passed for a unit) as 1000 s.
  const bool has_unit = std::isalpha(static_cast<unsigned char>(text.back())) != 0;
  const auto seconds = has_unit ? parse_duration_s(text) : std::nullopt;
  if (!seconds) {
    throw InputError("--checkpoint-every: \"" + text +
                     "\" is neither a number of steps nor a duration; accepted: 200 (steps), "
                     "30s, 5m, 1h");
  }
  if (*seconds <= 0) {
    throw InputError("--checkpoint-every: \"" + text +
                     "\" is no interval; accepted: a duration > 0 such as 30s, 5m, 1h, a number "
                     "of steps such as 200, or 0 (the final state only)");
  }
  options.checkpoint_every_s = *seconds;
  options.checkpoint_every_steps = 0;
}

std::string model_list() {
  std::string list;
  for (const auto& [name, description] : train::model_catalog()) {
    list += "\n  " + name + ": " + description;
  }
  return list;
}

// What to train and how: shared by `train` and `coordinator`.
void add_job_options(CLI::App& cmd, train::TrainOptions& options, std::string& checkpoint_every) {
  cmd.add_option("--model", options.model,
                 "cnn, mlp, resnet20, resnet32, or a TorchScript file FILE.pt (a module saved "
                 "from Python that maps the data set's images, e.g. [N, 1, 28, 28] or "
                 "[N, 3, 32, 32], to [N, classes] scores: 10 for Fashion-MNIST and CIFAR-10, "
                 "the labels' classes for NumPy arrays and image folders)")
      ->check(kUtf8Path)
      ->capture_default_str();
  auto* data = cmd.add_option(
      "--data", options.data,
      "the data set's folder, its kind found from what it holds: images.npy and labels.npy, "
      "CIFAR-10's binary batches, Fashion-MNIST's IDX files, or class sub-folders of JPEG/PNG "
      "images (directly or under train/, with val/ or test/ beside it)");
  // `--data "$DATA"` with DATA unset trained on Fashion-MNIST.
  data->check(kUtf8Path);
  data->check(CLI::Validator(
      [](std::string& text) {
        return text.empty() ? std::string("no folder given; accepted: the data set's folder")
                            : std::string();
      },
      "DIR"));
  cmd.add_option("--dataset", options.dataset,
                 "the data set by name: fashion-mnist (Debian's), cifar10 (CIFAR-10's binary "
                 "version in --data-dir), npy (images.npy and labels.npy in --data-dir) or "
                 "image-folder")
      ->capture_default_str()
      ->excludes(data);
  cmd.add_option("--data-dir", options.data_dir, "where the data set's files are")
      ->check(kUtf8Path)
      ->capture_default_str()
      ->excludes(data);
  cmd.add_option("--val-data", options.val_data,
                 "a validation set of its own: a folder of the same kind (npy, image folders; "
                 "default: the data set's test set, or a tenth held out)")
      ->check(kUtf8Path);
  cmd.add_option("--image-size", options.image_size,
                 "image folders: images made S x S (0 = the first image's shorter side)")
      ->capture_default_str();
  add_named_option(cmd, "--augment", options.augment,
                   "image folders' training augmentation: crop (pad by S/8, random crop, flip), "
                   "resized-crop (random 8-100% area, 3/4-4/3 aspect, flip) or none");
  cmd.add_option("--loader-threads", options.loader_threads,
                 "image folders: threads per worker decoding and augmenting batches ahead")
      ->capture_default_str();
  cmd.add_flag("--strict", options.strict,
               "image folders: decode every image before the job starts and refuse the data set "
               "if one does not decode (default: skip it, counted in the records)");
  cmd.add_option("--train-subset", options.train_subset,
                 "train on the first N training samples only (quick experiments; 0 = all)");
  cmd.add_option("--test-subset", options.test_subset,
                 "evaluate on the first N test samples only (0 = all)");
  auto* epochs = cmd.add_option("--epochs", options.epochs, "passes over the training set")
                     ->capture_default_str();
  // A value given is checked here: 0 is the options' "not given" (--epochs decides, or the
  // global batch), so a 0 the user wrote would otherwise run the default.
  cmd.add_option("--steps", options.steps, "optimizer steps in total (instead of --epochs)")
      ->transform(within(kTrainingSteps))
      ->excludes(epochs);
  auto* global_batch = cmd.add_option("--global-batch", options.global_batch,
                                      "samples per step, split among the workers")
                           ->capture_default_str();
  cmd.add_option("--per-worker-batch", options.per_worker_batch,
                 "samples per step for each of the workers the job starts with (--workers, or "
                 "the coordinator's --min-workers): the job's batch is N x those, and survivors "
                 "take up a lost worker's share")
      ->transform(within(bounds::kBatch))
      ->excludes(global_batch);
  cmd.add_flag("--drop-last", options.drop_last,
               "an epoch is its full batches only: the samples left over (fewer than a batch) "
               "are not trained on, as PyTorch's DataLoader(drop_last=True); a batch norm needs "
               "it when an epoch's last step would give a worker a single sample");
  cmd.add_option("--lr", options.lr, "peak learning rate (warm-up, then cosine to 0)")
      ->capture_default_str();
  cmd.add_option("--optimizer", options.optimizer,
                 "sgd (with --momentum, --nesterov) or adamw (with --beta1, --beta2, --eps)")
      ->check(CLI::IsMember({"sgd", "adamw"}))
      ->capture_default_str();
  cmd.add_option("--momentum", options.momentum, "SGD momentum")->capture_default_str();
  cmd.add_option("--weight-decay", options.weight_decay,
                 "SGD's L2 penalty, or AdamW's decoupled weight decay")
      ->capture_default_str();
  cmd.add_option("--beta1", options.beta1, "AdamW's decay of the gradient's mean")
      ->capture_default_str();
  cmd.add_option("--beta2", options.beta2, "AdamW's decay of the gradient's square")
      ->capture_default_str();
  cmd.add_option("--eps", options.eps, "AdamW's term added to the denominator")
      ->capture_default_str();
  add_named_option(cmd, "--loss", options.loss,
                   "cross-entropy, or mse (squared error of the scores against one-hot labels)");
  cmd.add_flag("--nesterov", options.nesterov, "Nesterov momentum");
  add_named_option(
      cmd, "--schedule", options.schedule,
      "the learning rate after the warm-up: cosine (a half cosine towards 0 over the steps "
      "after it) or step (x0.1 at half and x0.01 at three quarters of them)");
  cmd.add_option("--warmup-fraction", options.warmup_fraction,
                 "the share of the steps, at most 200, over which the learning rate rises "
                 "linearly from 0.1 x --lr to --lr before the schedule (0 = none)")
      ->capture_default_str();
  cmd.add_option("--clip-grad-norm", options.clip_grad_norm,
                 "clip the gradient's global L2 norm to this before each step (0 = never)")
      ->capture_default_str();
  cmd.add_option("--seed", options.seed, "model initialisation and data order")
      ->transform(kSeed)
      ->capture_default_str();
  add_named_option(cmd, "--compress", options.compress,
                   "gradients on the wire: none, bf16 or fp16 (half the bytes, for slow links; "
                   "summed in fp32 and rounded once)");
  add_named_option(cmd, "--precision", options.precision,
                   "the forward pass and the loss: fp32, or bf16 or fp16 (mixed precision: run "
                   "under autocast in that type; parameters, gradients and optimiser state stay "
                   "fp32; fp16 scales the loss, skipping the steps whose gradients overflow)");
  add_named_option(cmd, "--device", options.device,
                   "where the workers train: auto (a CUDA GPU where a worker's host has one, "
                   "else its CPUs), cpu, or cuda (a worker without a GPU stops the job)");
  add_named_option(cmd, "--memory-format", options.memory_format,
                   "the convolution weights' layout: channels-last, contiguous, or auto "
                   "(channels-last for the built-in ResNets, which train faster so; contiguous "
                   "for the others and for a TorchScript file, whose forward may assume it)");
  add_named_option(
      cmd, "--on-divergence", options.on_divergence,
      "a loss that becomes NaN or infinite: stop (name the step and the last good "
      "checkpoint) or rollback (continue from the newest checkpoint before it with the "
      "learning rate halved, at most 3 times)");
  cmd.add_option("--job-dir", options.job_dir,
                 "the job's directory (default: jobs/<UTC time>-<model>)")
      ->check(kUtf8Path);
  cmd.add_option("--checkpoint-every", checkpoint_every,
                 "checkpoint every STEPS (e.g. 200) or DURATION (e.g. 30s; the default); 0 = "
                 "only the final state, which is always checkpointed");
  cmd.add_option("--keep", options.keep, "checkpoints kept")->capture_default_str();
  cmd.add_flag("--resume", options.resume,
               "continue the job in --job-dir from its latest valid checkpoint");
  cmd.add_option("--threads", options.threads,
                 "intra-op threads per worker (default: cores / workers, at least 1)");
  cmd.add_option("--stop-at", options.stop_at_step,
                 "pause after this step (checkpoint and exit); continue later with --resume")
      ->check(CLI::Validator(
          [](std::string& text) {
            // 0 is the option's "none" inside: given, it was taken and ignored.
            long long step = 0;
            const char* end = text.data() + text.size();
            const auto [at, error] = std::from_chars(text.data(), end, step);
            return error == std::errc() && at == end && step >= 1
                       ? std::string()
                       : "\"" + text + "\"; accepted: a step number >= 1";
          },
          "STEP"));
  cmd.add_option("--bucket-bytes", options.bucket_bytes,
                 "gradient all-reduce buckets after the first, which closes at 1 MiB (as DDP's)")
      ->capture_default_str();
}

// What the workers' servers cost: the raw flags, resolved by resolve_prices.
struct PriceFlags {
  std::string catalog;
  std::string instance_type;
  std::string zone;
  std::string market = "spot";
};

void add_price_options(CLI::App& cmd, PriceFlags& flags) {
  cmd.add_option("--catalog", flags.catalog,
                 "the catalog (a built-in name or a CSV file) the workers' servers come from, for "
                 "cost accounting");
  cmd.add_option("--instance-type", flags.instance_type,
                 "the workers' instance type in --catalog: each worker is billed per second "
                 "from its admission until it leaves, for its GPU's share of the server (one "
                 "worker per GPU)");
  cmd.add_option("--zone", flags.zone,
                 "the zone of --instance-type in --catalog, needed where the catalog sells it in "
                 "several zones at different prices");
  cmd.add_option("--market", flags.market, "spot (default) or on-demand")->capture_default_str();
}

// The price of the workers' servers, from the catalog, into `options`.
void resolve_prices(const CLI::App& cmd, const PriceFlags& flags, train::TrainOptions& options) {
  if (flags.instance_type.empty()) {
    if (!flags.catalog.empty() || cmd.count("--market") > 0 || cmd.count("--zone") > 0) {
      throw InputError(
          "--catalog, --zone and --market need --instance-type TYPE (the workers' servers)");
    }
    return;
  }
  if (flags.catalog.empty()) {
    throw InputError("--instance-type needs --catalog NAME|FILE (see `transient catalog list`)");
  }
  const auto market = cloud::parse_market(flags.market);
  if (!market) {
    throw InputError("--market: \"" + flags.market +
                     "\" is not a market; accepted: spot, on-demand");
  }
  const cloud::Catalog catalog = cloud::load_catalog(flags.catalog);
  std::string zone = flags.zone;
  if (zone.empty()) {
    // Sold in several zones at different prices: which one the workers run in is the user's to
    // say (the first row's price was taken, 4x from another's in aws-gpu). At one price in
    // this market, the first zone that sells in it stands for all.
    std::string offers;
    bool differ = false;
    const cloud::InstanceType* first = nullptr;
    for (const cloud::InstanceType& other : catalog.types()) {
      if (other.name != flags.instance_type || !other.has_market(*market)) continue;
      if (first == nullptr) first = &other;
      differ = differ || other.price_usd_per_h(*market) != first->price_usd_per_h(*market);
      offers += fmt::format("{}{} ${:.4g}/h", offers.empty() ? "" : ", ",
                            other.zone.empty() ? std::string("(no zone)") : other.zone,
                            other.price_usd_per_h(*market));
    }
    if (differ) {
      throw InputError("--instance-type " + flags.instance_type + " is sold " +
                       std::string(cloud::to_string(*market)) + " in several zones of " +
                       flags.catalog + " at different prices (" + offers + "); give --zone ZONE");
    }
    if (first != nullptr) zone = first->zone;
  }
  const cloud::InstanceType& type = catalog.find(flags.instance_type, zone);
  if (!type.has_market(*market)) {
    throw InputError("--market: " + flags.instance_type + " is not sold " +
                     std::string(cloud::to_string(*market)) + " in " + flags.catalog +
                     (flags.zone.empty() ? "" : " zone " + flags.zone));
  }
  options.instance_type = flags.instance_type;
  options.market = std::string(cloud::to_string(*market));
  // One worker per GPU: a worker on a server of several GPUs is billed its GPU's share.
  options.price_usd_per_h = type.price_usd_per_h(*market) / std::max(1, type.gpus);
}

// The coordinator's address and the heartbeat timeout.
void add_elastic_options(CLI::App& cmd, train::TrainOptions& options, std::string& heartbeat) {
  cmd.add_option("--heartbeat-timeout", heartbeat, "drop a worker silent this long (default 5s)");
  cmd.add_option("--bind", options.bind,
                 "address the coordinator listens on (default loopback only)")
      ->capture_default_str();
  cmd.add_option("--port", options.port, "coordinator port (default: any free port)");
  cmd.add_option("--dashboard", options.dashboard,
                 "serve the live dashboard (/ the job's report page, /metrics for Prometheus) "
                 "on ADDR:PORT (port 0 = any free port); peers other than loopback need the "
                 "job's token; \"off\" serves none")
      ->capture_default_str();
}

// The flags of a job's settings that were given (a resumed job refuses those that differ) and
// of its launch settings (a resumed job takes those from its job directory unless given).
std::vector<std::string> given_job_flags(const CLI::App& cmd) {
  std::vector<std::string> given;
  // With the settings and launch flags, those of image folders that the job's config keeps
  // apart: given for another data set, each is refused (train::validate).
  for (const auto& flags : {train::job_setting_flags(), train::launch_setting_flags(),
                            std::vector<std::string>{"--loader-threads", "--strict"}}) {
    for (const std::string& flag : flags) {
      const CLI::Option* option = cmd.get_option_no_throw(flag);
      if (option != nullptr && option->count() > 0) given.push_back(flag);
    }
  }
  return given;
}

void parse_elastic_durations(const std::string& heartbeat, const std::string& replace,
                             train::TrainOptions& options) {
  if (!heartbeat.empty())
    options.heartbeat_timeout_s = require_duration_s(heartbeat, "--heartbeat-timeout");
  if (!replace.empty()) options.replace_after_s = require_duration_s(replace, "--replace");
}

// Flags that only qualify another: given without it, they would change nothing.
void check_qualifying_flags(const CLI::App& train, const train::TrainOptions& options) {
  const std::vector<std::pair<const char*, const char*>> qualifies = {
      {"--max-replacements", "--replace"},
      {"--revocation-param", "--revocations"},
      {"--time-scale", "--revocations"},
      {"--market-data-dir", "--revocations"}};
  for (const auto& [flag, other] : qualifies) {
    if (train.count(flag) > 0 && train.count(other) == 0) {
      throw InputError(std::string(flag) + " qualifies " + other +
                       ", which is not given: " + "give both, or neither");
    }
  }
  if (train.count("--max-replacements") > 0 && options.max_replacements < 0) {
    throw InputError("--max-replacements: " + std::to_string(options.max_replacements) +
                     "; accepted: 0 or more (without the flag: one replacement per loss)");
  }
}

}  // namespace

void add_train_commands(CLI::App& app, launch::ForkServer* fork_server) {
  auto options = std::make_shared<train::TrainOptions>();
  auto checkpoint_every = std::make_shared<std::string>();
  auto heartbeat = std::make_shared<std::string>();
  auto replace = std::make_shared<std::string>();
  auto prices = std::make_shared<PriceFlags>();
  auto revoke = std::make_shared<std::vector<std::string>>();
  auto revocations = std::make_shared<std::string>();
  auto revocation_params = std::make_shared<std::vector<std::string>>();
  auto market_data_dir = std::make_shared<std::string>();
  auto* train = app.add_subcommand("train", torch_command_summary("train"));
  train->footer("Models:" + model_list());
  train->add_option("--workers", options->workers, "worker processes")->capture_default_str();
  add_job_options(*train, *options, *checkpoint_every);
  add_elastic_options(*train, *options, *heartbeat);
  add_price_options(*train, *prices);
  train
      ->add_option("--revoke", *revoke,
                   "inject a revocation: ACTION@TIME:TARGET, ACTION kill|preempt|stop, TIME 30s "
                   "or every20s or step120 (the step it comes after), TARGET rankN|workerN|any "
                   "(repeatable), e.g. kill@30s:rank0")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  train->add_option("--replace", *replace,
                    "start a replacement worker this long after each loss (e.g. 0s, 5s)");
  train->add_option("--max-replacements", options->max_replacements,
                    "start at most this many replacements (default: one per loss)");
  train->add_option("--revocations", *revocations,
                    "draw each worker's lifetime from this market model (see `transient market "
                    "list`) and preempt it then");
  train
      ->add_option("--revocation-param", *revocation_params,
                   "KEY=VALUE parameter of the --revocations model (repeatable), e.g. gpu=K80")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  train
      ->add_option("--time-scale", options->time_scale,
                   "market seconds per second of the run for --revocations")
      ->capture_default_str();
  train->add_option("--market-data-dir", *market_data_dir,
                    "the shared data directory of the market models");
  train->callback([train, options, checkpoint_every, heartbeat, replace, prices, revoke,
                   revocations, revocation_params, market_data_dir, fork_server] {
    options->given_flags = given_job_flags(*train);
    // Not given, a resumed job's front door (a coordinator's job) and dashboard are its last
    // run's (train::prepare_job): `train` has defaults for them, so their absence is said here.
    for (const char* flag : {"--bind", "--port", "--dashboard"}) {
      if (train->get_option(flag)->count() > 0) options->given_flags.emplace_back(flag);
    }
    parse_checkpoint_every(*checkpoint_every, *options);
    parse_elastic_durations(*heartbeat, *replace, *options);
    check_qualifying_flags(*train, *options);
    resolve_prices(*train, *prices, *options);
    for (const std::string& rule : *revoke) {
      options->revoke.push_back(launch::parse_revoke_rule(rule));
    }
    if (!revocations->empty()) {
      market::ModelContext context;
      context.data_dir = market::resolve_data_dir(*market_data_dir);
      options->revocations = market::create_revocation_model(
          *revocations, market::params_from_words(*revocation_params, "--revocation-param"),
          context);
    }
    const int code = train::run_training(*options, fork_server);
    if (code != 0) throw CLI::RuntimeError(code);
  });

  auto coordinator_options = std::make_shared<train::TrainOptions>();
  auto coordinator_heartbeat = std::make_shared<std::string>();
  auto coordinator_checkpoint_every = std::make_shared<std::string>();
  auto min_workers = std::make_shared<int>(1);
  auto coordinator_prices = std::make_shared<PriceFlags>();
  auto* coordinator = app.add_subcommand("coordinator", torch_command_summary("coordinator"));
  add_job_options(*coordinator, *coordinator_options, *coordinator_checkpoint_every);
  add_elastic_options(*coordinator, *coordinator_options, *coordinator_heartbeat);
  add_price_options(*coordinator, *coordinator_prices);
  coordinator->add_option("--min-workers", *min_workers, "workers that generation 0 waits for")
      ->capture_default_str();
  coordinator->callback([coordinator, coordinator_options, coordinator_checkpoint_every,
                         coordinator_heartbeat, min_workers, coordinator_prices] {
    coordinator_options->given_flags = given_job_flags(*coordinator);
    // Not given: a job taken back or continued listens where its journal says (launcher.cc).
    if (coordinator->get_option("--bind")->count() == 0) coordinator_options->bind.clear();
    if (coordinator->get_option("--dashboard")->count() == 0)
      coordinator_options->dashboard.clear();
    // -1: not given (a job taken back or continued keeps its journal's port and worker count).
    if (coordinator->get_option("--port")->count() == 0) coordinator_options->port = -1;
    if (coordinator->get_option("--min-workers")->count() == 0) *min_workers = -1;
    parse_checkpoint_every(*coordinator_checkpoint_every, *coordinator_options);
    std::string no_replace;
    parse_elastic_durations(*coordinator_heartbeat, no_replace, *coordinator_options);
    resolve_prices(*coordinator, *coordinator_prices, *coordinator_options);
    const int code = train::run_coordinator(*coordinator_options, *min_workers);
    if (code != 0) throw CLI::RuntimeError(code);
  });

  auto worker_options = std::make_shared<train::WorkerOptions>();
  auto* worker = app.add_subcommand("worker", torch_command_summary("worker"));
  worker->add_option("--coordinator", worker_options->coordinator,
                     "HOST:PORT of the coordinator (default: $TRANSIENT_COORDINATOR, else "
                     "$MASTER_ADDR:$MASTER_PORT)");
  worker->add_option("--token-file", worker_options->token_file,
                     "the job's token file (<job>/token)");
  worker->add_option("--token", worker_options->token,
                     "the job's token itself (default: $TRANSIENT_TOKEN)");
  worker->add_option("--worker-id", worker_options->worker_id,
                     "a name unique in the job (default: the coordinator gives one)");
  worker->add_option("--threads", worker_options->threads, "intra-op threads");
  worker->add_option("--advertise", worker_options->advertise,
                     "the address of this host that peers reach it at (default: the local "
                     "address of its route to the coordinator)");
  worker->add_option("--interface", worker_options->interface,
                     "the network interface whose address peers reach it at (default: "
                     "$GLOO_SOCKET_IFNAME)");
  worker
      ->add_option("--data-dir", worker_options->data_dir,
                   "where this host holds the data set (default: the job's path)")
      ->check(kUtf8Path);
  worker
      ->add_option("--val-data", worker_options->val_data,
                   "where this host holds the job's --val-data folder (default: the job's "
                   "path)")
      ->check(kUtf8Path);
  worker
      ->add_option("--gpu", worker_options->gpu,
                   "which of this host's GPUs it trains on when the job's --device takes one "
                   "(N modulo the GPUs it sees)")
      ->transform(within(Bound{0, 1e6, "", true}))
      ->capture_default_str();
  auto coordinator_wait = std::make_shared<std::string>();
  worker->add_option("--coordinator-wait", *coordinator_wait,
                     "how long a coordinator that went away is waited for before the worker "
                     "exits (training goes on meanwhile, kept only if it comes back; e.g. 10m, "
                     "0 = for ever; default 1h)");
  worker->add_flag("--quiet", worker_options->quiet,
                   "say nothing on stderr of the generations it joins, fails or leaves or of the "
                   "job's end (`transient train` starts its workers so: it prints the job's "
                   "progress, and the coordinator records why a generation failed)");
  worker->callback([worker, worker_options, coordinator_wait] {
    if (!coordinator_wait->empty()) {
      worker_options->coordinator_wait_s =
          require_duration_s(*coordinator_wait, "--coordinator-wait");
    }
    // Orchestrators (Kubernetes, Slurm, SkyPilot, torchrun's conventions) pass these in the
    // environment; a flag given outright wins.
    resolve_worker_environment(*worker_options, [](const char* name) {
      const char* value = std::getenv(name);
      return value == nullptr ? std::string() : std::string(value);
    });
    if (worker->count("--advertise") > 0 && worker->count("--interface") > 0) {
      throw InputError("give at most one of --advertise ADDR and --interface IFNAME");
    }
    const int code = train::run_worker(*worker_options);
    if (code != 0) throw CLI::RuntimeError(code);
  });
}

}  // namespace transient::cli
