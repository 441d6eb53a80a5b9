// The `transient worker` process: joins a job through the coordinator's front door, then trains
// generation after generation: each one a fresh ProcessGroupGloo whose members first agree on the
// state (the most advanced member broadcasts it) and then train their shards of every step until
// the generation ends: by a failed collective (a member died or went silent: the interrupted step
// is redone), at a step boundary (a member leaves after a preemption notice, a worker joins), or
// with the job. The worker process is never restarted and never reloads from disk unless no
// member holds the state.
#include <signal.h>
#include <unistd.h>

#include <ATen/autocast_mode.h>
#include <ATen/record_function.h>
#include <torch/cuda.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <set>
#include <thread>

#include "transient/core/atomic_file.h"
#include "transient/core/error.h"
#include "transient/launch/batch_split.h"
#include "transient/records/job_files.h"
#include "transient/train/channel.h"
#include "transient/train/checkpoint.h"
#include "transient/train/coordinator_store.h"
#include "transient/train/cuda_support.h"
#include "transient/train/datasets.h"
#include "transient/train/gradient_buckets.h"
#include "transient/train/group_reaper.h"
#include "transient/train/image_folder.h"
#include "transient/train/models.h"
#include "transient/train/optimizer.h"
#include "transient/train/progress_line.h"
#include "transient/train/protocol.h"
#include "transient/train/rendezvous_store.h"
#include "transient/train/sharding.h"
#include "transient/train/step_trace.h"
#include "transient/train/token_proof.h"
#include "transient/train/trainer.h"
#include "transient/train/worker_connection.h"

namespace transient::train {
namespace {

// Whether this worker was started with SIGINT ignored: by `transient train`'s launcher (which
// turns Ctrl-C into a pause of the whole job), or as a background command of a script. Ctrl-C is
// then not the worker's to act on.
bool sigint_ignored() {
  struct sigaction current {};
  ::sigaction(SIGINT, nullptr, &current);
  return current.sa_handler == SIG_IGN;
}

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// This worker's rows of steps.csv (step_records.h), sent to the coordinator, which keeps them
// with the job's other records on its server.
std::string step_row(std::int64_t step, int rank, std::int64_t batch, double data_s,
                     double compute_s, double allreduce_s, double optimizer_s, double loss,
                     std::int64_t generation, std::int64_t sample_begin) {
  char line[256];
  std::snprintf(line, sizeof(line), "%lld,%d,%lld,%.6f,%.6f,%.6f,%.6f,%.6f,%lld,%lld",
                static_cast<long long>(step), rank, static_cast<long long>(batch), data_s,
                compute_s, allreduce_s, optimizer_s, loss, static_cast<long long>(generation),
                static_cast<long long>(sample_begin));
  return line;
}

// Tensors of one dtype as one flat tensor, and back into their shapes.
torch::Tensor flatten(const std::vector<torch::Tensor>& tensors) {
  std::vector<torch::Tensor> flat;
  for (const auto& tensor : tensors) flat.push_back(tensor.reshape(-1));
  return torch::cat(flat);
}

std::vector<torch::Tensor> unflatten(const torch::Tensor& flat,
                                     const std::vector<torch::Tensor>& like) {
  std::vector<torch::Tensor> parts;
  std::int64_t offset = 0;
  for (const auto& tensor : like) {
    parts.push_back(flat.narrow(0, offset, tensor.numel()).view(tensor.sizes()));
    offset += tensor.numel();
  }
  return parts;
}

OptimizerSettings optimizer_settings(const TrainOptions& options) {
  OptimizerSettings settings;
  settings.name = options.optimizer;
  settings.lr = options.lr;
  settings.momentum = options.momentum;
  settings.nesterov = options.nesterov;
  settings.weight_decay = options.weight_decay;
  settings.beta1 = options.beta1;
  settings.beta2 = options.beta2;
  settings.eps = options.eps;
  return settings;
}

// How a generation ended for this worker.
enum class Ending { kFinished, kStopped, kBoundary, kDiverged };

// Ends the profiler's range `phase` (if open) and opens one named `name`: the step's ranges in
// a trace (step_trace.h). Costs next to nothing when no profiler runs.
void next_phase(std::optional<at::RecordFunction>& phase, const char* name) {
  phase.emplace(at::RecordScope::USER_SCOPE);
  if (phase->isActive()) phase->before(name);
}

// The job's --precision for what runs in its scope (the forward pass and the loss): bf16 (fp16)
// turns on autocast in bfloat16 (float16) for the model's device (the CPU or CUDA), which runs
// matrix products and convolutions in that type and keeps reductions, softmax and the losses in
// fp32, as torch.autocast does; the parameters stay fp32 and backward gives fp32 gradients. fp32
// leaves everything as it is. Autocast's state is the thread's, and its cache of cast weights is
// cleared when the scope ends (the weights change at every step).
class AutocastScope {
 public:
  AutocastScope(Precision precision, torch::Device device)
      : enabled_(precision != Precision::kFp32), type_(device.type()) {
    if (!enabled_) return;
    was_enabled_ = at::autocast::is_autocast_enabled(type_);
    was_dtype_ = at::autocast::get_autocast_dtype(type_);
    at::autocast::set_autocast_enabled(type_, true);
    at::autocast::set_autocast_dtype(type_,
                                     precision == Precision::kFp16 ? at::kHalf : at::kBFloat16);
    at::autocast::increment_nesting();
  }
  ~AutocastScope() {
    if (!enabled_) return;
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    at::autocast::set_autocast_enabled(type_, was_enabled_);
    at::autocast::set_autocast_dtype(type_, was_dtype_);
  }
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  bool enabled_;
  at::DeviceType type_;
  bool was_enabled_ = false;
  at::ScalarType was_dtype_ = at::kBFloat16;
};

// The device a worker trains on (--device; --gpu picks among the host's GPUs). Throws InputError
// for --device cuda on a host without a usable GPU, saying why.
torch::Device training_device(Device wanted, int gpu) {
  if (wanted == Device::kCpu) return torch::kCPU;
  const int gpus = wanted == Device::kAuto ? usable_gpus() : require_usable_gpus();
  if (gpus == 0) return torch::kCPU;
  return {torch::kCUDA, static_cast<c10::DeviceIndex>(gpu % gpus)};
}

// Host copies of a GPU's tensors for checkpoints, in one pinned buffer reused from snapshot to
// snapshot once the writer no longer holds the last snapshot's tensors (views into it). Pinning
// memory (cudaHostAlloc) costs more than the copies: a ResNet-50's state (parameters and
// momentum, 200 MB) pinned tensor by tensor stalled the step 110-150 ms, and far more while the
// writer still held the previous one (docs/benchmarks.md, "GPUs").
class SnapshotArena {
 public:
  // Views into the buffer holding `tensors`, each filled by a copy that does not wait:
  // synchronise the device before reading them.
  std::vector<torch::Tensor> copy(const std::vector<torch::Tensor>& tensors) {
    constexpr std::int64_t kAlign = 64;  // every view starts aligned for any element type
    std::vector<std::int64_t> offsets;
    std::int64_t bytes = 0;
    for (const auto& tensor : tensors) {
      offsets.push_back(bytes);
      bytes += (static_cast<std::int64_t>(tensor.nbytes()) + kAlign - 1) / kAlign * kAlign;
    }
    if (!buffer_.defined() || buffer_.numel() < bytes || buffer_.storage().use_count() > 1) {
      buffer_ = torch::empty({std::max<std::int64_t>(bytes, 1)},
                             torch::TensorOptions(torch::kUInt8).pinned_memory(true));
    }
    std::vector<torch::Tensor> copies;
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      const auto& tensor = tensors[i];
      auto view = buffer_.narrow(0, offsets[i], static_cast<std::int64_t>(tensor.nbytes()))
                      .view(tensor.scalar_type())
                      .view(tensor.sizes());
      view.copy_(tensor.detach(), /*non_blocking=*/true);
      copies.push_back(std::move(view));
    }
    return copies;
  }

