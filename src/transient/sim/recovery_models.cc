// The recovery models of the registry. Each is a few lines: the shared cases live in the
// simulator (recovery_model.h).
#include <algorithm>

#include "transient/core/error.h"
#include "transient/core/registry.h"
#include "transient/sim/recovery_model.h"

namespace transient::sim {
namespace {

// Our trainer: the survivors keep the model in memory, drop the step in flight, re-form the group.
class InPlaceRecovery : public RecoveryModel {
 public:
  explicit InPlaceRecovery(const RecoveryOptions& options) : options_(options) {}
  std::string name() const override { return "in-place"; }
  std::string describe() const override {
    return "survivors keep their state and their gradients of the step in flight: a revocation "
           "redoes the lost server's share of that step (1/n of a step among n), every "
           "membership change pauses to re-form the group (transient train)";
  }
  RecoveryEffect on_leave(const RecoveryState& state) const override {
    const double lost_share = 1.0 / std::max(1, state.members);
    return {std::max(0.0, state.progress_steps - lost_share), options_.reform_s, false, false};
  }
  RecoveryEffect on_join(const RecoveryState& state) const override {
    return {state.progress_steps, options_.reform_s, false, false};
  }
  double restart_pause_s() const override { return options_.reform_s; }

 private:
  RecoveryOptions options_;
};

// torchrun-style elastic training: every membership change restarts all workers from the last
// checkpoint.
class RestartFromCheckpointRecovery : public RecoveryModel {
 public:
  explicit RestartFromCheckpointRecovery(const RecoveryOptions& options) : options_(options) {}
  std::string name() const override { return "restart-from-checkpoint"; }
  std::string describe() const override {
    return "every membership change restarts all workers from the last checkpoint: the work "
           "since it is lost, plus the restart time (torchrun)";
  }
  RecoveryEffect on_leave(const RecoveryState& state) const override {
    return {state.checkpoint_steps, options_.restart_s, false, false};
  }
  RecoveryEffect on_join(const RecoveryState& state) const override {
    return {state.checkpoint_steps, options_.restart_s, false, false};
  }
  double restart_pause_s() const override { return options_.restart_s; }

 private:
  RecoveryOptions options_;
};

// The research's TensorFlow set-up: asynchronous workers come and go freely; the chief worker is
// the one that cannot be lost.
class AsyncPsChiefRecovery : public RecoveryModel {
 public:
  explicit AsyncPsChiefRecovery(const RecoveryOptions& options) : options_(options) {}
  std::string name() const override { return "async-ps-chief"; }
  std::string describe() const override {
    return "asynchronous parameter servers: workers join and leave without cost, losing the "
           "chief stops the job until a replacement chief restarts it from the last checkpoint "
           "(or fails it: chief_loss = \"fail\") (TensorFlow, the paper's set-up)";
  }
  RecoveryEffect on_leave(const RecoveryState& state) const override {
    if (!state.lost_chief) return {state.progress_steps, 0.0, false, false};
    if (options_.chief_loss_fails) return {state.progress_steps, 0.0, false, true};
    return {state.checkpoint_steps, 0.0, true, false};
  }
  RecoveryEffect on_join(const RecoveryState& state) const override {
    return {state.progress_steps, 0.0, false, false};
  }
  double restart_pause_s() const override { return options_.restart_s; }
  bool has_chief() const override { return true; }

 private:
  RecoveryOptions options_;
};

}  // namespace

namespace {

using RecoveryFactory = std::unique_ptr<RecoveryModel> (*)(const RecoveryOptions&);

template <typename Model>
Registry<RecoveryFactory>::Entry recovery_model(const char* name) {
  return {{name, Model(RecoveryOptions{}).describe(), {}},
          [](const RecoveryOptions& options) -> std::unique_ptr<RecoveryModel> {
            return std::make_unique<Model>(options);
          }};
}

const Registry<RecoveryFactory>& recovery_registry() {
  static const Registry<RecoveryFactory> all(
      "recovery model", {recovery_model<InPlaceRecovery>("in-place"),
                         recovery_model<RestartFromCheckpointRecovery>("restart-from-checkpoint"),
                         recovery_model<AsyncPsChiefRecovery>("async-ps-chief")});
  return all;
}

}  // namespace

const std::vector<PluginInfo>& recovery_models() { return recovery_registry().infos(); }

std::unique_ptr<RecoveryModel> create_recovery_model(const std::string& name,
                                                     const RecoveryOptions& options) {
  return recovery_registry().at(name).create(options);
}

}  // namespace transient::sim
