// TrainOptions' fields as a job's records keep them: one table, which every writer and reader of
// a job's options walks, so that a field added here reaches all of them at once:
// - the job's config that the coordinator sends each worker and keeps in its journal
//   (protocol.h's JobConfig): every field below;
// - job.json's "settings", what the job computes, which a resumed job keeps (a flag given that
//   contradicts one is refused);
// - job.json's "launch", how the job is run, which a resumed job keeps unless its flag is given.
// A record of an earlier version may lack a field: each says what its absence meant, or that it
// is required. The options the table leaves out are the command's own (--resume, --bind, the
// revocation injection, ...) or found again by each command (--data: the data set's folder).
//
// Torch-free, header-only.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <type_traits>

#include "transient/core/json_number.h"
#include "transient/train/option_names.h"
#include "transient/train/trainer.h"

namespace transient::train {

// Where a field is kept besides the job's config.
enum class Kept { kConfigOnly, kSettings, kLaunch };

struct OptionField {
  const char* key;   // its name in the records
  Kept kept;         // where besides the job's config
  const char* flag;  // settings and launch: the flag that gives it ("" for config only)
};

// Calls visit(field, member, absent) for each field of `options` (a TrainOptions, const or not),
// where `absent` is a std::optional of the member's type: what a record without the field meant,
// or nullopt when it is required.
template <typename Options, typename Visit>
void visit_option_fields(Options& options, Visit&& visit) {
  static_assert(std::is_same_v<std::remove_const_t<Options>, TrainOptions>);
  auto required = [&](OptionField field, auto& member) {
    visit(field, member,
          std::optional<std::remove_cv_t<std::remove_reference_t<decltype(member)>>>());
  };
  auto or_else = [&](OptionField field, auto& member, auto absent) {
    visit(field, member,
          std::optional<std::remove_cv_t<std::remove_reference_t<decltype(member)>>>(absent));
  };
  constexpr Kept kSettings = Kept::kSettings;
  constexpr Kept kLaunch = Kept::kLaunch;
  constexpr Kept kConfigOnly = Kept::kConfigOnly;
  auto& o = options;
  // What the job computes.
  required({"model", kSettings, "--model"}, o.model);
  required({"dataset", kSettings, "--dataset"}, o.dataset);
  required({"data_dir", kSettings, "--data-dir"}, o.data_dir);
  or_else({"val_data", kSettings, "--val-data"}, o.val_data, std::string());
  or_else({"image_size", kSettings, "--image-size"}, o.image_size, std::int64_t{0});
  or_else({"augment", kSettings, "--augment"}, o.augment, Augment::kCrop);
  required({"train_subset", kSettings, "--train-subset"}, o.train_subset);
  required({"test_subset", kSettings, "--test-subset"}, o.test_subset);
  required({"epochs", kSettings, "--epochs"}, o.epochs);
  required({"steps", kSettings, "--steps"}, o.steps);
  required({"global_batch", kSettings, "--global-batch"}, o.global_batch);
  or_else({"per_worker_batch", kSettings, "--per-worker-batch"}, o.per_worker_batch,
          std::int64_t{0});
  or_else({"drop_last", kSettings, "--drop-last"}, o.drop_last, false);
  required({"lr", kSettings, "--lr"}, o.lr);
  or_else({"optimizer", kSettings, "--optimizer"}, o.optimizer, std::string("sgd"));
  required({"momentum", kSettings, "--momentum"}, o.momentum);
  required({"weight_decay", kSettings, "--weight-decay"}, o.weight_decay);
  or_else({"beta1", kSettings, "--beta1"}, o.beta1, 0.9);
  or_else({"beta2", kSettings, "--beta2"}, o.beta2, 0.999);
  or_else({"eps", kSettings, "--eps"}, o.eps, 1e-8);
  required({"warmup_fraction", kSettings, "--warmup-fraction"}, o.warmup_fraction);
  or_else({"loss", kSettings, "--loss"}, o.loss, Loss::kCrossEntropy);
  or_else({"nesterov", kSettings, "--nesterov"}, o.nesterov, false);
  or_else({"schedule", kSettings, "--schedule"}, o.schedule, LrSchedule::kCosine);
  or_else({"clip_grad_norm", kSettings, "--clip-grad-norm"}, o.clip_grad_norm, 0.0);
  or_else({"precision", kSettings, "--precision"}, o.precision, Precision::kFp32);
  required({"seed", kSettings, "--seed"}, o.seed);
  // How it is run.
  required({"workers", kLaunch, "--workers"}, o.workers);
  required({"checkpoint_every_steps", kLaunch, "--checkpoint-every"}, o.checkpoint_every_steps);
  required({"checkpoint_every_s", kLaunch, "--checkpoint-every"}, o.checkpoint_every_s);
  required({"keep", kLaunch, "--keep"}, o.keep);
  or_else({"compress", kLaunch, "--compress"}, o.compress, Compression::kNone);
  // A job of an earlier version ran its models contiguous.
  or_else({"memory_format", kLaunch, "--memory-format"}, o.memory_format,
          MemoryFormat::kContiguous);
  or_else({"on_divergence", kLaunch, "--on-divergence"}, o.on_divergence, OnDivergence::kStop);
  required({"bucket_bytes", kLaunch, "--bucket-bytes"}, o.bucket_bytes);
  required({"heartbeat_timeout_s", kLaunch, "--heartbeat-timeout"}, o.heartbeat_timeout_s);
  or_else({"instance_type", kLaunch, "--instance-type"}, o.instance_type, std::string());
  or_else({"market", kLaunch, "--instance-type"}, o.market, std::string());
  or_else({"price_usd_per_h", kLaunch, "--instance-type"}, o.price_usd_per_h, 0.0);
  // The job's config only: set by the launcher, the machine's, or this run's.
  or_else({"image_mean", kConfigOnly, ""}, o.image_mean, std::vector<double>{});
  or_else({"image_std", kConfigOnly, ""}, o.image_std, std::vector<double>{});
  or_else({"loader_threads", kConfigOnly, ""}, o.loader_threads, 2);
  required({"stop_at_step", kConfigOnly, ""}, o.stop_at_step);
  // Each worker's threads: a sum's order, so a resume keeps them (a job of an earlier version:
  // 0, the cores / workers).
  or_else({"threads", kLaunch, "--threads"}, o.threads, 0);
  required({"job_dir", kConfigOnly, ""}, o.job_dir);
  or_else({"device", kConfigOnly, ""}, o.device, Device::kCpu);  // earlier: CPUs only
  or_else({"model_sha256", kConfigOnly, ""}, o.model_sha256, std::string());
}

// A field's value as its records write it: an option's name for an enum.
template <typename T>
nlohmann::json field_json(const T& value) {
  if constexpr (std::is_enum_v<T>) {
    return name_of(value);
  } else {
    return value;
  }
}

// The field `key` of `record`, or `absent` when the record lacks it. Throws nlohmann::json's
// error when the field is required and missing or of another type, std::invalid_argument for an
// option's name that is none of its names (named_option).
template <typename T>
T field_value(const nlohmann::json& record, const char* key, const std::optional<T>& absent) {
  if (!absent) static_cast<void>(record.at(key));  // required: its absence is the error
  if constexpr (std::is_enum_v<T>) {
    return named_option(record, key, absent.value_or(T{}));
  } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    // Checked: a float such as 1e300 is no count (core/json_number.h).
    if (absent && !record.contains(key)) return *absent;
    return whole_number_as<T>(record.at(key), key);
  } else {
    return absent ? record.value(key, *absent) : record.at(key).get<T>();
  }
}

}  // namespace transient::train
