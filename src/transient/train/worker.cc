// The `transient worker` process: joins a job through the coordinator's front door, then trains
// generation after generation: each one a fresh ProcessGroupGloo whose members first agree on the
// state (the most advanced member broadcasts it) and then train their shards of every step until
// the generation ends: by a failed collective (a member died or went silent: the interrupted step
// is redone), at a step boundary (a member leaves after a preemption notice, a worker joins), or
// with the job. The worker process is never restarted and never reloads from disk unless no
// member holds the state.
#include <signal.h>
#include <unistd.h>

#include <ATen/record_function.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include "transient/core/atomic_file.h"
#include "transient/core/error.h"
#include "transient/core/text.h"
#include "transient/elastic/membership.h"
#include "transient/launch/batch_split.h"
#include "transient/records/job_files.h"
#include "transient/train/channel.h"
#include "transient/train/checkpoint.h"
#include "transient/train/coordinator_store.h"
#include "transient/train/gradient_buckets.h"
#include "transient/train/group_reaper.h"
#include "transient/train/progress_line.h"
#include "transient/train/protocol.h"
#include "transient/train/rendezvous_store.h"
#include "transient/train/shard_loader.h"
#include "transient/train/sharding.h"
#include "transient/train/step_trace.h"
#include "transient/train/token_proof.h"
#include "transient/train/trainer.h"
#include "transient/train/training_device.h"
#include "transient/train/training_state.h"
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

// How a generation ended for this worker.
enum class Ending { kFinished, kStopped, kBoundary, kDiverged };

// Ends the profiler's range `phase` (if open) and opens one named `name`: the step's ranges in
// a trace (step_trace.h). Costs next to nothing when no profiler runs.
void next_phase(std::optional<at::RecordFunction>& phase, const char* name) {
  phase.emplace(at::RecordScope::USER_SCOPE);
  if (phase->isActive()) phase->before(name);
}

