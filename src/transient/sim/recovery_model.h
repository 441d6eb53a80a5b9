// What a membership change costs a running job: the plug-in point between the simulator and the
// ways real systems recover from a lost (or added) worker.
//
// The simulator handles the cases every system shares (docs/scenarios.md):
// - a job with no workers stops; its progress falls back to the last checkpoint (a checkpoint is
//   written at every preemption notice when the scenario asks for it);
// - a stopped job restarts when no requested server is still starting, paying restart_pause_s();
// - a graceful release (a policy moving the cluster to another market) checkpoints first.
// A RecoveryModel decides the rest: what a revocation that leaves other workers running, or a
// worker joining a running job, costs. Models are immutable and safe to share between threads.
#pragma once

#include "transient/core/registry.h"

#include <memory>
#include <string>
#include <vector>

namespace transient::sim {

struct RecoveryOptions {
  // Seconds to re-form the group after a membership change (in-place recovery).
  double reform_s = 10.0;
  // Seconds to restart the training processes and reload a checkpoint
  // (restart-from-checkpoint, async-ps-chief). CM-DARE measured about 75 s cold for TensorFlow.
  double restart_s = 75.0;
  // async-ps-chief: when the chief is lost, true = the job fails at once; false = the job stops
  // making progress until a replacement server joins, becomes the chief and restarts from the
  // last checkpoint (what CM-DARE's chief-rejoining experiments did).
  bool chief_loss_fails = false;
};

// The job as the recovery model sees it at a membership change.
struct RecoveryState {
  double progress_steps = 0.0;    // steps done before the change
  double checkpoint_steps = 0.0;  // steps in the last checkpoint
  bool lost_chief = false;        // the revoked worker was the chief
  // Servers in the job at the change: before a loss (the lost one included), after a join.
  int members = 1;
};

// What the change does to the job.
struct RecoveryEffect {
  double progress_steps = 0.0;  // steps done after the change (lost work = before - after)
  double pause_s = 0.0;         // seconds without progress, starting now
  bool stop = false;            // the job stops until a new chief joins (async-ps-chief)
  bool fail = false;            // the job fails
};

class RecoveryModel {
 public:
  virtual ~RecoveryModel() = default;

  virtual std::string name() const = 0;
  virtual std::string describe() const = 0;

  // A worker was revoked while others keep running.
  virtual RecoveryEffect on_leave(const RecoveryState& state) const = 0;
  // A worker became ready and joins a running job.
  virtual RecoveryEffect on_join(const RecoveryState& state) const = 0;
  // Seconds from the moment a stopped job has its workers to its first step.
  virtual double restart_pause_s() const = 0;
  // Whether one worker is the chief (async-ps-chief); the simulator then tracks which.
  virtual bool has_chief() const { return false; }
};

// Every registered recovery model, in a stable order.
// Every registered one, in a stable order (core/registry.h).
const std::vector<PluginInfo>& recovery_models();

// Throws InputError for an unknown name, listing the valid ones.
std::unique_ptr<RecoveryModel> create_recovery_model(const std::string& name,
                                                     const RecoveryOptions& options);

}  // namespace transient::sim
