// The trainer's public surface for the CLI: synchronous data-parallel training with libtorch and
// c10d/Gloo across worker processes on this machine (issue 2), shaped for the elastic trainer.
//
// run_training() is `transient train`: it runs the coordinator in this process (the front door on
// loopback, the rendezvous keys, the job directory, the records) and starts `options.workers`
// worker processes by exec'ing this program's `worker` subcommand; run_worker() is that subcommand.
// This header is torch-free on purpose, so that the CLI compiles without libtorch's headers.
//
// Failure: bad input (a flag, a missing data set, a job directory of another job, an unreadable
// checkpoint) throws InputError before anything already written is touched. A worker that dies,
// goes silent or is preempted is dropped and the others go on in a new generation (see
// coordinator.h); the job keeps going with no worker at all until one joins.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "transient/launch/revocation_schedule.h"
#include "transient/market/revocation_model.h"
#include "transient/train/option_names.h"

namespace transient::launch {
class ForkServer;  // launch/fork_server.h
}

namespace transient::train {

// Exit codes of `transient train`, `transient coordinator` and `transient worker`.
constexpr int kExitFinished = 0;  // the job trained all its steps (a worker: it left as asked)
constexpr int kExitFailed = 1;    // the job stopped on an error (named on stderr), or a bug
constexpr int kExitBadInput = 2;  // a flag or a file was refused before anything ran
constexpr int kExitDropped = 3;   // a worker the coordinator dropped or refused, or that gave
                                  // up waiting for its coordinator (--coordinator-wait)
constexpr int kExitDiverged = 4;  // the training loss became NaN or infinite
constexpr int kMaxRollbacks = 3;  // --on-divergence rollback: then the job stops as with "stop"
constexpr int kExitPaused = 5;    // paused (Ctrl-C, --stop-at): continue with --resume

// A worker's --coordinator-wait unless given.
inline constexpr double kDefaultCoordinatorWaitS = 3600;

struct TrainOptions {
  // What is trained.
  std::string model = "cnn";                                   // a name from model_catalog()
  std::string dataset = "fashion-mnist";                       // datasets.h's names
  std::string data_dir = "/usr/share/datasets/fashion-mnist";  // Debian's dataset-fashion-mnist
  std::string data;                  // --data PATH: data_dir, and the dataset found in it
  std::string val_data;              // a validation set of its own (npy, image-folder); "" = none
  std::int64_t image_size = 0;       // image folders: images made S x S (0 = the first one's side)
  Augment augment = Augment::kCrop;  // image folders' training augmentation (image_folder.h)
  std::vector<double> image_mean;    // image folders: per channel, set by the launcher
  std::vector<double> image_std;
  int loader_threads = 2;         // image folders: threads decoding batches ahead, per worker
  bool strict = false;            // image folders: refuse a data set with an image that does
                                  // not decode (checked before the job starts), not skip it
  std::int64_t train_subset = 0;  // train on the first N training samples only (0 = all)
  std::int64_t test_subset = 0;   // evaluate on the first N test samples only (0 = all)

  // How long. `steps` > 0 overrides `epochs`.
  int epochs = 2;                 // passes over the training set
  std::int64_t steps = 0;         // optimizer steps in total (0 = epochs * steps per epoch)
  std::int64_t stop_at_step = 0;  // pause after this step (checkpoint, kExitPaused); 0 = never