class Worker {
 public:
  // The worker's Gloo device listens on `interface` if given, else on the address `advertise`.
  // It reads the data set from `data_dir` and the validation folder from `val_data` ("" = the
  // job's paths), traces the steps `traced` names
  // (step_trace.h), and says on stderr when it joins a generation and how the job ended for it
  // unless `quiet`.
  Worker(Connection& connection, int threads, std::string advertise, std::string interface,
         const std::string& data_dir, const std::string& val_data, int gpu,
         std::optional<TraceSteps> traced, bool quiet)
      : connection_(connection),
        advertise_(std::move(advertise)),
        interface_(std::move(interface)),
        job_(connection.job()),
        options_(job_.options),
        announces_(!quiet) {
    if (!data_dir.empty()) job_.options.data_dir = data_dir;
    if (!val_data.empty()) {
      if (job_.options.val_data.empty()) {
        throw InputError(
            "--val-data: the job has no validation folder of its own (it holds a "
            "tenth of the data set out); drop --val-data");
      }
      job_.options.val_data = val_data;
    }
    torch::set_num_threads(std::max(1, threads > 0 ? threads : options_.threads));
    torch::manual_seed(options_.seed);
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
    }
    samples_.emplace(job_, device_);
    state_.emplace(options_, samples_->shape(), device_);
    buckets_ = std::make_unique<GradientBuckets>(state_->parameters(), options_.bucket_bytes,
                                                 options_.compress);
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
      auto config = std::exchange(next_config_, std::nullopt);
      if (!config) config = connection_.next_generation(last_generation, why);
      if (!config) return without_a_generation(why);
      last_generation = config->generation;
      if (!take_part_in(*config)) continue;  // not ours; the next one may be
      std::int64_t attempted = step_;
      bool formed = false;
      std::optional<int> exit_code;  // none: on to the next generation
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
        if (rank_ == 0) send_report(message::Report::Kind::kFormed, step_);
        switch (train_generation(attempted)) {
          case Ending::kDiverged:
            exit_code = after_divergence();
            break;
          case Ending::kBoundary:
            exit_code = after_boundary();
            break;
          case Ending::kFinished:
          case Ending::kStopped:
            exit_code = after_the_last_step();
            break;
        }
      } catch (const CollectiveFailure& failure) {
        exit_code = after_a_failure(failure, formed, attempted);
      } catch (const std::exception& error) {
        exit_code = after_an_error_of_the_job(error);
      }
      if (exit_code) return *exit_code;
    }
  }

 private:
  // The coordinator gave no generation (`why`): the job has ended, this worker was signalled to
  // leave between generations, or it was dropped. Returns the exit code.
  int without_a_generation(const std::string& why) {
    finish_writer();
    if (why == "the job has ended") {
      say_the_job_ended();
      return 0;
    }
    if (why == "signalled") {
      // A preemption notice (or Ctrl-C) between generations: no step to finish, but the state
      // this worker holds may be the job's only copy newer than its last checkpoint (the other
      // members may be leaving too: two notices a few milliseconds apart end two generations,
      // and the second leaves no survivor), so it goes to the coordinator's disk first, once (a
      // coordinator away does not hold up the leaving).
      const std::string reason = leave_signal() == SIGINT ? "stopped" : "preempted";
      store_state_on_leaving();
      connection_.leave(reason);
      if (announces_) {
        print_line("transient worker %s: left the job between generations (%s)\n",
                   connection_.id().c_str(), reason.c_str());
      }
      return 0;
    }
    if (connection_.gave_up()) return gave_up_on_the_coordinator(why);
    if (announces_) {
      print_line("transient worker %s: %s; exiting\n", connection_.id().c_str(), why.c_str());
    }
    return kExitDropped;
  }

  // Its coordinator did not come back within --coordinator-wait (`why`): said even by a --quiet
  // worker, whose launcher (the coordinator) is gone. What it trained since it was lost is not
  // kept; the coordinator started again takes the job back from its last checkpoint.
  int gave_up_on_the_coordinator(const std::string& why) {
    print_line(
        "transient worker %s: %s; exiting at step %lld (the steps trained without a "
        "coordinator are not kept: `transient coordinator --job-dir JOB` started again takes "
        "the job back from its last checkpoint)\n",
        connection_.id().c_str(), why.c_str(), static_cast<long long>(step_));
    return kExitDropped;
  }

  // Takes the rank `config` gives this worker; false when it is not a member.
  bool take_part_in(const GenerationConfig& config) {
    const auto member = std::find(config.members.begin(), config.members.end(), connection_.id());
    if (member == config.members.end()) return false;
    config_ = config;
    rank_ = static_cast<int>(member - config.members.begin());
    world_size_ = static_cast<int>(config.members.size());
    if (announces_) {
      print_line("transient worker %s: generation %lld, rank %d of %d, from step %lld\n",
                 connection_.id().c_str(), static_cast<long long>(config_.generation), rank_,
                 world_size_, static_cast<long long>(config_.start_step));
    }
    connection_.set_state({{"gen", config_.generation}, {"reported", false}});
    return true;
  }

  // The training loss became NaN or infinite: the job rolls back to a checkpoint (this worker
  // waits for the next generation) or stops (the exit code).
  std::optional<int> after_divergence() {
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
      return std::nullopt;
    }
    connection_.finish(diverged, "stopped");  // said again to a restarted coordinator
    group_.reset();
    std::string ignored;
    connection_.next_generation(config_.generation, ignored);
    return kExitDiverged;
  }

  // The generation ended at a step boundary: this worker leaves (a notice; the exit code) or
  // waits for the next generation.
  std::optional<int> after_boundary() {
    const bool leaving = leave_signal() != 0;
    const std::string reason = leave_signal() == SIGINT ? "stopped" : "preempted";
    if (leaving && everyone_leaves_ && writer_) {
      // The last workers leave: the state goes to disk before they exit.
      submit_checkpoint();
    }
    finish_writer();
    // A notice that came after the step's sum: the members leaving with theirs counted this one
    // as staying, so none of them stored the state.
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
    return std::nullopt;
  }

  // The job's last step is done (or it was stopped): the final checkpoint stored, the result
  // reported. Returns the exit code once the coordinator has seen every member done, or none
  // when it forms another generation instead: rank 0 was lost before it stored the final state,
  // which this worker holds too, and the new generation's rank 0 stores it.
  std::optional<int> after_the_last_step() {
    finish_writer();
    if (rank_ == 0 && !store_final_checkpoint() && leave_signal() != 0) {
      // Signalled before the final state was stored (its coordinator away): not done, which
      // would say it was stored; the other members done hold it, and one of them stores it.
      const std::string reason = leave_signal() == SIGINT ? "stopped" : "preempted";
      connection_.leave(reason);
      print_line(
          "transient worker %s: left after step %lld (%s) before its final checkpoint "
          "was stored\n",
          connection_.id().c_str(), static_cast<long long>(step_), reason.c_str());
      return 0;
    }
    message::Report done = new_report(message::Report::Kind::kDone, step_);
    done.result = result_;
    connection_.finish(done, "stopped");
    group_.reset();
    if (announces_) {
      print_line("transient worker %s: done with step %lld; waiting for the job to end\n",
                 connection_.id().c_str(), static_cast<long long>(step_));
    }
    // Wait for the coordinator to see every member done (or to drop this worker).
    std::string why;
    if (auto next = connection_.next_generation(config_.generation, why)) {
      connection_.unfinish();
      next_config_ = std::move(next);
      return std::nullopt;
    }
    if (connection_.gave_up()) return gave_up_on_the_coordinator(why);
    if (why == "signalled") {
      // Signalled while it waited (its coordinator away, or rank 0 storing the final state):
      // nobody has said the job ended.
      print_line(
          "transient worker %s: left after step %lld (%s) before the coordinator ended "
          "the job\n",
          connection_.id().c_str(), static_cast<long long>(step_),
          leave_signal() == SIGINT ? "stopped" : "preempted");
      return 0;
    }
    say_the_job_ended();
    return 0;
  }

  // A peer died or went silent (or its group broke first), in the generation or while it formed
  // (`formed` false), during step `attempted`: the group is torn down, which closes this
  // worker's connections so that peers still waiting on it fail at once too, and the step held
  // is reported. The reaper does it: a wait given up on the coordinator's word leaves
  // collectives running, whose end the group's destructor would wait for. Returns the exit code
  // of a worker that leaves (it was signalled), none otherwise.
  std::optional<int> after_a_failure(const CollectiveFailure& failure, bool formed,
                                     std::int64_t attempted) {
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
    // A leaving worker stores its state before it reports, as at a boundary: once every member
    // has reported, the coordinator lets a leaving worker go and closes its connection, which
    // cut off an upload still on its way (the peers that failed with it may all be leaving too).
    if (leaving) store_state_on_leaving();
    report("failed", holds_state_ ? step_ : -1, std::max(attempted, step_), leaving, reason,
           unreachable, failure.what());
    // The coordinator records it (a generation_failed event); a --quiet worker's launcher says
    // what was lost.
    if (announces_) {
      print_line("transient worker %s: generation %lld failed (%s%s)\n", connection_.id().c_str(),
                 static_cast<long long>(config_.generation), failure.what(), named.c_str());
    }
    if (!leaving) return std::nullopt;
    connection_.leave(reason);
    return 0;
  }

  // Not a lost peer: an error of the job itself (a checkpoint that cannot be written or read, a
  // state that does not fit the model), which the next member would meet in turn. The
  // coordinator stops the job with it instead of re-forming around this worker. Returns the
  // exit code.
  int after_an_error_of_the_job(const std::exception& error) {
    abandon_writer_quietly();
    message::Report fatal = new_report(message::Report::Kind::kFatal);
    // The reason, one line: libtorch's errors (a user's model failing in its backward) carried
    // their C++ stack into the job's error line, 8 KiB of it.
    fatal.error = error_reason(error.what());
    connection_.send(fatal);
    connection_.leave("failed");
    group_.reset();
    print_line("transient worker %s: %s; the job stops\n", connection_.id().c_str(),
               fatal.error.c_str());
    std::string ignored;
    connection_.next_generation(config_.generation, ignored);
    return kExitFailed;
  }

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
      const std::string what = error_reason(error.what());
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
        state_->reset();  // a rollback with no checkpoint before the divergence
      }
      rolled_back_ = false;
      step_ = config_.start_step < 0 ? 0 : config_.start_step;
      holds_state_ = true;
      return;
    }
    if (all_equal) return;
    const int source =
        static_cast<int>(std::find(steps.begin(), steps.end(), most) - steps.begin());
    state_->broadcast([&](torch::Tensor& tensor) { broadcast({tensor}, source); }, rank_ != source);
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
    const auto position =
        position_of_step(step_, job_.train_samples, options_.global_batch, options_.drop_last);
    const auto shares = launch::lost_shares({position.cursor, position.batch}, kept_ranges);
    if (!shares) return;
    resume_ = (*shares)[static_cast<std::size_t>(rank_)];
    resumed_kept_ = 0;
    for (const auto& range : kept_ranges) resumed_kept_ += range.count;
  }

  // Trains steps until the generation ends. `attempted` is set to the step being worked on, so
  // that a failure reports what was interrupted.
  Ending train_generation(std::int64_t& attempted) {
    if (rank_ == 0 && !writer_) become_writer();
    if (rank_ != 0) finish_writer();
    bool first_step = true;
    // A generation formed after the last step (rank 0 lost before storing it) trains none.
    const std::int64_t last_step = options_.stop_at_step > 0
                                       ? std::min(options_.stop_at_step, job_.total_steps)
                                       : job_.total_steps;
    while (step_ < last_step) {
      if (connection_.dropped() || connection_.abort_signalled(config_.generation)) {
        throw CollectiveFailure(connection_.gave_up()
                                    ? "its coordinator did not come back within --coordinator-wait"
                                    : "the coordinator ended generation " +
                                          std::to_string(config_.generation));
      }
      attempted = step_ + 1;
      if (trace_) trace_->before(step_ + 1);
      std::optional<at::RecordFunction> step_scope;
      next_phase(step_scope, "transient::step");
      const auto position =
          position_of_step(step_, job_.train_samples, options_.global_batch, options_.drop_last);
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
      if (computed_count > 0) {
        auto batch = samples_->train_batch(config_.generation, position.epoch, computed);
        images = std::move(batch.images);
        labels = std::move(batch.labels);
        report_skipped(batch.skipped);
      }
      if (samples_->decodes_ahead() && step_ + 1 < job_.total_steps) {
        // An image folder's next step's samples are decoded while this one computes (the
        // members and their shares stay unless the generation ends, and then the guess is
        // dropped).
        const auto next = position_of_step(step_ + 1, job_.train_samples, options_.global_batch,
                                           options_.drop_last);
        const Shard next_shard = shard_of_step(next);
        if (next_shard.count > 0) samples_->prefetch(config_.generation, next.epoch, next_shard);
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
      // Samples of its share that did not decode: left out of the batch, and out of the divisor
      // once every member's count is summed (below).
      const std::int64_t skipped =
          resumed.skipped + (computed_count > 0 ? computed_count - labels.size(0) : 0);
      buckets_->control()[4] = static_cast<double>(skipped);
      if (computed_count > 0 && labels.size(0) > 0) {
        // A resumed step's samples computed now are the lost members' (this member's own were
        // counted in its statistics when the step was first tried).
        const auto statistics = resuming ? state_->copy_buffers() : std::vector<torch::Tensor>{};
        torch::Tensor loss;
        {
          AutocastScope precision(options_.precision, device_);
          torch::Tensor scores;
          try {
            scores = state_->model().forward(images);
          } catch (const std::exception& error) {  // libtorch's, or TorchScript's interpreter's
            // Which step, and on how many samples: libtorch says only what its operator wanted
            // (a batch norm given one sample: "Expected more than 1 value per channel", at an
            // epoch's last step whose few samples were shared among the members), and the way
            // out of an epoch's short last step.
            const bool short_last = position.batch < options_.global_batch;
            throw std::runtime_error(
                "the model failed at step " + std::to_string(step_ + 1) + " on this member's " +
                counted(labels.size(0), "sample") + " (the step's " +
                std::to_string(position.batch) + " shared among " +
                counted(static_cast<std::int64_t>(config_.members.size()), "member") +
                (short_last ? ", the epoch's last: --drop-last leaves its samples out" : "") +
                "): " + error_reason(error.what()));
          }
          // Summed over the shard and divided by the global batch: the all-reduced sum is then
          // exactly the mean gradient of the global batch, whatever the split.
          loss = summed_loss(scores, labels) / static_cast<double>(position.batch);
        }
        local_loss += loss.item<double>();
        buckets_->control()[0] = local_loss;  // before backward: it goes with the first bucket
        if (options_.precision == Precision::kFp16) {
          // Scaled, so that small gradients survive fp16; unscaled after the sum.
          (loss * state_->loss_scale()).backward();
        } else {
          loss.backward();
        }
        // After backward, which holds the statistics' tensors it was given.
        if (resuming) state_->restore_buffers(statistics);
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
          kept_ = KeptStep{
              step_, {shard.begin, shard.count}, local_loss, skipped, step_data_s, step_compute_s};
        }
        throw;
      }
      const double allreduce_s = seconds_since(phase_start);
      // The gradient and loss are the sums over the step's samples divided by its batch: where
      // some did not decode, divided by those trained on instead (the step was smaller by their
      // share, its loss too).
      if (const double unused = buckets_->control()[4].item<double>();
          unused > 0 && unused < static_cast<double>(position.batch)) {
        const double scale =
            static_cast<double>(position.batch) / (static_cast<double>(position.batch) - unused);
        for (auto& parameter : state_->parameters()) {
          if (parameter.grad().defined()) parameter.grad().mul_(scale);
        }
        buckets_->control()[0].mul_(scale);
      }
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
      const bool overflowed =
          options_.precision == Precision::kFp16 && !state_->unscale_gradients();
      if (options_.clip_grad_norm > 0 && !overflowed) {
        // The summed gradient is the same on every member: so is its norm, and the clipping.
        torch::nn::utils::clip_grad_norm_(state_->parameters(), options_.clip_grad_norm);
      }
      const double lr = learning_rate_at(step_, job_.total_steps, job_.warmup_steps,
                                         options_.lr * config_.lr_scale, options_.schedule);
      if (!overflowed) state_->optimizer().step(lr);
      const double optimizer_s = seconds_since(phase_start);
      phase.reset();
      step_scope.reset();
      if (trace_) trace_->after(step_ + 1);
      if (overflowed && rank_ == 0) {
        connection_.send(message::Event{{{"event", "fp16_overflow"},
                                         {"step", step_ + 1},
                                         {"loss_scale", state_->loss_scale()}}});
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

      if (ends_epoch(position, job_.train_samples, options_.global_batch, options_.drop_last)) {
        end_epoch(position.epoch, loss);
      }
      if (writer_) checkpoint_if_due();
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
      submit_checkpoint();
      last_checkpoint_step_ = step_;
    }
    return result_.stopped ? Ending::kStopped : Ending::kFinished;
  }

  // Rank 0 writes the job's checkpoints, on a thread of its own; they go to the coordinator's
  // job directory (its server is the stable one), which records them when they are stored.
  void become_writer() {
    writer_ = std::make_unique<CheckpointWriter>(
        [this](const CheckpointState& state) {
          const auto stored = connection_.send_checkpoint(state.step, serialize_checkpoint(state));
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

  // After the step that ends epoch `epoch` (from 0), whose summed loss was `loss`: every member
  // evaluates its part of the test set, and rank 0 records the epoch.
  void end_epoch(std::int64_t epoch, double loss) {
    std::tie(result_.test_accuracy, result_.test_loss) = evaluate();
    evaluated_at_ = step_;
    if (rank_ != 0) return;
    connection_.send(message::Event{{{"event", "epoch"},
                                     {"epoch", epoch + 1},
                                     {"step", step_},
                                     {"train_loss", loss},
                                     {"test_accuracy", result_.test_accuracy},
                                     {"test_loss", result_.test_loss},
                                     {"members_agree", members_agree_}}});
  }

  // The writer's checkpoint after this step, when one is due: every --checkpoint-every steps,
  // or once that many seconds of training have passed since the job's last checkpoint (carried
  // from generation to generation, so that frequent membership changes cannot put checkpoints
  // off). The step's stall is the state copied (off a GPU: into pinned host memory); the writer
  // serialises and stores it while training goes on.
  void checkpoint_if_due() {
    const bool due_by_steps =
        options_.checkpoint_every_steps > 0 && step_ % options_.checkpoint_every_steps == 0;
    const bool due_by_time =
        options_.checkpoint_every_s > 0 && since_checkpoint_s_ >= options_.checkpoint_every_s;
    if (!due_by_steps && !due_by_time) return;
    const auto snapshot_start = Clock::now();
    submit_checkpoint();
    connection_.send(message::Event{{{"event", "checkpoint_snapshot"},
                                     {"step", step_},
                                     {"device", device_.str()},
                                     {"seconds", seconds_since(snapshot_start)}}});
    last_checkpoint_step_ = step_;
    since_checkpoint_s_ = 0;
  }

  // Hands this step's state to the writer. One that still waited for it (the one before is being
  // stored) is not written: the newer state supersedes it, which the records say.
  void submit_checkpoint() {
    if (const auto superseded = writer_->submit(snapshot())) {
      connection_.send(message::Event{
          {{"event", "checkpoint_skipped"}, {"step", *superseded}, {"superseded_by", step_}}});
    }
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
  // True once the state of step_ is stored; false if this worker was dropped or signalled first.
  bool store_final_checkpoint() {
    if (stored_step_ == step_) return true;
    const auto bytes = serialize_checkpoint(snapshot());
    while (!connection_.dropped()) {
      if (store_state(bytes)) return true;
      // Its coordinator away, a notice (or Ctrl-C) is honoured all the same: the other members,
      // done too, hold the state, and the coordinator has one of them store it.
      if (leave_signal() != 0) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
    return false;
  }

  // Sends `bytes`, the state held at step_, to the coordinator's disk; true once it is stored.
  bool store_state(const std::vector<char>& bytes) {
    if (!connection_.send_checkpoint(step_, bytes)) return false;
    stored_step_ = step_;
    // A --quiet worker's coordinator says it (the launcher of `transient train` printed each of
    // its workers' stores at the job's end).
    if (announces_) {
      print_line("transient worker %s: the checkpoint of step %lld is stored\n",
                 connection_.id().c_str(), static_cast<long long>(step_));
    }
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

  void load_checkpoint() {
    CheckpointRecord record;
    record.file = config_.checkpoint;
    record.bytes = config_.checkpoint_bytes;
    record.crc32 = config_.checkpoint_crc32;
    const std::string path = records::JobFiles(options_.job_dir).checkpoint(record.file);
    state_->load(deserialize_checkpoint(connection_.fetch_checkpoint(record), path), path);
  }

  CheckpointState snapshot() { return state_->snapshot(step_, job_.train_samples); }

  // Rank 0's batch-norm statistics become everyone's (each worker saw only its shards), then the
  // test set is split among the workers and the counts all-reduced.
  std::pair<double, double> evaluate() {
    torch::NoGradGuard no_grad;
    members_agree_ = compare_states();
    state_->broadcast_buffers([&](torch::Tensor& tensor) { broadcast({tensor}, 0); });
    state_->model().eval();
    const std::int64_t samples = samples_->test_samples();
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
      auto batch = samples_->test_batch(at, count);
      report_skipped(batch.skipped);
      skipped_in_test_ += static_cast<std::int64_t>(batch.skipped.size());
      if (batch.labels.size(0) == 0) continue;
      const auto& labels = batch.labels;
      AutocastScope precision(options_.precision, device_);
      auto scores = state_->model().forward(batch.images);
      loss_sum += summed_loss(scores, labels).item<double>();
      correct += scores.argmax(1).eq(labels).sum().item<double>();
    }
    state_->model().train();
    std::vector<torch::Tensor> totals{torch::tensor(
        {correct, loss_sum, static_cast<double>(end - begin - skipped_in_test_)}, torch::kFloat64)};
    skipped_in_test_ = 0;
    std::vector<c10::intrusive_ptr<c10d::Work>> works{group_->allreduce(totals)};
    wait_all(works, aborted_);
    const double count = totals[0][2].item<double>();
    return {totals[0][0].item<double>() / count, totals[0][1].item<double>() / count};
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
    std::vector<torch::Tensor> mine{state_->fingerprint()};
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
  torch::Device device_ = torch::kCPU;  // where the model trains
  std::optional<ShardLoader> samples_;  // the data set, and each step's shard of it
  std::optional<TrainingState> state_;  // the model, the optimiser and what goes with them
  bool members_agree_ = true;           // at the last evaluation
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
  // A generation told of while this worker waited for the job's end (after_the_last_step).
  std::optional<GenerationConfig> next_config_;

  // The gradient of an interrupted step kept in the buckets (holds_own_gradients()): of the
  // samples `range` of the step after `step`, with this member's part of its loss and the
  // seconds it spent on them.
  struct KeptStep {  // a default one: nothing kept
    std::int64_t step = -1;
    launch::SampleRange range;
    double loss = 0;
    std::int64_t skipped = 0;  // of its samples, those that could not be trained on
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
  // Image folders: the files that did not decode (each reported once), and those of the
  // evaluation under way.
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
  if (!options.worker_id.empty() && !elastic::is_plain_worker_id(options.worker_id)) {
    throw InputError("--worker-id: \"" + printable(options.worker_id) +
                     "\"; accepted: 1 to 64 printable characters other than ' ', '/' and '\"', "
                     "not . or ..");
  }
  if (options.token.empty() == options.token_file.empty()) {
    throw InputError("give the job's token with exactly one of --token-file FILE or --token T");
  }
  const std::string token = options.token.empty()
                                ? read_token_file(options.token_file)
                                : job_token(options.token, "--token (or $TRANSIENT_TOKEN)");

  if (options.threads < 0) {
    throw InputError("--threads: must be at least 1 (or 0 for the job's)");
  }
  // The addresses to advertise are checked before joining: a worker refused for them afterwards
  // was counted as a worker the job lost.
  if (!options.interface.empty()) interface_address(options.interface, "--interface");
  if (!options.advertise.empty()) {
    Listener advertised(options.advertise, 0, "--advertise");
  }

  std::optional<Connection> connection;
  try {
    connection.emplace(endpoint, token, options.worker_id);
  } catch (const LeftBeforeJoining&) {
    if (options.quiet) return 0;
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
  connection->set_quiet(options.quiet);
  connection->set_coordinator_wait(options.coordinator_wait_s);
  std::optional<Worker> worker;
  try {
    worker.emplace(*connection, options.threads, advertise, options.interface, options.data_dir,
                   options.val_data, options.gpu, traced, options.quiet);
  } catch (const InputError& error) {
    // Its own data or model file (the job's were checked when it was launched): the coordinator
    // is told why, so that it neither counts this worker as revoked nor has it replaced.
    connection->leave("misconfigured", error_reason(error.what()));
    throw;
  }
  connection->mark_ready(advertise, probe, torch::get_num_threads());
  return worker->run();
}

}  // namespace transient::train
