#include "transient/train/checkpoint.h"

#include <chrono>
#include <string_view>

#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/serialization/export.h>
#include <torch/csrc/jit/serialization/pickler.h>

#include "transient/core/error.h"

namespace transient::train {
namespace {

constexpr const char* kFormat = "transient-checkpoint-v2";
constexpr const char* kFormatV1 = "transient-checkpoint-v1";

c10::impl::GenericDict to_dict(const NamedTensors& tensors) {
  c10::impl::GenericDict dict(c10::StringType::get(), c10::TensorType::get());
  for (const auto& [name, tensor] : tensors) dict.insert(name, tensor);
  return dict;
}

NamedTensors from_dict(const c10::IValue& value, const std::string& key, const std::string& path) {
  if (!value.isGenericDict()) {
    throw InputError(path, 0, "not a transient checkpoint: \"" + key + "\" is not a dict");
  }
  NamedTensors tensors;
  for (const auto& entry : value.toGenericDict()) {
    if (!entry.key().isString() || !entry.value().isTensor()) {
      throw InputError(path, 0, "not a transient checkpoint: \"" + key + "\" holds a non-tensor");
    }
    tensors.emplace_back(entry.key().toStringRef(), entry.value().toTensor());
  }
  return tensors;
}

}  // namespace

std::vector<char> serialize_checkpoint(const CheckpointState& state) {
  c10::impl::GenericDict dict(c10::StringType::get(), c10::AnyType::get());
  dict.insert("format", std::string(kFormat));
  dict.insert("model", to_dict(state.model_state));
  dict.insert("model_name", state.model);
  dict.insert("optimizer", state.optimizer);
  c10::impl::GenericDict slots(c10::StringType::get(), c10::AnyType::get());
  for (const auto& [slot, tensors] : state.optimizer_state) slots.insert(slot, to_dict(tensors));
  dict.insert("optimizer_state", slots);
  dict.insert("global_batch", state.global_batch);
  dict.insert("seed", static_cast<std::int64_t>(state.seed));
  dict.insert("step", state.step);
  dict.insert("epoch", state.epoch);
  dict.insert("cursor", state.cursor);
  dict.insert("rng_state", state.rng_state);
  if (state.loss_scale > 0) {
    c10::impl::GenericDict scaler(c10::StringType::get(), c10::AnyType::get());
    scaler.insert("scale", state.loss_scale);
    scaler.insert("growth_factor", kLossScaleGrowth);
    scaler.insert("backoff_factor", kLossScaleBackoff);
    scaler.insert("growth_interval", kLossScaleInterval);
    scaler.insert("_growth_tracker", state.loss_scale_steps);
    dict.insert("grad_scaler", scaler);
  }
  // torch::pickle_save's layout (data.pkl and data/<i> in a zip archive, as torch.save writes),
  // but without the TorchScript type tags on dicts: Python's torch.load, whose default since
  // PyTorch 2.6 is weights_only=True, refuses them (torch.jit._pickle.restore_type_tag).
  std::vector<char> pickled;
  torch::jit::Pickler pickler(
      [&](const char* bytes, std::size_t size) {
        pickled.insert(pickled.end(), bytes, bytes + size);
      },
      nullptr, nullptr, nullptr, nullptr, /*tag_aggregates=*/false);
  pickler.protocol();
  pickler.pushIValue(dict);
  pickler.stop();
  std::vector<char> archive;
  caffe2::serialize::PyTorchStreamWriter writer([&](const void* bytes, std::size_t size) {
    const auto* begin = static_cast<const char*>(bytes);
    archive.insert(archive.end(), begin, begin + size);
    return size;
  });
  torch::jit::writeArchiveAndTensors("data", pickled.data(), pickled.size(), pickler.tensorData(),
                                     writer);
  writer.writeEndOfFile();
  return archive;
}

CheckpointState deserialize_checkpoint(const std::vector<char>& bytes, const std::string& path) {
  c10::IValue value;
  try {
    value = torch::pickle_load(bytes);
  } catch (const std::exception& error) {
    throw InputError(path, 0, "cannot read the checkpoint (not a torch archive)");
  }
  if (!value.isGenericDict()) throw InputError(path, 0, "not a transient checkpoint: not a dict");
  const auto dict = value.toGenericDict();
  auto field = [&](const std::string& key) {
    auto it = dict.find(key);
    if (it == dict.end()) {
      throw InputError(path, 0, "not a transient checkpoint: no \"" + key + "\" entry");
    }
    return it->value();
  };
  const auto format = field("format").isString() ? field("format").toStringRef() : "";
  if (format != kFormat && format != kFormatV1) {
    throw InputError(
        path, 0, std::string("not a checkpoint of format ") + kFormat + " (or " + kFormatV1 + ")");
  }
  CheckpointState state;
  try {
    if (format == kFormatV1) {
      state.model = field("model").toStringRef();
      state.model_state = from_dict(field("parameters"), "parameters", path);
      const auto buffers = from_dict(field("buffers"), "buffers", path);
      state.model_state.insert(state.model_state.end(), buffers.begin(), buffers.end());
      auto momentum = from_dict(field("momentum"), "momentum", path);
      if (!momentum.empty()) state.optimizer_state.emplace_back("momentum_buffer", momentum);
    } else {
      state.model = field("model_name").toStringRef();
      state.model_state = from_dict(field("model"), "model", path);
      state.optimizer = field("optimizer").toStringRef();
      const auto slots = field("optimizer_state");
      if (!slots.isGenericDict()) {
        throw InputError(path, 0, "not a transient checkpoint: \"optimizer_state\" is not a dict");
      }
      for (const auto& entry : slots.toGenericDict()) {
        const std::string slot = entry.key().toStringRef();
        state.optimizer_state.emplace_back(slot, from_dict(entry.value(), slot, path));
      }
    }
    state.global_batch = field("global_batch").toInt();
    state.seed = static_cast<std::uint64_t>(field("seed").toInt());
    state.step = field("step").toInt();
    state.epoch = field("epoch").toInt();
    state.cursor = field("cursor").toInt();
    state.rng_state = field("rng_state").toTensor();
    if (const auto scaler = dict.find("grad_scaler"); scaler != dict.end()) {
      const auto entries = scaler->value().toGenericDict();
      const auto scale = entries.find("scale");
      const auto steps = entries.find("_growth_tracker");
      if (scale == entries.end() || steps == entries.end()) {
        throw InputError(path, 0, "its grad_scaler lacks \"scale\" or \"_growth_tracker\"");
      }
      state.loss_scale = scale->value().toDouble();
      state.loss_scale_steps = steps->value().toInt();
      if (!(state.loss_scale > 0) || state.loss_scale_steps < 0) {
        throw InputError(path, 0, "its grad_scaler holds a scale that is not positive");
      }
    }
  } catch (const c10::Error&) {
    throw InputError(path, 0, "not a transient checkpoint: an entry of the wrong type");
  }
  return state;
}

CheckpointRecord write_checkpoint(CheckpointDirectory& directory, const CheckpointState& state) {
  const auto start = std::chrono::steady_clock::now();
  const auto bytes = serialize_checkpoint(state);
  CheckpointRecord record =
      directory.write(state.step, std::string_view(bytes.data(), bytes.size()));
  record.write_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return record;
}

CheckpointIdentity checkpoint_identity(const std::vector<char>& bytes, const std::string& path) {
  const CheckpointState state = deserialize_checkpoint(bytes, path);
  return {state.model, state.global_batch, state.seed, state.step};
}

CheckpointWriter::CheckpointWriter(Write write,
                                   std::function<void(const CheckpointRecord&)> on_written)
    : write_(std::move(write)), on_written_(std::move(on_written)), thread_([this] { run(); }) {}

CheckpointWriter::~CheckpointWriter() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void CheckpointWriter::rethrow_locked() {
  if (error_) {
    auto error = error_;
    error_ = nullptr;
    std::rethrow_exception(error);
  }
}

void CheckpointWriter::abandon() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    waiting_.clear();
    stopping_ = true;
  }
  changed_.notify_all();
}

std::optional<std::int64_t> CheckpointWriter::submit(CheckpointState state) {
  std::optional<CheckpointState> superseded;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    rethrow_locked();
    if (waiting_.size() >= (busy_ ? 1u : 2u)) {
      superseded = std::move(waiting_.back());
      waiting_.back() = std::move(state);
    } else {
      waiting_.push_back(std::move(state));
    }
  }
  changed_.notify_all();
  if (!superseded) return std::nullopt;
  return superseded->step;  // freed here, outside the lock
}

void CheckpointWriter::wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [this] { return (waiting_.empty() && !busy_) || error_; });
  rethrow_locked();
}

void CheckpointWriter::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [this] { return !waiting_.empty() || stopping_; });
    if (waiting_.empty()) return;  // stopping, nothing left to write
    CheckpointState state = std::move(waiting_.front());
    waiting_.pop_front();
    busy_ = true;
    lock.unlock();
    changed_.notify_all();  // submit() may hand over the next state while this one is written
    std::exception_ptr error;
    try {
      const auto record = write_(state);
      if (on_written_) on_written_(record);
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    busy_ = false;
    if (error) error_ = error;
    changed_.notify_all();
  }
}

}  // namespace transient::train
