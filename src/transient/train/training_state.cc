#include "transient/train/training_state.h"

#include <algorithm>
#include <map>
#include <mutex>

#include "transient/core/error.h"
#include "transient/train/sharding.h"

namespace transient::train {
namespace {

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

}  // namespace

TrainingState::TrainingState(const TrainOptions& options, const ImageShape& shape,
                             torch::Device device)
    : options_(options), shape_(shape), device_(device) {
  model_ = make_model(options_.model, shape_);  // initialised on the CPU: the same anywhere
  model_->to(device_);
  if (channels_last(*model_, options_.memory_format)) to_channels_last(*model_);
  model_->train();
  // A tensor shared by two names (a layer used twice, tied weights) is one parameter, trained
  // once under its first name, as PyTorch's named_parameters() gives it: libtorch's lists it
  // under each name, and it was stepped once per name (twice the update, a momentum per name).
  // Its other names stay in checkpoints, as PyTorch's state_dict() keeps them.
  std::map<const void*, std::size_t> seen;
  for (const auto& item : model_->named_parameters()) {
    const auto [at, first] = seen.emplace(item.value().unsafeGetTensorImpl(), parameters_.size());
    if (!first) {
      aliases_.emplace_back(item.key(), at->second);
      continue;
    }
    parameter_names_.push_back(item.key());
    parameters_.push_back(item.value());
  }
  optimizer_ = std::make_unique<Optimizer>(optimizer_settings(options_), parameters_);
}

void TrainingState::reset() {
  torch::manual_seed(options_.seed);
  const auto fresh = make_model(options_.model, shape_);
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

void TrainingState::load(const CheckpointState& state, const std::string& path) {
  if (!same_model(state.model, options_.model) || state.global_batch != options_.global_batch) {
    throw InputError(path, 0, "checkpoint of another job (model " + state.model + ")");
  }
  if (state.optimizer != optimizer_->name()) {
    throw InputError(
        path, 0,
        "checkpoint of the optimiser " + state.optimizer + ", this job's is " + optimizer_->name());
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

CheckpointState TrainingState::snapshot(std::int64_t step, std::int64_t train_samples) {
  CheckpointState state;
  state.model = options_.model;
  state.global_batch = options_.global_batch;
  state.seed = options_.seed;
  state.step = step;
  const auto next =
      position_of_step(step, train_samples, options_.global_batch, options_.drop_last);
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
    synchronize(device_);
  } else {
    for (auto& tensor : parameters) tensor = tensor.clone();
    for (auto& tensor : buffers) tensor = tensor.clone();
  }
  for (std::size_t i = 0; i < parameters.size(); ++i) {
    state.model_state.emplace_back(parameter_names_[i], std::move(parameters[i]));
  }
  for (const auto& [name, index] : aliases_) {
    state.model_state.emplace_back(name, state.model_state[index].second);
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

bool TrainingState::unscale_gradients() {
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

torch::Tensor TrainingState::fingerprint() const {
  std::vector<torch::Tensor> sums;
  for (const auto& parameter : parameters_) sums.push_back(parameter.sum(torch::kFloat64));
  for (const auto& slot : optimizer_->state()) {
    for (const auto& tensor : slot.tensors) sums.push_back(tensor.sum(torch::kFloat64));
  }
  return torch::stack(sums).to(torch::kCPU);
}

void TrainingState::broadcast(const Broadcast& broadcast, bool receive) {
  torch::NoGradGuard no_grad;
  // Everything is received into temporaries and committed only once the last broadcast has
  // succeeded: a source lost half-way leaves this member's state as it was.
  auto flat = flatten(parameters_).to(torch::kCPU);
  broadcast(flat);
  auto slots = optimizer_->state();
  for (auto& slot : slots) {  // one flat tensor per slot: AdamW's step counts are integers
    auto flat_slot = flatten(slot.tensors).to(torch::kCPU);
    broadcast(flat_slot);
    slot.tensors = unflatten(flat_slot, slot.tensors);
  }
  std::vector<torch::Tensor> buffers;
  for (auto& item : model_->named_buffers()) buffers.push_back(host_copy(item.value()));
  synchronize(device_);
  for (auto& buffer : buffers) broadcast(buffer);
  auto generator = at::detail::getDefaultCPUGenerator();
  torch::Tensor rng;
  {
    std::lock_guard<std::mutex> lock(generator.mutex());
    rng = generator.get_state().clone();
  }
  broadcast(rng);
  auto scale =
      torch::tensor({loss_scale_, static_cast<double>(loss_scale_steps_)}, torch::kFloat64);
  if (options_.precision == Precision::kFp16) broadcast(scale);
  if (!receive) return;
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

void TrainingState::broadcast_buffers(const Broadcast& broadcast) {
  torch::NoGradGuard no_grad;
  // From a GPU, all copied before one wait.
  std::vector<torch::Tensor> received;
  for (auto& item : model_->named_buffers()) received.push_back(host_copy(item.value()));
  synchronize(device_);
  std::size_t i = 0;
  for (auto& item : model_->named_buffers()) {
    broadcast(received[i]);
    item.value().copy_(received[i++]);
  }
}

std::vector<torch::Tensor> TrainingState::copy_buffers() const {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> copies;
  for (const auto& item : model_->named_buffers()) copies.push_back(item.value().clone());
  return copies;
}

void TrainingState::restore_buffers(const std::vector<torch::Tensor>& copies) {
  torch::NoGradGuard no_grad;
  std::size_t i = 0;
  for (auto& item : model_->named_buffers()) item.value().copy_(copies.at(i++));
}

}  // namespace transient::train