 private:
  torch::Tensor buffer_;  // uint8, pinned
};

// A copy of `tensor` in host memory (a new tensor also when it is there already). From a GPU it
// goes to pinned memory without waiting: synchronise the device before reading it.
torch::Tensor host_copy(const torch::Tensor& tensor) {
  if (tensor.is_cpu()) return tensor.detach().clone();
  auto host =
      torch::empty(tensor.sizes(), tensor.options().device(torch::kCPU).pinned_memory(true));
  host.copy_(tensor.detach(), /*non_blocking=*/true);
  return host;
}

class Worker {
 public:
  // The worker's Gloo device listens on `interface` if given, else on the address `advertise`.
  // It reads the data set from `data_dir` ("" = the job's path), traces the steps `traced` names
  // (step_trace.h), and says on stderr when it joins a generation and how the job ended for it
  // unless `quiet`.
  Worker(Connection& connection, int threads, std::string advertise, std::string interface,
         const std::string& data_dir, int gpu, std::optional<TraceSteps> traced, bool quiet)
      : connection_(connection),
        advertise_(std::move(advertise)),
        interface_(std::move(interface)),
        job_(connection.job()),
        options_(job_.options),
        announces_(!quiet) {
    if (!data_dir.empty()) job_.options.data_dir = data_dir;
    torch::set_num_threads(std::max(1, threads > 0 ? threads : options_.threads));
    torch::manual_seed(options_.seed);
    data_ =
        load_dataset(options_.dataset, options_.data_dir,
                     DataOptions{options_.image_size, options_.val_data, options_.image_mean,
                                 options_.image_std, options_.train_subset, options_.test_subset});
    if (data_.from_files()) {
      data_.transform.seed = options_.seed;
      data_.transform.augment = options_.augment;
      loader_ = std::make_unique<ImageLoader>(data_.transform, options_.loader_threads);
    } else {
      data_.train.images = data_.train.images.narrow(0, 0, job_.train_samples);
      data_.train.labels = data_.train.labels.narrow(0, 0, job_.train_samples);
    }
    if (options_.test_subset > 0 && options_.test_subset < data_.test_size()) {
      test_samples_ = options_.test_subset;
    } else {
      test_samples_ = data_.test_size();
    }
    if (!data_.from_files() && test_samples_ < data_.test.labels.size(0)) {
      data_.test.images = data_.test.images.narrow(0, 0, test_samples_);
      data_.test.labels = data_.test.labels.narrow(0, 0, test_samples_);
    }
    if (!options_.model_sha256.empty()) {
      const std::string mine = file_sha256(options_.model);
      if (mine != options_.model_sha256) {
        throw InputError(options_.model, 0,
                         "--model: this worker's copy differs from the coordinator's (SHA-256 " +
                             mine + " here, " + options_.model_sha256 +
                             " there); every worker needs the same model file at this path");
      }
    }
    device_ = training_device(options_.device, gpu);
    if (device_.is_cuda()) {
      print_line("transient worker %s: training on %s\n", connection_.id().c_str(),
                 device_.str().c_str());
      const auto channels = static_cast<std::int64_t>(data_.mean.size());
      mean_ = torch::tensor(data_.mean, torch::kFloat32).view({1, channels, 1, 1}).to(device_);
      stdev_ = torch::tensor(data_.stdev, torch::kFloat32).view({1, channels, 1, 1}).to(device_);
    }
    model_ = make_model(options_.model, data_.shape);  // initialised on the CPU: the same anywhere
    model_->to(device_);
    if (channels_last(*model_, options_.memory_format)) to_channels_last(*model_);
    model_->train();
    for (const auto& item : model_->named_parameters()) {
      parameter_names_.push_back(item.key());
      parameters_.push_back(item.value());
    }
    optimizer_ = std::make_unique<Optimizer>(optimizer_settings(options_), parameters_);
    buckets_ =
        std::make_unique<GradientBuckets>(parameters_, options_.bucket_bytes, options_.compress);
    if (traced) {
      const char* dir = std::getenv("TRANSIENT_TRACE_DIR");
      const std::string name = "trace-" + connection_.id() + ".json";
      trace_.emplace(
          *traced,
          dir != nullptr && *dir != '\0' ? (std::filesystem::path(dir) / name).string() : name,
          device_.is_cuda());
    }
  }

  // A worker not --quiet says how the job ended for it: finished, or ended early by its coordinator
  // (a pause, which goes on when the coordinator is started again, or a failure it names).
  void say_the_job_ended() const {
    if (!announces_) return;
    if (step_ >= job_.total_steps) {
      print_line("transient worker %s: the job has finished (step %lld)\n",
                 connection_.id().c_str(), static_cast<long long>(step_));
    } else {
      print_line(
          "transient worker %s: the coordinator ended the job after step %lld of %lld "
          "(a pause goes on when the coordinator is started again and workers join "
          "it; its output says which)\n",
          connection_.id().c_str(), static_cast<long long>(step_),
          static_cast<long long>(job_.total_steps));
    }
  }

