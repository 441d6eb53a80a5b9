// `transient train` and the `transient worker` process it starts.
#include <string>

#include "transient/cli/commands.h"
#include "transient/core/duration.h"
#include "transient/core/error.h"
#include "transient/train/trainer.h"

namespace transient::cli {
namespace {

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
  const auto seconds = parse_duration_s(text);
  if (!seconds || *seconds <= 0) {
    throw InputError("--checkpoint-every: \"" + text +
                     "\" is neither a number of steps nor a duration; accepted: 200 (steps), "
                     "30s, 5m, 1h");
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

}  // namespace

void add_train_commands(CLI::App& app) {
  auto options = std::make_shared<train::TrainOptions>();
  auto checkpoint_every = std::make_shared<std::string>();
  auto* train = app.add_subcommand(
      "train",
      "Data-parallel training on this machine: a coordinator and N worker processes (libtorch, "
      "c10d/Gloo), with checkpoints and exact resume");
  train->footer("Models:" + model_list());
  train->add_option("--workers", options->workers, "worker processes")->capture_default_str();
  train->add_option("--model", options->model, "cnn, mlp, resnet20 or resnet32")
      ->capture_default_str();
  train->add_option("--dataset", options->dataset, "the data set (fashion-mnist)")
      ->capture_default_str();
  train->add_option("--data-dir", options->data_dir, "where the data set's files are")
      ->capture_default_str();
  train->add_option("--train-subset", options->train_subset,
                    "train on the first N training samples only (quick experiments; 0 = all)");
  train->add_option("--test-subset", options->test_subset,
                    "evaluate on the first N test samples only (0 = all)");
  auto* epochs = train->add_option("--epochs", options->epochs, "passes over the training set")
                     ->capture_default_str();
  train->add_option("--steps", options->steps, "optimizer steps in total (instead of --epochs)")
      ->excludes(epochs);
  train
      ->add_option("--global-batch", options->global_batch,
                   "samples per step, split among the workers")
      ->capture_default_str();
  train->add_option("--lr", options->lr, "peak learning rate (warm-up, then cosine to 0)")
      ->capture_default_str();
  train->add_option("--momentum", options->momentum, "SGD momentum")->capture_default_str();
  train->add_option("--weight-decay", options->weight_decay, "SGD weight decay")
      ->capture_default_str();
  train->add_option("--seed", options->seed, "model initialisation and data order")
      ->capture_default_str();
  train->add_option("--job-dir", options->job_dir,
                    "the job's directory (default: jobs/<UTC time>-<model>)");
  train->add_option("--checkpoint-every", *checkpoint_every,
                    "checkpoint every STEPS (e.g. 200) or DURATION (e.g. 30s; the default); 0 = "
                    "only the final state, which is always checkpointed");
  train->add_option("--keep", options->keep, "checkpoints kept")->capture_default_str();
  train->add_flag("--resume", options->resume,
                  "continue the job in --job-dir from its latest valid checkpoint");
  train->add_option("--threads", options->threads,
                    "intra-op threads per worker (default: cores / workers, at least 1)");
  train->add_option("--stop-at", options->stop_at_step,
                    "pause after this step (checkpoint and exit); continue later with --resume");
  train->add_option("--bucket-bytes", options->bucket_bytes, "gradient all-reduce bucket size")
      ->capture_default_str();
  train->callback([options, checkpoint_every] {
    parse_checkpoint_every(*checkpoint_every, *options);
    const int code = train::run_training(*options);
    if (code != 0) throw CLI::RuntimeError(code);
  });

  auto worker_options = std::make_shared<train::WorkerOptions>();
  auto* worker = app.add_subcommand(
      "worker", "A worker process of a training job (started by `transient train`)");
  worker->group("");  // internal until the elastic trainer makes it public
  worker->add_option("--coordinator", worker_options->coordinator, "HOST:PORT of the coordinator")
      ->required();
  worker->add_option("--token-file", worker_options->token_file, "the job's token file")
      ->required();
  worker->add_option("--worker-id", worker_options->worker_id, "a name unique in the job")
      ->required();
  worker->add_option("--threads", worker_options->threads, "intra-op threads");
  worker->callback([worker_options] {
    const int code = train::run_worker(*worker_options);
    if (code != 0) throw CLI::RuntimeError(code);
  });
}

}  // namespace transient::cli