  // Optimisation. The learning rate warms up linearly, then follows a cosine to zero.
  std::int64_t global_batch = 128;  // samples per step, split among the workers
  // --per-worker-batch N (0 = not given): the job's batch is N for each of the workers it is
  // started with (`--workers`, the coordinator's `--min-workers`), so global_batch = N x those.
  // A lost worker's share is taken up by the survivors: the batch, and with it every sample's
  // place in the epoch and the learning curve, do not change with revocations.
  std::int64_t per_worker_batch = 0;
  // --drop-last: an epoch is its full batches only; the samples left over (fewer than a batch,
  // others each epoch: the permutation differs) are not trained on, as PyTorch's DataLoader drops
  // them. Without it an epoch's last step takes what is left, few samples maybe, which a batch
  // norm cannot train on when a member is given one.
  bool drop_last = false;
  double lr = 0.05;  // peak learning rate
  // --lr given to --resume a job that diverged: it goes on at this peak rate (its `lr` setting
  // kept, the factor journaled as a rollback's is); 0 = as it was.
  double resume_lr = 0;
  std::string optimizer = "sgd";  // sgd, or adamw (optimizer.h)
  double momentum = 0.9;          // SGD momentum
  double weight_decay = 0.0;      // SGD's L2 penalty, AdamW's decoupled decay
  double beta1 = 0.9;             // AdamW's moment decays
  double beta2 = 0.999;
  double eps = 1e-8;                // AdamW's denominator term
  double warmup_fraction = 0.05;    // share of all steps spent warming up (at most 200 steps)
  Loss loss = Loss::kCrossEntropy;  // or mse (the scores against one-hot labels)
  bool nesterov = false;            // Nesterov momentum
  LrSchedule schedule = LrSchedule::kCosine;  // after the warm-up: or step (x0.1 at 1/2, 3/4)
  double clip_grad_norm = 0;  // clip the gradient's global L2 norm to this (0 = never)
  std::uint64_t seed = 1;     // model initialisation and data order
  // A training loss that becomes NaN or infinite: stop the job naming the step and the last
  // good checkpoint, or roll back: continue from the newest checkpoint taken at least two steps
  // before it with the learning rate halved from there on (at most kMaxRollbacks times).
  OnDivergence on_divergence = OnDivergence::kStop;
  std::string model_sha256;  // of a TorchScript model file (--model FILE.pt), set by the launcher

  // Where and how.
  int workers = 2;      // worker processes
  int threads = 0;      // intra-op threads per worker; 0 = cores / workers, >= 1
  std::string job_dir;  // empty = jobs/<UTC time>-<model>
  std::int64_t checkpoint_every_steps = 0;  // checkpoint every this many steps (0 = off)
  double checkpoint_every_s = 30;           // or every this many seconds (0 = off)
  int keep = 3;                             // checkpoints kept
  bool resume = false;                   // continue the job in job_dir from its latest checkpoint
  std::int64_t bucket_bytes = 25 << 20;  // all-reduce buckets after the first (1 MiB), fp32 bytes
  Compression compress = Compression::kNone;  // gradients on the wire: fp32, bf16 or fp16
  Precision precision = Precision::kFp32;     // the forward pass and loss: fp32, or bf16 autocast
  // The convolution weights' layout (models.h): auto = channels-last for the built-in ResNets.
  MemoryFormat memory_format = MemoryFormat::kAuto;
  // Where the workers train: a CUDA GPU where a worker's host has one (auto), or cpu or cuda (a
  // worker without a usable GPU then stops the job with the reason). Not a job setting: a
  // resumed job may run on other machines.
  Device device = Device::kAuto;

  // Elasticity (issue 3).
  double heartbeat_timeout_s = 5;  // a member silent this long is dropped from the job
  std::string bind = "127.0.0.1";  // address of the coordinator's front door (IPv4 or IPv6)
  int port = 0;                    // front door port (0 = any free port)
  // The live dashboard (/ and /metrics), HOST:PORT (port 0 = any free port); "off" = none.
  std::string dashboard = "127.0.0.1:0";
  // Not flags: the port and the dashboard above are a resumed job's journal's, each kept unless
  // another program takes it before the coordinator listens (CoordinatorOptions).
  bool port_or_another = false;
  bool dashboard_or_another = false;

  // Revocation injection into a local run (`transient train` only).
  std::vector<launch::RevokeRule> revoke;  // --revoke rules, e.g. kill@30s:rank0
  double replace_after_s = -1;  // start a replacement this long after each loss; < 0 = never
  int max_replacements = -1;    // ... at most this many in the job (-1 = no limit)
  // A market model drawing each worker's lifetime (--revocations, built by the CLI with its
  // --revocation-param parameters and data; null = none), and market seconds per second of the
  // run.
  std::shared_ptr<const market::RevocationModel> revocations;
  double time_scale = 3600;

  // What the workers' servers cost (`--catalog`, `--instance-type`, `--market`, resolved by the
  // CLI): each worker is billed per second from its admission until it leaves; 0 = unknown.
  std::string instance_type;   // e.g. n1-standard-4+k80
  std::string market;          // spot or on-demand
  double price_usd_per_h = 0;  // that type's price in that market