  // Trains until the job ends or this worker leaves. Returns the process exit code.
  int run() {
    std::int64_t last_generation = -1;
    for (;;) {
      std::string why;
      connection_.set_phase(Connection::Phase::kWaiting);
      const auto config = connection_.next_generation(last_generation, why);
      if (!config) {
        finish_writer();
        if (why == "the job has ended") {
          say_the_job_ended();
          return 0;
        }
        if (why == "signalled") {
          // A preemption notice (or Ctrl-C) between generations: no step to finish, but the state
          // this worker holds may be the job's only copy newer than its last checkpoint (the
          // other members may be leaving too: two notices a few milliseconds apart end two
          // generations, and the second leaves no survivor), so it goes to the coordinator's
          // disk first, once (a coordinator away does not hold up the leaving).
          const std::string reason = leave_signal() == SIGINT ? "stopped" : "preempted";
          store_state_on_leaving();
          connection_.leave(reason);
          print_line("transient worker %s: left the job between generations (%s)\n",
                     connection_.id().c_str(), reason.c_str());
          return 0;
        }
        print_line("transient worker %s: %s; exiting\n", connection_.id().c_str(), why.c_str());
        return kExitDropped;
      }
      last_generation = config->generation;
      const auto member =
          std::find(config->members.begin(), config->members.end(), connection_.id());
      if (member == config->members.end()) continue;  // not ours; the next one may be
      config_ = *config;
      rank_ = static_cast<int>(member - config->members.begin());
      world_size_ = static_cast<int>(config->members.size());
      if (announces_) {
        print_line("transient worker %s: generation %lld, rank %d of %d, from step %lld\n",
                   connection_.id().c_str(), static_cast<long long>(config_.generation), rank_,
                   world_size_, static_cast<long long>(config_.start_step));
      }
      connection_.set_state({{"gen", config_.generation}, {"reported", false}});
      std::int64_t attempted = step_;
      bool formed = false;
      try {
        connection_.set_phase(Connection::Phase::kForming);
        form_group();
        formed = true;
        // The group exists (its members reached each other); agreeing on the state may take a
        // while yet (a broadcast, a checkpoint fetched), and a pause now waits for its boundary.
        if (rank_ == 0) send_report(message::Report::Kind::kGrouped);
        connection_.set_phase(Connection::Phase::kAgreeing);
        agree_on_state();
        connection_.set_phase(Connection::Phase::kTraining);
        attempted = step_;
        if (rank_ == 0) {
          send_report(message::Report::Kind::kFormed, step_);
        }
        const Ending ending = train_generation(attempted);
        if (ending == Ending::kDiverged) {
          finish_writer();  // the good states handed to the writer are kept
          const std::string loss = std::isnan(diverged_loss_) ? "nan"
                                   : diverged_loss_ > 0       ? "inf"
                                                              : "-inf";
          message::Report diverged = new_report(message::Report::Kind::kDiverged, step_ + 1);
          diverged.loss = loss;
          print_line("transient worker %s: the training loss became %s at step %lld\n",
                     connection_.id().c_str(), loss.c_str(), static_cast<long long>(step_ + 1));
          if (options_.on_divergence == OnDivergence::kRollback) {
            connection_.send(diverged);
            // The coordinator rolls the job back to a checkpoint (or ends it after the last
            // rollback): this worker's state is not one to go on from.
            group_.reset();
            holds_state_ = false;
            rolled_back_ = true;
            report("failed", -1, step_ + 1, false, "diverged");
            continue;
          }
          connection_.finish(diverged, "stopped");  // said again to a restarted coordinator
          group_.reset();
          std::string ignored;
          connection_.next_generation(config_.generation, ignored);
          return kExitDiverged;
        }
        if (ending == Ending::kBoundary) {
          const bool leaving = leave_signal() != 0;
          const std::string reason = leave_signal() == SIGINT ? "stopped" : "preempted";
          if (leaving && everyone_leaves_ && writer_) {
            // The last workers leave: the state goes to disk before they exit.
            writer_->submit(snapshot());
          }
          finish_writer();
          // A notice that came after the step's sum: the members leaving with theirs counted this
          // one as staying, so none of them stored the state.
          if (leaving && !counted_leaving_) store_state_on_leaving();
          report("boundary", step_, step_, leaving, reason);
          if (leaving) {
            connection_.leave(reason);
            // The launcher of a --quiet worker says that it left.
            if (announces_) {
              print_line("transient worker %s: left the job after step %lld (%s)\n",
                         connection_.id().c_str(), static_cast<long long>(step_), reason.c_str());
            }
            return 0;
          }
          group_.reset();
          continue;
        }
        finish_writer();
        if (rank_ == 0) store_final_checkpoint();
        message::Report done = new_report(message::Report::Kind::kDone);
        done.result = result_;
        connection_.finish(done, "stopped");
        group_.reset();
        // Wait for the coordinator to see every member done (or to drop this worker).
        std::string ignored;
        connection_.next_generation(config_.generation, ignored);
        say_the_job_ended();
        return 0;
      } catch (const CollectiveFailure& failure) {
        // A peer died or went silent (or its group broke first): tear the group down, which
        // closes this worker's connections so that peers still waiting on it fail at once too,
        // and report the step held. The reaper does it: a wait given up on the coordinator's
        // word leaves collectives running, whose end the group's destructor would wait for.
        reaper_.take(std::move(group_));
        if (connection_.dropped()) {
          abandon_writer();  // the new rank 0 writes from now on
        } else {
          finish_writer_quietly();
        }
        const bool leaving = leave_signal() != 0;
        const std::string reason = !leaving                   ? "failed"
                                   : leave_signal() == SIGINT ? "stopped"
                                                              : "preempted";
        // A group that could not form: which peers can this worker not reach at all?
        const auto unreachable = formed ? std::vector<std::string>{} : unreachable_members();
        std::string named;
        for (const auto& id : unreachable) {
          named += (named.empty() ? "; it cannot reach " : ", ") + id + " at " + probe_of(id);
        }
        report("failed", holds_state_ ? step_ : -1, std::max(attempted, step_), leaving, reason,
               unreachable, failure.what());
        // The coordinator records it (a generation_failed event); a --quiet worker's launcher
        // says what was lost.
        if (announces_) {
          print_line("transient worker %s: generation %lld failed (%s%s)\n",
                     connection_.id().c_str(), static_cast<long long>(config_.generation),
                     failure.what(), named.c_str());
        }
        if (leaving) {
          store_state_on_leaving();  // the peers that failed with it may all be leaving too
          connection_.leave(reason);
          return 0;
        }
      } catch (const std::exception& error) {
        // Not a lost peer: an error of the job itself (a checkpoint that cannot be written or
        // read, a state that does not fit the model), which the next member would meet in turn.
        // The coordinator stops the job with it instead of re-forming around this worker.
        abandon_writer_quietly();
        message::Report fatal = new_report(message::Report::Kind::kFatal);
        fatal.error = error.what();
        connection_.send(fatal);
        connection_.leave("failed");
        group_.reset();
        print_line("transient worker %s: %s; the job stops\n", connection_.id().c_str(),
                   error.what());
        std::string ignored;
        connection_.next_generation(config_.generation, ignored);
        return kExitFailed;
      }
    }
  }

 private:
  message::Report new_report(message::Report::Kind kind, std::int64_t step = -1) const {
    message::Report report;
    report.kind = kind;
    report.gen = config_.generation;
    report.step = step;
    return report;
  }
  void send_report(message::Report::Kind kind, std::int64_t step = -1) {
    connection_.send(new_report(kind, step));
  }

  // `error`: what failed the generation (a failed report), for the coordinator's records.
  void report(const std::string& what, std::int64_t held, std::int64_t attempted, bool leaving,
              const std::string& reason, const std::vector<std::string>& unreachable = {},
              const std::string& error = "") {
    message::Report message = new_report(
        what == "boundary" ? message::Report::Kind::kBoundary : message::Report::Kind::kFailed,
        held);
    message.attempted = attempted;
    message.leaving = leaving;
    message.reason = reason;
    message.cause = reason;
    message.unreachable = unreachable;
    message.error = error;
    connection_.report(message, {{"gen", config_.generation},
                                 {"reported", true},
                                 {"step", held},
                                 {"attempted", attempted},
                                 {"leaving", leaving},
                                 {"cause", reason}});
  }

  void form_group() {
    connection_.set_forming(config_.generation);
    try {
      // The rendezvous keys travel on this worker's authenticated connection to the coordinator
      // (coordinator_store.h); there is no open store port.
      const auto timeout = std::chrono::milliseconds(
          static_cast<std::int64_t>(1000 * std::max(10.0, 2 * options_.heartbeat_timeout_s)));
      auto store = c10::make_intrusive<CoordinatorStore>(connection_, timeout);
      auto prefixed = c10::make_intrusive<c10d::PrefixStore>(
          generation_prefix(config_.generation) + "pg", store);
      // Collectives time out after the heartbeat timeout: a silent member makes its peers' step
      // fail in that time, as the coordinator drops it.
      auto pg_options = c10d::ProcessGroupGloo::Options::create(std::chrono::milliseconds(
          static_cast<std::int64_t>(1000 * options_.heartbeat_timeout_s)));
      pg_options->devices.push_back(
          interface_.empty() ? c10d::ProcessGroupGloo::createDeviceForHostname(advertise_)
                             : c10d::ProcessGroupGloo::createDeviceForInterface(interface_));
      group_ = make_gloo_group(prefixed, rank_, world_size_, pg_options);
    } catch (const std::exception& error) {
      std::string what = error.what();
      what = what.substr(0, what.find('\n'));
      throw CollectiveFailure(
          "forming generation " + std::to_string(config_.generation) + ": " + what +
          "; this worker listens for its peers on " +
          (interface_.empty() ? advertise_ : "interface " + interface_) +
          " (a peer that cannot be reached should name a reachable address of its own with "
          "--advertise ADDR or --interface IFNAME)");
    }
  }

  // The members whose reachability probe this worker cannot connect to (one second each).
  std::vector<std::string> unreachable_members() const {
    std::vector<std::string> unreachable;
    for (std::size_t r = 0; r < config_.members.size() && r < config_.probes.size(); ++r) {
      if (static_cast<int>(r) == rank_ || config_.probes[r].empty()) continue;
      try {
        if (!LineChannel::connect(parse_endpoint(config_.probes[r], "probe"), 1.0)) {
          unreachable.push_back(config_.members[r]);
        }
      } catch (const InputError&) {
      }
    }
    return unreachable;
  }

  std::string probe_of(const std::string& id) const {
    for (std::size_t r = 0; r < config_.members.size() && r < config_.probes.size(); ++r) {
      if (config_.members[r] == id) return config_.probes[r];
    }
    return "?";
  }

  void broadcast(std::vector<torch::Tensor> tensors, int source) {
    c10d::BroadcastOptions options;
    options.rootRank = source;
    std::vector<c10::intrusive_ptr<c10d::Work>> works{group_->broadcast(tensors, options)};
    wait_all(works, aborted_);
  }

