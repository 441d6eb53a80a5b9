#include "transient/train/optimizer.h"

#include <algorithm>

namespace transient::train {
namespace {

// libtorch keys an optimiser's per-parameter state by the address of the parameter's TensorImpl.
void* state_key(const torch::Tensor& parameter) { return parameter.unsafeGetTensorImpl(); }

bool is_sgd(const OptimizerSettings& settings) { return settings.name == "sgd"; }

}  // namespace

std::string optimizer_names() { return "sgd, adamw"; }

bool is_optimizer_name(const std::string& name) { return name == "sgd" || name == "adamw"; }

Optimizer::Optimizer(const OptimizerSettings& settings, std::vector<torch::Tensor> parameters)
    : settings_(settings), parameters_(std::move(parameters)) {
  if (is_sgd(settings_)) {
    optimizer_ =
        std::make_unique<torch::optim::SGD>(parameters_, torch::optim::SGDOptions(settings_.lr)
                                                             .momentum(settings_.momentum)
                                                             .nesterov(settings_.nesterov)
                                                             .weight_decay(settings_.weight_decay));
  } else {
    optimizer_ = std::make_unique<torch::optim::AdamW>(
        parameters_, torch::optim::AdamWOptions(settings_.lr)
                         .betas({settings_.beta1, settings_.beta2})
                         .eps(settings_.eps)
                         .weight_decay(settings_.weight_decay));
  }
  reset();
}

void Optimizer::step(double lr) {
  if (is_sgd(settings_) && !parameters_.empty() && parameters_.front().is_cuda()) {
    sgd_step_multi_tensor(lr);
    return;
  }
  for (auto& group : optimizer_->param_groups()) group.options().set_lr(lr);
  optimizer_->step();
}

void Optimizer::sgd_step_multi_tensor(double lr) {
  // libtorch's SGD step (no dampening) with each of its operations applied to every parameter
  // at once by ATen's multi-tensor kernels: a few launches instead of a few per parameter.
  // ResNet-18 has 62 parameters, and its small steps on a GPU are bound by launches (1.3-1.5x
  // the samples/s on 32x32 images: docs/benchmarks.md, "GPUs"); torch.optim.SGD's default on
  // CUDA is the same multi-tensor step.
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> parameters;
  std::vector<torch::Tensor> gradients;
  std::vector<torch::Tensor> momenta;
  auto& states = optimizer_->state();
  for (const auto& parameter : parameters_) {
    if (!parameter.grad().defined()) continue;
    parameters.push_back(parameter);
    gradients.push_back(parameter.grad());
    if (settings_.momentum != 0) {
      momenta.push_back(static_cast<torch::optim::SGDParamState&>(*states.at(state_key(parameter)))
                            .momentum_buffer());
    }
  }
  if (parameters.empty()) return;
  std::vector<torch::Tensor> steps = gradients;
  if (settings_.weight_decay != 0) {
    steps = at::_foreach_add(gradients, parameters, settings_.weight_decay);
  }
  if (settings_.momentum != 0) {
    at::_foreach_mul_(momenta, settings_.momentum);
    at::_foreach_add_(momenta, steps);
    steps = settings_.nesterov ? at::_foreach_add(steps, momenta, settings_.momentum) : momenta;
  }
  at::_foreach_add_(parameters, steps, -lr);
}

void Optimizer::reset() {
  torch::NoGradGuard no_grad;
  auto& states = optimizer_->state();
  states.clear();
  for (const auto& parameter : parameters_) {
    if (is_sgd(settings_)) {
      if (settings_.momentum == 0) continue;  // SGD without momentum keeps no state
      auto state = std::make_unique<torch::optim::SGDParamState>();
      state->momentum_buffer(torch::zeros_like(parameter));
      states[state_key(parameter)] = std::move(state);
    } else {
      auto state = std::make_unique<torch::optim::AdamWParamState>();
      state->step(0);
      state->exp_avg(torch::zeros_like(parameter));
      state->exp_avg_sq(torch::zeros_like(parameter));
      states[state_key(parameter)] = std::move(state);
    }
  }
}

std::vector<OptimizerSlot> Optimizer::state() const {
  std::vector<OptimizerSlot> slots;
  const auto& states = optimizer_->state();
  if (is_sgd(settings_)) {
    if (settings_.momentum == 0) return slots;
    OptimizerSlot momentum{"momentum_buffer", {}};
    for (const auto& parameter : parameters_) {
      const auto& state =
          static_cast<const torch::optim::SGDParamState&>(*states.at(state_key(parameter)));
      momentum.tensors.push_back(state.momentum_buffer().detach().clone());
    }
    slots.push_back(std::move(momentum));
    return slots;
  }
  OptimizerSlot step{"step", {}};
  OptimizerSlot exp_avg{"exp_avg", {}};
  OptimizerSlot exp_avg_sq{"exp_avg_sq", {}};
  for (const auto& parameter : parameters_) {
    const auto& state =
        static_cast<const torch::optim::AdamWParamState&>(*states.at(state_key(parameter)));
    step.tensors.push_back(torch::tensor(state.step(), torch::kInt64));
    exp_avg.tensors.push_back(state.exp_avg().detach().clone());
    exp_avg_sq.tensors.push_back(state.exp_avg_sq().detach().clone());
  }
  slots.push_back(std::move(step));
  slots.push_back(std::move(exp_avg));
  slots.push_back(std::move(exp_avg_sq));
  return slots;
}

std::optional<std::string> Optimizer::set_state(const std::vector<OptimizerSlot>& slots) {
  const auto expected = state();
  if (slots.size() != expected.size()) {
    return "it holds " + std::to_string(slots.size()) + " kinds of optimiser state, " +
           settings_.name + " keeps " + std::to_string(expected.size());
  }
  for (std::size_t s = 0; s < slots.size(); ++s) {
    if (slots[s].name != expected[s].name) {
      return "it holds optimiser state \"" + slots[s].name + "\" where " + settings_.name +
             " keeps \"" + expected[s].name + "\"";
    }
    if (slots[s].tensors.size() != parameters_.size()) {
      return "its optimiser state \"" + slots[s].name + "\" has " +
             std::to_string(slots[s].tensors.size()) + " tensors for " +
             std::to_string(parameters_.size()) + " parameters";
    }
    for (std::size_t i = 0; i < parameters_.size(); ++i) {
      if (!slots[s].tensors[i].sizes().equals(expected[s].tensors[i].sizes())) {
        return "its optimiser state \"" + slots[s].name + "\" of parameter " + std::to_string(i) +
               " has another shape";
      }
    }
  }
  if (slots.empty()) return std::nullopt;  // SGD without momentum: no state
  torch::NoGradGuard no_grad;
  auto& states = optimizer_->state();
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    auto& entry = *states.at(state_key(parameters_[i]));
    if (is_sgd(settings_)) {
      static_cast<torch::optim::SGDParamState&>(entry).momentum_buffer().copy_(slots[0].tensors[i]);
    } else {
      auto& state = static_cast<torch::optim::AdamWParamState&>(entry);
      state.step(slots[0].tensors[i].item<std::int64_t>());
      state.exp_avg().copy_(slots[1].tensors[i]);
      state.exp_avg_sq().copy_(slots[2].tensors[i]);
    }
  }
  return std::nullopt;
}

}  // namespace transient::train
