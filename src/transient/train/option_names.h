// The job options that take one of a few names (--loss, --schedule, --augment, --compress,
// --precision, --memory-format, --on-divergence, --device): an enum each, and the one table of each
// enum's names, which the flags, job.json, the coordinator's journal and its admission of a worker
// all speak. Torch-free: the CLI parses the flags with it.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace transient::train {

// The loss: cross-entropy of the scores, or their squared error against one-hot labels.
enum class Loss { kCrossEntropy, kMse };
// How the learning rate falls after the warm-up: a half cosine to zero at the last step, or
// steps of x0.1 at half and at three quarters of the steps after it (sharding.h).
enum class LrSchedule { kCosine, kStep };
// Image folders' training augmentation (image_folder.h).
enum class Augment { kCrop, kResizedCrop, kNone };
// Gradients on the wire: fp32, or a half-precision copy (gradient_buckets.h).
enum class Compression { kNone, kBf16, kFp16 };
// The precision of the forward pass and the loss: fp32, or bf16 or fp16 under autocast
// (parameters, gradients and the optimiser's state stay fp32; fp16 with a loss scale: worker.cc).
enum class Precision { kFp32, kBf16, kFp16 };
// How the model's convolution weights lie in memory (models.h): auto = channels-last where the
// model trains faster so (the built-in ResNets), or as asked.
enum class MemoryFormat { kAuto, kChannelsLast, kContiguous };
// A training loss that becomes NaN or infinite: stop the job, or roll back to a checkpoint.
enum class OnDivergence { kStop, kRollback };
// Where a worker trains (worker.cc): a CUDA GPU where its host has one (auto), or as asked.
enum class Device { kAuto, kCpu, kCuda };

// Each enum's names and values, in the order the help text gives them. Specialised for the
// enums above only.
template <typename E>
const std::vector<std::pair<std::string, E>>& option_names();
template <>
const std::vector<std::pair<std::string, Loss>>& option_names<Loss>();
template <>
const std::vector<std::pair<std::string, LrSchedule>>& option_names<LrSchedule>();
template <>
const std::vector<std::pair<std::string, Augment>>& option_names<Augment>();
template <>
const std::vector<std::pair<std::string, Compression>>& option_names<Compression>();
template <>
const std::vector<std::pair<std::string, Precision>>& option_names<Precision>();
template <>
const std::vector<std::pair<std::string, MemoryFormat>>& option_names<MemoryFormat>();
template <>
const std::vector<std::pair<std::string, OnDivergence>>& option_names<OnDivergence>();
template <>
const std::vector<std::pair<std::string, Device>>& option_names<Device>();

// The name of `value`.
template <typename E>
std::string name_of(E value) {
  for (const auto& [name, named] : option_names<E>()) {
    if (named == value) return name;
  }
  return "?";  // unreachable for a value of the enum
}

// The value named `name` (exactly), or nullopt.
template <typename E>
std::optional<E> parse_name(const std::string& name) {
  for (const auto& [known, value] : option_names<E>()) {
    if (known == name) return value;
  }
  return std::nullopt;
}

// "a, b, c": the names accepted, for error messages.
template <typename E>
std::string accepted_names() {
  std::string text;
  for (const auto& [name, value] : option_names<E>()) text += (text.empty() ? "" : ", ") + name;
  return text;
}

// The value named by `json`'s `key`, or `absent` when there is no such key (a record of an
// earlier version). Throws std::invalid_argument naming the key, the name and the names
// accepted when the name is not one of them, nlohmann::json's error when it is not a string.
template <typename E>
E named_option(const nlohmann::json& json, const char* key, E absent) {
  if (!json.contains(key)) return absent;
  const auto name = json.at(key).get<std::string>();
  const auto value = parse_name<E>(name);
  if (!value) {
    throw std::invalid_argument(std::string(key) + " \"" + name + "\" is none of " +
                                accepted_names<E>());
  }
  return *value;
}

// Whether `name` (--model) names a TorchScript file (it ends in .pt or .pth) rather than a
// built-in model.
bool is_model_file(const std::string& name);

// Whether a checkpoint that names the model `recorded` is of the job whose model is `job_model`:
// the same name, or two model files: a job's model file may have moved since (given anew on
// --resume), and its identity is its SHA-256, which the launcher checks against job.json and each
// worker against the coordinator's.
bool same_model(const std::string& recorded, const std::string& job_model);

}  // namespace transient::train