  // The members agree on the step they hold; if they differ, the most advanced (lowest rank
  // among them) broadcasts its whole state. If no member holds a state, all load the generation's
  // checkpoint (or take the job's seeded initial state).
  void agree_on_state() {
    resume_.reset();
    // Each member's step, and the samples of the next step whose gradient it kept (count -1:
    // none).
    const bool kept = kept_ && holds_state_ && kept_->step == step_;
    std::vector<std::vector<torch::Tensor>> gathered(1);
    for (int r = 0; r < world_size_; ++r) gathered[0].push_back(torch::zeros({3}, torch::kInt64));
    std::vector<torch::Tensor> mine{torch::tensor(
        {holds_state_ ? step_ : -1, kept ? kept_->range.begin : 0, kept ? kept_->range.count : -1},
        torch::kInt64)};
    std::vector<c10::intrusive_ptr<c10d::Work>> works{group_->allgather(gathered, mine)};
    wait_all(works, aborted_);
    std::vector<std::int64_t> steps;
    std::vector<launch::SampleRange> kept_ranges;
    for (const auto& t : gathered[0]) {
      steps.push_back(t[0].item<std::int64_t>());
      kept_ranges.push_back({t[1].item<std::int64_t>(), t[2].item<std::int64_t>()});
    }
    const std::int64_t most = *std::max_element(steps.begin(), steps.end());
    const bool all_equal =
        std::all_of(steps.begin(), steps.end(), [&](auto s) { return s == most; });
    if (most >= 0 && all_equal) resume_interrupted_step(kept_ranges);
    if (!resume_) kept_.reset();  // a state received, or a step begun afresh: not needed
    if (most < 0) {
      if (!config_.checkpoint.empty()) {
        load_checkpoint();
      } else if (rolled_back_) {
        initial_state();  // a rollback with no checkpoint before the divergence
      }
      rolled_back_ = false;
      step_ = config_.start_step < 0 ? 0 : config_.start_step;
      holds_state_ = true;
      return;
    }
    if (all_equal) return;
    const int source =
        static_cast<int>(std::find(steps.begin(), steps.end(), most) - steps.begin());
    torch::NoGradGuard no_grad;
    // Everything is received into temporaries and committed only once the last broadcast has
    // succeeded: a source lost half-way leaves this member's state and step as they were.
    // Over Gloo from host memory, also from a GPU.
    auto flat = flatten(parameters_).to(torch::kCPU);
    broadcast({flat}, source);
    auto slots = optimizer_->state();
    for (auto& slot : slots) {  // one flat tensor per slot: AdamW's step counts are integers
      auto flat_slot = flatten(slot.tensors).to(torch::kCPU);
      broadcast({flat_slot}, source);
      slot.tensors = unflatten(flat_slot, slot.tensors);
    }
    std::vector<torch::Tensor> buffers;
    for (auto& item : model_->named_buffers()) buffers.push_back(host_copy(item.value()));
    synchronize();
    for (auto& buffer : buffers) broadcast({buffer}, source);
    auto generator = at::detail::getDefaultCPUGenerator();
    torch::Tensor rng;
    {
      std::lock_guard<std::mutex> lock(generator.mutex());
      rng = generator.get_state().clone();
    }
    broadcast({rng}, source);
    auto scale =
        torch::tensor({loss_scale_, static_cast<double>(loss_scale_steps_)}, torch::kFloat64);
    if (options_.precision == Precision::kFp16) broadcast({scale}, source);
    if (rank_ != source) {
      loss_scale_ = scale[0].item<double>();
      loss_scale_steps_ = static_cast<std::int64_t>(scale[1].item<double>());
      const auto received = unflatten(flat, parameters_);
      for (std::size_t p = 0; p < parameters_.size(); ++p) parameters_[p].copy_(received[p]);
      optimizer_->set_state(slots);  // the same layout on every member: it fits
      std::size_t i = 0;
      for (auto& item : model_->named_buffers()) item.value().copy_(buffers[i++]);
      std::lock_guard<std::mutex> lock(generator.mutex());
      generator.set_state(rng);
    }
    step_ = most;
    holds_state_ = true;
  }

  // Members that all hold the same state and each kept its gradient of its own samples of the
  // next step (a generation failed in that step's sum: a member was lost) resume that step
  // instead of redoing it: each computes only some of the samples nobody kept (the lost
  // members'), beside its own (launch::lost_shares), into the gradient it kept. Sets resume_, or
  // leaves it empty when any member kept nothing (a joiner, a sum that reached the buckets).
  void resume_interrupted_step(const std::vector<launch::SampleRange>& kept_ranges) {
    for (const auto& range : kept_ranges) {
      if (range.count < 0) return;
    }
    const auto position = position_of_step(step_, job_.train_samples, options_.global_batch);
    const auto shares = launch::lost_shares({position.cursor, position.batch}, kept_ranges);
    if (!shares) return;
    resume_ = (*shares)[static_cast<std::size_t>(rank_)];
    resumed_kept_ = 0;
    for (const auto& range : kept_ranges) resumed_kept_ += range.count;
  }

