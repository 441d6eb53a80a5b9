// The job's optimiser (`--optimizer`): libtorch's SGD (momentum, Nesterov, weight decay) or
// AdamW (decoupled weight decay, betas, eps), and its per-parameter state as named tensors.
//
// The state exists from the start, as zeros (SGD's momentum buffer; AdamW's step count, first
// and second moments): the first step then gives what libtorch's lazily created state gives,
// and every member's state has the same layout, so that it can be broadcast as one flat tensor
// to a member that joins and written to a checkpoint under each parameter's name.
//
// Slots by optimiser: sgd: momentum_buffer (only with a momentum); adamw: step (a 0-dimensional
// int64 tensor), exp_avg, exp_avg_sq -- the names of PyTorch's own optimiser state.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace transient::train {

struct OptimizerSettings {
  std::string name = "sgd";  // sgd or adamw
  double lr = 0.05;
  double momentum = 0.9;  // sgd
  bool nesterov = false;  // sgd
  double weight_decay = 0;
  double beta1 = 0.9;  // adamw
  double beta2 = 0.999;
  double eps = 1e-8;
};

// The names `--optimizer` accepts, for messages: "sgd, adamw".
std::string optimizer_names();
bool is_optimizer_name(const std::string& name);

// One slot of per-parameter state: its name and one tensor per parameter, in parameter order.
struct OptimizerSlot {
  std::string name;
  std::vector<torch::Tensor> tensors;
};

class Optimizer {
 public:
  Optimizer(const OptimizerSettings& settings, std::vector<torch::Tensor> parameters);

  const std::string& name() const { return settings_.name; }

  // One step of the optimiser at learning rate `lr` on the parameters' gradients.
  void step(double lr);

  // A copy of the per-parameter state, slot by slot.
  std::vector<OptimizerSlot> state() const;

  // Replaces the state with `slots` (as state() gives them: the same slots, one tensor of each
  // parameter's shape per parameter). Returns why not (and changes nothing) if they do not fit.
  std::optional<std::string> set_state(const std::vector<OptimizerSlot>& slots);

  // The state as at the start: zeros.
  void reset();

 private:
  // SGD on a GPU: the same step by multi-tensor kernels (optimizer.cc).
  void sgd_step_multi_tensor(double lr);

  OptimizerSettings settings_;
  std::vector<torch::Tensor> parameters_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
};

}  // namespace transient::train