  // The job and launch settings given on the command line, by flag name ("--lr", "--workers",
  // ...): a resumed job takes its settings from its job directory and refuses a given one that
  // contradicts them; a launch setting given replaces the job's.
  std::vector<std::string> given_flags;
  // Whether `flag` ("--lr") was given on the command line.
  bool given(const std::string& flag) const {
    return std::find(given_flags.begin(), given_flags.end(), flag) != given_flags.end();
  }
};

struct WorkerOptions {
  std::string coordinator;  // HOST:PORT of the coordinator's front door
  std::string token_file;   // the job's token (mode 0600 in the job directory), or
  std::string token;        // the token itself
  std::string worker_id;    // a name unique in the job ("" = the coordinator gives one)
  int threads = 0;          // intra-op threads; 0 = what the coordinator says
  // Where its peers reach this worker (Gloo's data plane). Default: the local address of its
  // route to the coordinator.
  std::string advertise;  // an address of this host to advertise instead
  std::string interface;  // ... or a network interface whose address to use (GLOO_SOCKET_IFNAME)
  std::string data_dir;   // where this host holds the data set ("" = the job's path)
  std::string val_data;   // ... and the job's --val-data folder ("" = the job's path)
  // Which of the host's GPUs it trains on when the job's --device takes one: N modulo the GPUs
  // it sees (the local launcher gives its workers 0, 1, 2, ... in turn: one per GPU, sharing
  // them round-robin when there are more workers than GPUs).
  int gpu = 0;
  // Say nothing of the generations it joins or of how the job ended for it: `transient train`'s
  // workers, whose launcher prints the job's progress itself. Otherwise (by hand, from a script
  // or an orchestrator) it says both on stderr.
  bool quiet = false;
  // How long a coordinator that went away is waited for before the worker exits (kExitDropped):
  // training goes on meanwhile, but is kept only if it comes back. 0 = for ever.
  double coordinator_wait_s = kDefaultCoordinatorWaitS;
};

// Runs a whole job and prints where its records are. Returns the process exit code. The local
// workers start from `fork_server` when given (launch/fork_server.h), by exec otherwise.
int run_training(const TrainOptions& options, launch::ForkServer* fork_server = nullptr);

// The flag of each of the job's settings (job.json's "settings": "--model", "--lr", ...), which a
// resumed job takes from its job directory; a setting no command sets has one all the same.
std::vector<std::string> job_setting_flags();
// The flags of how a job is run (job.json's "launch": "--workers", "--checkpoint-every", the
// servers' prices, ...), which a resumed job takes from its job directory unless given again.
std::vector<std::string> launch_setting_flags();

// Runs a job's coordinator alone (`transient coordinator`): workers join it from anywhere with
// `transient worker --coordinator HOST:PORT --token-file F`. With a job directory that holds a
// journal (coordinator.json) it takes that job back. options.bind and options.dashboard "" (not
// given): the journal's front-door address and dashboard (off if it had none; its port for a job
// taken back while it runs), else loopback. options.port and `min_workers` -1 (not given): the
// journal's port and workers, else any free port and 1. Returns the process exit code.
int run_coordinator(const TrainOptions& options, int min_workers);

// Fills what the flags left empty from an orchestrator's environment, read through `getenv`
// (name -> value, "" if unset): the coordinator from TRANSIENT_COORDINATOR, else MASTER_ADDR and
// MASTER_PORT; the token from TRANSIENT_TOKEN when neither --token nor --token-file is given; the
// interface from GLOO_SOCKET_IFNAME when neither --interface nor --advertise is given. Throws
// InputError naming both ways if no coordinator is named at all, or MASTER_ADDR comes without
// MASTER_PORT.
void resolve_worker_environment(WorkerOptions& options,
                                const std::function<std::string(const char*)>& getenv);

// Runs one worker until the job is done or it leaves. Returns the process exit code.
int run_worker(const WorkerOptions& options);

// The models that can be trained: name and one-line description.
std::vector<std::pair<std::string, std::string>> model_catalog();

}  // namespace transient::train