  // Trains steps until the generation ends. `attempted` is set to the step being worked on, so
  // that a failure reports what was interrupted.
  Ending train_generation(std::int64_t& attempted) {
    if (rank_ == 0 && !writer_) {
      // Checkpoints go to the coordinator's job directory (its server is the stable one), which
      // records them when they are stored.
      writer_ = std::make_unique<CheckpointWriter>(
          [this](const CheckpointState& state) {
            const auto stored =
                connection_.send_checkpoint(state.step, serialize_checkpoint(state));
            if (!stored) {
              print_line(
                  "transient worker %s: the checkpoint of step %lld was not stored (the "
                  "coordinator is away)\n",
                  connection_.id().c_str(), static_cast<long long>(state.step));
            } else {
              stored_step_ = state.step;
            }
            return stored.value_or(CheckpointRecord{});
          },
          nullptr);
      last_checkpoint_step_ = step_;
      since_checkpoint_s_ = config_.since_checkpoint_s;
    }
    if (rank_ != 0) finish_writer();
    bool first_step = true;
    while (step_ < job_.total_steps) {
      if (connection_.dropped() || connection_.abort_signalled(config_.generation)) {
        throw CollectiveFailure("the coordinator ended generation " +
                                std::to_string(config_.generation));
      }
      attempted = step_ + 1;
      if (trace_) trace_->before(step_ + 1);
      std::optional<at::RecordFunction> step_scope;
      next_phase(step_scope, "transient::step");
      const auto position = position_of_step(step_, job_.train_samples, options_.global_batch);
      auto phase_start = Clock::now();
      std::optional<at::RecordFunction> phase;
      next_phase(phase, "transient::data");
      // A resumed step (resume_interrupted_step): the buckets hold the gradient of the samples
      // kept, and this member computes those of its lost share only.
      const bool resuming = resume_ && kept_;
      const KeptStep resumed = resuming ? *kept_ : KeptStep{};
      Shard shard = shard_of_step(position);  // the samples whose gradient this member sends
      std::vector<Shard> computed{shard};     // those computed now
      if (resuming) {
        const auto& kept = resumed.range;
        shard = Shard{kept.begin - resume_->before, kept.count + resume_->before + resume_->after};
        computed = {Shard{shard.begin, resume_->before}, Shard{kept.end(), resume_->after}};
      }
      resume_.reset();
      kept_.reset();
      std::int64_t computed_count = 0;
      for (const auto& part : computed) computed_count += part.count;
      torch::Tensor images;
      torch::Tensor labels;
      if (computed_count > 0 && loader_) {
        auto batch = take_batch(position.epoch, computed);
        images = std::move(batch.images);
        labels = std::move(batch.labels);
        report_skipped(batch.skipped);
      } else if (computed_count > 0) {
        auto index = torch::tensor(sample_indices(position.epoch, computed), torch::kInt64);
        if (device_.is_cuda()) {  // gathered straight into pinned memory, whence it is copied
          auto sizes = data_.train.images.sizes().vec();
          sizes[0] = index.size(0);
          images = torch::empty(sizes, data_.train.images.options().pinned_memory(true));
          torch::index_select_out(images, data_.train.images, 0, index);
        } else {
          images = data_.train.images.index_select(0, index);
        }
        labels = data_.train.labels.index_select(0, index);
      }
      if (computed_count > 0) std::tie(images, labels) = on_device(images, labels, !loader_);
      if (loader_ && step_ + 1 < job_.total_steps) {
        // The next step's samples are decoded while this one computes (the members and their
        // shares stay unless the generation ends, and then the guess is dropped).
        const auto next = position_of_step(step_ + 1, job_.train_samples, options_.global_batch);
        const Shard next_shard = shard_of_step(next);
        if (next_shard.count > 0) prefetch(next.epoch, next_shard);
      }
      const double data_s = seconds_since(phase_start);
      next_phase(phase, "transient::forward_backward");

      // Backward all-reduces each bucket of gradients as soon as it is complete
      // (gradient_buckets.h); what is left of the all-reduce after backward is `allreduce_s`.
      phase_start = Clock::now();
      buckets_->begin(group_, resuming);
      const bool stop_requested = rank_ == 0 && connection_.stop_signalled(config_.generation);
      const bool leave = leave_signal() != 0;
      counted_leaving_ = leave;
      const bool change = rank_ == 0 && connection_.change_signalled(config_.generation);
      buckets_->control()[1] = stop_requested ? 1.0 : 0.0;
      buckets_->control()[2] = change ? 1.0 : 0.0;
      buckets_->control()[3] = leave ? 1.0 : 0.0;
      double local_loss = resumed.loss;
      buckets_->control()[0] = local_loss;
      if (computed_count > 0 && labels.size(0) > 0) {
        torch::Tensor loss;
        {
          AutocastScope precision(options_.precision, device_);
          auto scores = model_->forward(images);
          // Summed over the shard and divided by the global batch: the all-reduced sum is then
          // exactly the mean gradient of the global batch, whatever the split.
          loss = summed_loss(scores, labels) / static_cast<double>(position.batch);
        }
        local_loss += loss.item<double>();
        buckets_->control()[0] = local_loss;  // before backward: it goes with the first bucket
        if (options_.precision == Precision::kFp16) {
          // Scaled, so that small gradients survive fp16; unscaled after the sum.
          (loss * loss_scale_).backward();
        } else {
          loss.backward();
        }
      }
      const double compute_s = seconds_since(phase_start);
      if (computed_count > 0 && compute_s > 0) {
        const double speed = static_cast<double>(computed_count) / compute_s;
        speed_ = speed_ > 0 ? 0.8 * speed_ + 0.2 * speed : speed;
        connection_.set_speed(speed_);
      }
      // What this step has cost this member so far, for its row (a resumed step: with the part
      // done in the generation that failed).
      const double step_data_s = data_s + resumed.data_s;
      const double step_compute_s = compute_s + resumed.compute_s;

      next_phase(phase, "transient::allreduce");
      phase_start = Clock::now();
      try {
        buckets_->finish(aborted_);
      } catch (const CollectiveFailure&) {
        // A member lost in the sum: if the buckets still hold this member's gradient, the next
        // generation can resume the step from it.
        if (buckets_->holds_own_gradients()) {
          kept_ =
              KeptStep{step_, {shard.begin, shard.count}, local_loss, step_data_s, step_compute_s};
        }
        throw;
      }
      const double allreduce_s = seconds_since(phase_start);
      // The loss is all-reduced: every member sees the same value and stops at the same step,
      // before a NaN or infinite gradient reaches the parameters.
      if (const double summed = buckets_->control()[0].item<double>(); !std::isfinite(summed)) {
        diverged_loss_ = summed;
        attempted = step_;
        return Ending::kDiverged;
      }

      next_phase(phase, "transient::optimizer");
      phase_start = Clock::now();
      // fp16: the summed gradient unscaled; one that overflowed changes nothing and the scale
      // falls (every member sees the same sum, and decides the same).
      const bool overflowed = options_.precision == Precision::kFp16 && !unscale_gradients();
      if (options_.clip_grad_norm > 0 && !overflowed) {
        // The summed gradient is the same on every member: so is its norm, and the clipping.
        torch::nn::utils::clip_grad_norm_(parameters_, options_.clip_grad_norm);
      }
      const double lr = learning_rate_at(step_, job_.total_steps, job_.warmup_steps,
                                         options_.lr * config_.lr_scale, options_.schedule);
      if (!overflowed) optimizer_->step(lr);
      const double optimizer_s = seconds_since(phase_start);
      phase.reset();
      step_scope.reset();
      if (trace_) trace_->after(step_ + 1);
      if (overflowed && rank_ == 0) {
        connection_.send(message::Event{
            {{"event", "fp16_overflow"}, {"step", step_ + 1}, {"loss_scale", loss_scale_}}});
      }

      ++step_;
      since_checkpoint_s_ += data_s + compute_s + allreduce_s + optimizer_s;
      const double loss = buckets_->control()[0].item<double>();
      connection_.record_row(step_row(step_, rank_, shard.count, step_data_s, step_compute_s,
                                      allreduce_s, optimizer_s, loss, config_.generation,
                                      shard.begin));
      if (resuming && rank_ == 0) {
        connection_.send(message::Event{{{"event", "step_resumed"},
                                         {"gen", config_.generation},
                                         {"step", step_},
                                         {"kept_samples", resumed_kept_},
                                         {"recomputed_samples", position.batch - resumed_kept_}}});
      }
      const bool stop = buckets_->control()[1].item<double>() > 0 ||
                        (options_.stop_at_step > 0 && step_ >= options_.stop_at_step);
      const double leaving = buckets_->control()[3].item<double>();
      const bool boundary = buckets_->control()[2].item<double>() > 0 || leaving > 0;
      everyone_leaves_ = leaving >= world_size_;
      attempted = step_;
      if (rank_ == 0 && first_step) {
        send_report(message::Report::Kind::kStepped, step_);
      }
      first_step = false;

      const bool epoch_end = position.cursor + position.batch >= job_.train_samples;
      if (epoch_end) {
        std::tie(result_.test_accuracy, result_.test_loss) = evaluate();
        evaluated_at_ = step_;
        if (rank_ == 0) {
          connection_.send(message::Event{{{"event", "epoch"},
                                           {"epoch", position.epoch + 1},
                                           {"step", step_},
                                           {"train_loss", loss},
                                           {"test_accuracy", result_.test_accuracy},
                                           {"test_loss", result_.test_loss},
                                           {"members_agree", members_agree_}}});
        }
      }
      if (writer_) {
        const bool due_by_steps =
            options_.checkpoint_every_steps > 0 && step_ % options_.checkpoint_every_steps == 0;
        // By time: seconds of training since the job's last checkpoint, carried from generation
        // to generation, so that frequent membership changes cannot put checkpoints off.
        const bool due_by_time =
            options_.checkpoint_every_s > 0 && since_checkpoint_s_ >= options_.checkpoint_every_s;
        if (due_by_steps || due_by_time) {
          // The step's stall: the state copied (off the GPU: into pinned host memory); the
          // writer serialises and stores it while training goes on.
          const auto snapshot_start = Clock::now();
          writer_->submit(snapshot());
          connection_.send(message::Event{{{"event", "checkpoint_snapshot"},
                                           {"step", step_},
                                           {"device", device_.str()},
                                           {"seconds", seconds_since(snapshot_start)}}});
          last_checkpoint_step_ = step_;
          since_checkpoint_s_ = 0;
        }
      }
      if (rank_ == 0) {
        // After the checkpoint decision, so that the training time since the last checkpoint
        // it carries is the one the next generation starts counting from.
        connection_.send(message::Progress{
            ProgressReport{step_, position.epoch, loss, lr, since_checkpoint_s_}});
      }
      if (stop) break;
      if (boundary && step_ < job_.total_steps) return Ending::kBoundary;
    }
    result_.step = step_;
    result_.stopped = step_ < job_.total_steps;
    if (!result_.stopped && evaluated_at_ != step_) {
      std::tie(result_.test_accuracy, result_.test_loss) = evaluate();
      evaluated_at_ = step_;
    }
    if (writer_ && (last_checkpoint_step_ != step_ || step_ == 0)) {
      // The last state is always kept, so a finished or paused job can be continued or read.
      writer_->submit(snapshot());
      last_checkpoint_step_ = step_;
    }
    return result_.stopped ? Ending::kStopped : Ending::kFinished;
  }

  // Only one member writes checkpoints at a time: a writer that stops being rank 0 (or whose
  // generation ended) finishes what it was given first.
  void finish_writer() {
    if (!writer_) return;
    writer_->wait();
    writer_.reset();
  }

  // The job's last state, which its writer could not store because the coordinator was away
  // (its workers trained on and finished without it): sent again every quarter of a second
  // until the worker has re-joined a restarted coordinator and it is stored, or the worker is
  // dropped. A job's result is its final checkpoint; it is not left on a worker.
  void store_final_checkpoint() {
    if (stored_step_ == step_) return;
    const auto bytes = serialize_checkpoint(snapshot());
    while (!connection_.dropped() && !store_state(bytes)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
  }

  // Sends `bytes`, the state held at step_, to the coordinator's disk; true once it is stored.
  bool store_state(const std::vector<char>& bytes) {
    if (!connection_.send_checkpoint(step_, bytes)) return false;
    stored_step_ = step_;
    print_line("transient worker %s: the checkpoint of step %lld is stored\n",
               connection_.id().c_str(), static_cast<long long>(step_));
    return true;
  }

  // A worker leaving on a notice that the other members may not know of (it came between
  // generations, or after the step's sum) stores the state it holds, once, unless it stored that
  // step already: it may be the job's only copy newer than its last checkpoint (the others may
  // be leaving too: two notices a few milliseconds apart end two generations, and the second
  // leaves no survivor). A coordinator away does not hold up the leaving.
  void store_state_on_leaving() {
    if (!holds_state_ || stored_step_ == step_) return;
    try {
      store_state(serialize_checkpoint(snapshot()));
    } catch (const std::exception& error) {  // the coordinator could not write it: leave anyway
      print_line("transient worker %s: its state of step %lld was not stored: %s\n",
                 connection_.id().c_str(), static_cast<long long>(step_), error.what());
    }
  }

  // Drops what was handed to the writer but not started (a write in progress completes).
  void abandon_writer() {
    if (!writer_) return;
    writer_->abandon();
    writer_.reset();
  }

  void abandon_writer_quietly() {
    try {
      abandon_writer();
    } catch (const std::exception&) {
      writer_.reset();
    }
  }

  void finish_writer_quietly() {
    try {
      finish_writer();
    } catch (const std::exception& error) {
      print_line("transient worker %s: a checkpoint write failed: %s\n", connection_.id().c_str(),
                 error.what());
      writer_.reset();
    }
  }

  // The job's loss (`--loss`) summed over the samples: cross-entropy of the scores, or the squared
  // error between the scores and the labels' one-hot vectors, averaged over the classes (divided
  // by the batch, it is PyTorch's mse_loss with its default mean).
  torch::Tensor summed_loss(const torch::Tensor& scores, const torch::Tensor& labels) const {
    if (options_.loss == Loss::kMse) {
      const auto targets = torch::one_hot(labels, scores.size(1)).to(scores.scalar_type());
      return torch::nn::functional::mse_loss(
                 scores, targets,
                 torch::nn::functional::MSELossFuncOptions().reduction(torch::kSum)) /
             static_cast<double>(scores.size(1));
    }
    return torch::nn::functional::cross_entropy(
        scores, labels, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum));
  }

  // The job's seeded initial state, as the constructor made it: the model built again from the
  // seed, zero momentum, and the generator where building the model left it.
  void initial_state() {
    torch::manual_seed(options_.seed);
    const auto fresh = make_model(options_.model, data_.shape);
    torch::NoGradGuard no_grad;
    auto fresh_parameters = fresh->named_parameters();
    for (const auto& item : model_->named_parameters()) {
      item.value().copy_(fresh_parameters[item.key()]);
    }
    auto fresh_buffers = fresh->named_buffers();
    for (const auto& item : model_->named_buffers()) item.value().copy_(fresh_buffers[item.key()]);
    optimizer_->reset();
    loss_scale_ = kLossScaleInitial;
    loss_scale_steps_ = 0;
  }

  // fp16: divides the summed gradient by the loss scale and moves the scale (checkpoint.h's
  // rule). False when the gradient overflowed (an infinity or NaN in it): the step is skipped.
  bool unscale_gradients() {
    std::vector<torch::Tensor> gradients;
    for (const auto& parameter : parameters_) {
      if (parameter.grad().defined()) gradients.push_back(parameter.grad());
    }
    const auto options = torch::TensorOptions(torch::kFloat32).device(device_);
    auto found = torch::zeros({1}, options);
    at::_amp_foreach_non_finite_check_and_unscale_(gradients, found,
                                                   torch::full({1}, 1.0 / loss_scale_, options));
    const bool overflowed = found.item<float>() > 0;
    if (overflowed) {
      loss_scale_ *= kLossScaleBackoff;
      loss_scale_steps_ = 0;
    } else if (++loss_scale_steps_ == kLossScaleInterval) {
      loss_scale_ *= kLossScaleGrowth;
      loss_scale_steps_ = 0;
    }
    return !overflowed;
  }

  void load_checkpoint() {
    CheckpointRecord record;
    record.file = config_.checkpoint;
    record.bytes = config_.checkpoint_bytes;
    record.crc32 = config_.checkpoint_crc32;
    const std::string path = records::JobFiles(options_.job_dir).checkpoint(record.file);
    const auto state = deserialize_checkpoint(connection_.fetch_checkpoint(record), path);
    if (state.model != options_.model || state.global_batch != options_.global_batch) {
      throw InputError(path, 0, "checkpoint of another job (model " + state.model + ")");
    }
    if (state.optimizer != optimizer_->name()) {
      throw InputError(path, 0,
                       "checkpoint of the optimiser " + state.optimizer + ", this job's is " +
                           optimizer_->name());
    }
    torch::NoGradGuard no_grad;
    // The state dict holds every parameter and buffer of the model under its name, nothing else.
    auto parameters = model_->named_parameters();
    auto buffers = model_->named_buffers();
    if (state.model_state.size() != parameters.size() + buffers.size()) {
      throw InputError(path, 0,
                       "checkpoint holds " + std::to_string(state.model_state.size()) +
                           " tensors, the model " + options_.model + " has " +
                           std::to_string(parameters.size() + buffers.size()));
    }
    std::vector<std::pair<torch::Tensor*, const torch::Tensor*>> copies;
    for (const auto& [name, tensor] : state.model_state) {
      auto* target = parameters.find(name);
      if (target == nullptr) target = buffers.find(name);
      if (target == nullptr || !target->sizes().equals(tensor.sizes())) {
        throw InputError(path, 0,
                         "checkpoint's \"" + name + "\" does not fit the model " + options_.model);
      }
      copies.emplace_back(target, &tensor);
    }
    // The optimiser's state by parameter name, in the order of the model's parameters.
    std::vector<OptimizerSlot> slots;
    for (const auto& [slot, by_name] : state.optimizer_state) {
      OptimizerSlot ordered{slot, {}};
      for (const auto& name : parameter_names_) {
        auto it = std::find_if(by_name.begin(), by_name.end(),
                               [&](const auto& entry) { return entry.first == name; });
        if (it == by_name.end()) {
          throw InputError(path, 0,
                           "checkpoint's optimiser state \"" + slot + "\" lacks parameter " + name);
        }
        ordered.tensors.push_back(it->second);
      }
      slots.push_back(std::move(ordered));
    }
    if (const auto why = optimizer_->set_state(slots)) throw InputError(path, 0, *why);
    for (auto& [target, tensor] : copies) target->copy_(*tensor);
    auto generator = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(generator.mutex());
    generator.set_state(state.rng_state);
    // A checkpoint of a job trained without fp16 (resumed with it) starts the scale afresh.
    loss_scale_ = state.loss_scale > 0 ? state.loss_scale : kLossScaleInitial;
    loss_scale_steps_ = state.loss_scale > 0 ? state.loss_scale_steps : 0;
  }

  CheckpointState snapshot() {
    CheckpointState state;
    state.model = options_.model;
    state.global_batch = options_.global_batch;
    state.seed = options_.seed;
    state.step = step_;
    const auto next = position_of_step(step_, job_.train_samples, options_.global_batch);
    state.epoch = next.epoch;
    state.cursor = next.cursor;
    std::vector<torch::Tensor> parameters;
    for (const auto& parameter : parameters_) parameters.push_back(parameter.detach());
    std::vector<std::string> buffer_names;
    std::vector<torch::Tensor> buffers;
    for (const auto& item : model_->named_buffers()) {
      buffer_names.push_back(item.key());
      buffers.push_back(item.value());
    }
    auto slots = optimizer_->state();  // copies already
    if (device_.is_cuda()) {
      // Copied into the pinned arena without waiting, then one wait for them all (the writer
      // thread serialises and writes them while training goes on).
      std::vector<torch::Tensor*> on_gpu;
      for (auto& tensor : parameters) on_gpu.push_back(&tensor);
      for (auto& tensor : buffers) on_gpu.push_back(&tensor);
      for (auto& slot : slots) {
        for (auto& tensor : slot.tensors) {
          if (!tensor.is_cpu()) on_gpu.push_back(&tensor);
        }
      }
      std::vector<torch::Tensor> from;
      for (const auto* tensor : on_gpu) from.push_back(*tensor);
      auto copies = snapshot_arena_.copy(from);
      for (std::size_t i = 0; i < on_gpu.size(); ++i) *on_gpu[i] = std::move(copies[i]);
      synchronize();
    } else {
      for (auto& tensor : parameters) tensor = tensor.clone();
      for (auto& tensor : buffers) tensor = tensor.clone();
    }
    for (std::size_t i = 0; i < parameters.size(); ++i) {
      state.model_state.emplace_back(parameter_names_[i], std::move(parameters[i]));
    }
    for (std::size_t i = 0; i < buffers.size(); ++i) {
      state.model_state.emplace_back(buffer_names[i], std::move(buffers[i]));
    }
    state.optimizer = optimizer_->name();
    for (auto& slot : slots) {
      NamedTensors by_name;
      for (std::size_t i = 0; i < parameters_.size(); ++i) {
        by_name.emplace_back(parameter_names_[i], std::move(slot.tensors[i]));
      }
      state.optimizer_state.emplace_back(slot.name, std::move(by_name));
    }
    auto generator = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(generator.mutex());
    state.rng_state = generator.get_state();
    if (options_.precision == Precision::kFp16) {
      state.loss_scale = loss_scale_;
      state.loss_scale_steps = loss_scale_steps_;
    }
    return state;
  }

  // Rank 0's batch-norm statistics become everyone's (each worker saw only its shards), then the
  // test set is split among the workers and the counts all-reduced.
  std::pair<double, double> evaluate() {
    torch::NoGradGuard no_grad;
    members_agree_ = compare_states();
    // Received into copies: a broadcast given up on the coordinator's word (wait_all) may
    // still write into its tensor later. From a GPU, all copied before one wait.
    std::vector<torch::Tensor> received;
    for (auto& item : model_->named_buffers()) received.push_back(host_copy(item.value()));
    synchronize();
    std::size_t i = 0;
    for (auto& item : model_->named_buffers()) {
      broadcast({received[i]}, 0);
      item.value().copy_(received[i++]);
    }
    model_->eval();
    const std::int64_t samples = test_samples_;
    const auto sizes = launch::split_batch(samples, world_size_);
    std::int64_t begin = 0;
    for (int r = 0; r < rank_; ++r) begin += sizes[static_cast<std::size_t>(r)];
    const std::int64_t end = begin + sizes[static_cast<std::size_t>(rank_)];
    double correct = 0;
    double loss_sum = 0;
    // In chunks of a member's share of a training step: memory known to fit (a step's forward
    // and backward hold more), and small enough to be reused from the allocator's free blocks.
    // Chunks of 1000 had each of the CNN's convolutions map ~100 MB afresh (docs/benchmarks.md,
    // "Evaluating in chunks of a step's share": a third more CPU, twice the memory).
    const std::int64_t chunk = (options_.global_batch + world_size_ - 1) / world_size_;
    for (std::int64_t at = begin; at < end; at += chunk) {
      const std::int64_t count = std::min<std::int64_t>(chunk, end - at);
      torch::Tensor images;
      torch::Tensor labels;
      if (loader_) {
        std::vector<std::int64_t> indices(static_cast<std::size_t>(count));
        std::iota(indices.begin(), indices.end(), at);
        auto batch = loader_->load(*data_.test_files, std::move(indices), 0, false).get();
        images = std::move(batch.images);
        labels = std::move(batch.labels);
        report_skipped(batch.skipped);
        skipped_in_test_ += static_cast<std::int64_t>(batch.skipped.size());
        if (labels.size(0) == 0) continue;
      } else {
        images = data_.test.images.narrow(0, at, count);
        labels = data_.test.labels.narrow(0, at, count);
      }
      std::tie(images, labels) = on_device(images, labels, !loader_);
      AutocastScope precision(options_.precision, device_);
      auto scores = model_->forward(images);
      loss_sum += summed_loss(scores, labels).item<double>();
      correct += scores.argmax(1).eq(labels).sum().item<double>();
    }
    model_->train();
    std::vector<torch::Tensor> totals{torch::tensor(
        {correct, loss_sum, static_cast<double>(end - begin - skipped_in_test_)}, torch::kFloat64)};
    skipped_in_test_ = 0;
    std::vector<c10::intrusive_ptr<c10d::Work>> works{group_->allreduce(totals)};
    wait_all(works, aborted_);
    const double count = totals[0][2].item<double>();
    return {totals[0][0].item<double>() / count, totals[0][1].item<double>() / count};
  }

  // A batch on the training device: images as the data set holds them (bytes, normalised here:
  // on a GPU after the copy, a quarter of the bytes) or already normalised (`raw` false: an image
  // folder's loader does it), copied to a GPU from pinned memory without waiting.
  std::pair<torch::Tensor, torch::Tensor> on_device(const torch::Tensor& images,
                                                    const torch::Tensor& labels, bool raw) {
    if (device_.is_cpu()) return {raw ? normalise(data_, images) : images, labels};
    auto moved = images.pin_memory().to(device_, /*non_blocking=*/true);
    auto moved_labels = labels.pin_memory().to(device_, /*non_blocking=*/true);
    if (raw) moved = moved.to(torch::kFloat32).div_(data_.divisor).sub_(mean_).div_(stdev_);
    return {moved, moved_labels};
  }

  // Waits for the GPU's queued work (host_copy's copies among it); nothing on the CPU.
  void synchronize() const {
    if (device_.is_cuda()) torch::cuda::synchronize(device_.index());
  }

  // This member's samples of a step at `position`: its share of the global batch, after those
  // of the ranks before it.
  Shard shard_of_step(const StepPosition& position) const {
    const auto shares = launch::member_shares(position.batch, config_.speeds);
    Shard shard;
    shard.begin = position.cursor;
    for (int r = 0; r < rank_; ++r) shard.begin += shares[static_cast<std::size_t>(r)];
    shard.count = shares[static_cast<std::size_t>(rank_)];
    return shard;
  }

  // The order of the samples in `epoch`: this one's, or the next one's for a prefetch (the two
  // last asked for are kept).
  const std::vector<std::int64_t>& permutation(std::int64_t epoch) {
    for (const auto& [kept, order] : permutations_) {
      if (kept == epoch) return order;
    }
    if (permutations_.size() == 2) permutations_.pop_front();
    permutations_.emplace_back(epoch, epoch_permutation(job_.train_samples, options_.seed, epoch));
    return permutations_.back().second;
  }

  // The samples of ranges of `epoch`'s permutation, one range after the other.
  std::vector<std::int64_t> sample_indices(std::int64_t epoch, const std::vector<Shard>& parts) {
    const auto& order = permutation(epoch);
    std::vector<std::int64_t> indices;
    for (const auto& part : parts) {
      indices.insert(indices.end(), order.begin() + part.begin,
                     order.begin() + part.begin + part.count);
    }
    return indices;
  }

  void prefetch(std::int64_t epoch, const Shard& shard) {
    prefetched_ =
        Prefetched{config_.generation, epoch, shard,
                   loader_->load(*data_.train_files, sample_indices(epoch, {shard}), epoch, true)};
  }

  // The batch of the samples `parts` of `epoch`: the one decoded ahead if it is that one (a
  // resumed step's parts never are), else decoded now.
  ImageBatch take_batch(std::int64_t epoch, const std::vector<Shard>& parts) {
    std::optional<Prefetched> ahead;
    ahead.swap(prefetched_);
    if (ahead && ahead->generation == config_.generation && ahead->epoch == epoch &&
        parts.size() == 1 && ahead->shard.begin == parts[0].begin &&
        ahead->shard.count == parts[0].count) {
      return ahead->batch.get();
    }
    if (ahead) ahead->batch.wait();  // its threads are done with it before it is dropped
    return loader_->load(*data_.train_files, sample_indices(epoch, parts), epoch, true).get();
  }

  // Images that did not decode are left out of their batch; each file is reported once (an
  // `image_skipped` event and a line on stderr).
  void report_skipped(const std::vector<std::pair<std::string, std::string>>& skipped) {
    for (const auto& [path, why] : skipped) {
      if (!skipped_files_.insert(path).second) continue;
      print_line("transient worker %s: skipped %s: %s\n", connection_.id().c_str(), path.c_str(),
                 why.c_str());
      connection_.send(message::Event{
          {{"event", "image_skipped"}, {"file", path}, {"why", why}, {"step", step_}}});
    }
  }

  // Whether every member holds the same parameters and optimiser state, bit for bit, as they
  // must: each applies the same all-reduced gradient to the same state. A fingerprint of each
  // member's (sums in double precision) is gathered and compared; a difference (a member's faulty
  // hardware, a state that did not reach a joiner) is said on stderr and in the epoch event.
  bool compare_states() {
    std::vector<torch::Tensor> sums;
    for (const auto& parameter : parameters_) sums.push_back(parameter.sum(torch::kFloat64));
    for (const auto& slot : optimizer_->state()) {
      for (const auto& tensor : slot.tensors) sums.push_back(tensor.sum(torch::kFloat64));
    }
    std::vector<torch::Tensor> mine{torch::stack(sums).to(torch::kCPU)};
    std::vector<std::vector<torch::Tensor>> gathered(1);
    for (int r = 0; r < world_size_; ++r) gathered[0].push_back(torch::empty_like(mine[0]));
    std::vector<c10::intrusive_ptr<c10d::Work>> works{group_->allgather(gathered, mine)};
    wait_all(works, aborted_);
    for (int r = 1; r < world_size_; ++r) {
      if (!torch::equal(gathered[0][static_cast<std::size_t>(r)], gathered[0][0])) {
        if (rank_ == 0) {
          print_line(
              "transient worker %s: at step %lld the state of rank %d differs from rank "
              "0's (checkpoints are rank 0's)\n",
              connection_.id().c_str(), static_cast<long long>(step_), r);
        }
        return false;
      }
    }
    return true;
  }

  Connection& connection_;
  std::string advertise_;  // the address this worker's Gloo device listens on
  std::string interface_;  // ... or the interface whose address it takes ("" = advertise_)
  JobConfig job_;
  const TrainOptions& options_;
  Dataset data_;
  torch::Device device_ = torch::kCPU;  // where the model trains
  torch::Tensor mean_;                  // on a GPU: the data set's per-channel mean and deviation
  torch::Tensor stdev_;
  SnapshotArena snapshot_arena_;  // on a GPU: the checkpoints' host copies
  // fp16 training's loss scale and the steps since it last moved (checkpoint.h).
  double loss_scale_ = kLossScaleInitial;
  std::int64_t loss_scale_steps_ = 0;
  std::shared_ptr<Model> model_;
  std::vector<std::string> parameter_names_;
  std::vector<torch::Tensor> parameters_;
  std::unique_ptr<Optimizer> optimizer_;
  bool members_agree_ = true;  // at the last evaluation
  std::unique_ptr<GradientBuckets> buckets_;
  std::unique_ptr<CheckpointWriter> writer_;  // while this worker is rank 0
  std::optional<StepTrace> trace_;            // TRANSIENT_TRACE_STEPS (step_trace.h)

  GenerationConfig config_;  // of the current generation
  int rank_ = 0;
  int world_size_ = 1;
  // Says when it joins, fails or leaves a generation and when the job ends (not --quiet).
  const bool announces_;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group_;
  // The generation was ended by the coordinator (a member lost): a collective still waited for
  // is given up (wait_all).
  const AbortCheck aborted_ = [this] {
    return connection_.dropped() || connection_.abort_signalled(config_.generation);
  };
  GroupReaper reaper_;  // ends abandoned groups (their collectives may still run)

  // The gradient of an interrupted step kept in the buckets (holds_own_gradients()): of the
  // samples `range` of the step after `step`, with this member's part of its loss and the
  // seconds it spent on them.
  struct KeptStep {  // a default one: nothing kept
    std::int64_t step = -1;
    launch::SampleRange range;
    double loss = 0;
    double data_s = 0;
    double compute_s = 0;
  };
  std::optional<KeptStep> kept_;
  // Set by agree_on_state when the generation resumes the kept step: the lost samples this
  // member computes; and how many samples the members kept in all.
  std::optional<launch::LostShare> resume_;
  std::int64_t resumed_kept_ = 0;
  bool holds_state_ = false;  // false until the first generation has given it a state
  bool rolled_back_ = false;  // its state diverged: it takes a checkpoint's or the initial one
  std::int64_t step_ = 0;     // steps completed in the state held
  std::deque<std::pair<std::int64_t, std::vector<std::int64_t>>> permutations_;  // by epoch
  std::int64_t test_samples_ = 0;  // evaluated: the test set, or its first --test-subset
  // Image folders: the loader threads, the next step's batch decoded ahead, and the files that
  // did not decode (each reported once).
  std::unique_ptr<ImageLoader> loader_;
  struct Prefetched {
    std::int64_t generation = -1;
    std::int64_t epoch = -1;
    Shard shard;
    std::shared_future<ImageBatch> batch;
  };
  std::optional<Prefetched> prefetched_;
  std::set<std::string> skipped_files_;
  std::int64_t skipped_in_test_ = 0;
  std::int64_t evaluated_at_ = -1;
  std::int64_t last_checkpoint_step_ = -1;
  std::atomic<std::int64_t> stored_step_{-1};  // of the last checkpoint the coordinator stored
  double since_checkpoint_s_ = 0;  // seconds of training steps since the last checkpoint
  double speed_ = 0;               // samples/s of forward + backward, smoothed
  bool everyone_leaves_ = false;   // every member leaves at this boundary
  bool counted_leaving_ = false;   // this worker's notice was in the last step's sum
  double diverged_loss_ = 0;       // the non-finite loss that ended training
  WorkerResult result_;
};

}  // namespace

int run_worker(const WorkerOptions& options) {
  // SIGTERM is the cloud's preemption notice: leave at the next step boundary. A worker leaves
  // the same way on Ctrl-C unless it started with SIGINT ignored (one of `transient train`'s,
  // whose launcher turns Ctrl-C into a pause of the whole job, or a script's background command).
  // A write to a peer that is gone must be an error, not the end of the process: Gloo writes
  // to its pairs without MSG_NOSIGNAL, and a worker woken after a stop (its peers long gone)
  // died of SIGPIPE.
  ::signal(SIGPIPE, SIG_IGN);
  struct sigaction action {};
  action.sa_handler = on_leave_signal;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGTERM, &action, nullptr);
  if (!sigint_ignored()) ::sigaction(SIGINT, &action, nullptr);

  const Endpoint endpoint = parse_endpoint(options.coordinator, "--coordinator");
  const auto traced = trace_steps_from_environment();  // a malformed one before joining
  if (options.worker_id.find_first_of("/ \"") != std::string::npos) {
    throw InputError("--worker-id: \"" + options.worker_id +
                     "\" must be a name without '/', ' ' or '\"'");
  }
  if (options.token.empty() == options.token_file.empty()) {
    throw InputError("give the job's token with exactly one of --token-file FILE or --token T");
  }
  const std::string token =
      options.token.empty() ? read_token_file(options.token_file) : options.token;

  std::optional<Connection> connection;
  try {
    connection.emplace(endpoint, token, options.worker_id);
  } catch (const LeftBeforeJoining&) {
    print_line("transient worker: %s before it joined the job; exiting\n",
               leave_signal() == SIGINT ? "interrupted" : "preempted");
    return 0;
  }
  // Peers reach this worker at the local address of its route to the coordinator, unless the
  // worker is told another (an interface, as GLOO_SOCKET_IFNAME names one, or an address).
  const std::string advertise = !options.advertise.empty() ? options.advertise
                                : !options.interface.empty()
                                    ? interface_address(options.interface, "--interface")
                                    : connection->local_host();
  // The probe listens where Gloo will: a peer that cannot reach it cannot reach Gloo either.
  const std::string probe =
      connection->open_probe(advertise, options.advertise.empty() ? "--interface" : "--advertise");
  Worker worker(*connection, options.threads, advertise, options.interface, options.data_dir,
                options.gpu, traced, options.quiet);
  connection->mark_ready(advertise, probe);
  return worker.run();
}

}  // namespace transient::train
