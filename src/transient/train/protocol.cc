#include "transient/train/protocol.h"

#include <algorithm>
#include <cctype>

#include "transient/core/atomic_file.h"
#include "transient/core/error.h"

namespace transient::train {

nlohmann::json to_json(const JobConfig& config) {
  const TrainOptions& o = config.options;
  return {{"model", o.model},
          {"dataset", o.dataset},
          {"data_dir", o.data_dir},
          {"val_data", o.val_data},
          {"image_size", o.image_size},
          {"augment", name_of(o.augment)},
          {"image_mean", o.image_mean},
          {"image_std", o.image_std},
          {"loader_threads", o.loader_threads},
          {"train_subset", o.train_subset},
          {"test_subset", o.test_subset},
          {"epochs", o.epochs},
          {"steps", o.steps},
          {"stop_at_step", o.stop_at_step},
          {"global_batch", o.global_batch},
          {"per_worker_batch", o.per_worker_batch},
          {"lr", o.lr},
          {"optimizer", o.optimizer},
          {"momentum", o.momentum},
          {"beta1", o.beta1},
          {"beta2", o.beta2},
          {"eps", o.eps},
          {"weight_decay", o.weight_decay},
          {"warmup_fraction", o.warmup_fraction},
          {"seed", o.seed},
          {"workers", o.workers},
          {"threads", o.threads},
          {"job_dir", o.job_dir},
          {"checkpoint_every_steps", o.checkpoint_every_steps},
          {"checkpoint_every_s", o.checkpoint_every_s},
          {"keep", o.keep},
          {"bucket_bytes", o.bucket_bytes},
          {"compress", name_of(o.compress)},
          {"precision", name_of(o.precision)},
          {"memory_format", name_of(o.memory_format)},
          {"device", name_of(o.device)},
          {"heartbeat_timeout_s", o.heartbeat_timeout_s},
          {"on_divergence", name_of(o.on_divergence)},
          {"loss", name_of(o.loss)},
          {"nesterov", o.nesterov},
          {"schedule", name_of(o.schedule)},
          {"clip_grad_norm", o.clip_grad_norm},
          {"model_sha256", o.model_sha256},
          {"instance_type", o.instance_type},
          {"market", o.market},
          {"price_usd_per_h", o.price_usd_per_h},
          {"train_samples", config.train_samples},
          {"total_steps", config.total_steps},
          {"warmup_steps", config.warmup_steps}};
}

JobConfig job_config_from_json(const nlohmann::json& j) {
  JobConfig config;
  TrainOptions& o = config.options;
  o.model = j.at("model").get<std::string>();
  o.dataset = j.at("dataset").get<std::string>();
  o.data_dir = j.at("data_dir").get<std::string>();
  o.val_data = j.value("val_data", std::string());
  o.image_size = j.value("image_size", std::int64_t{0});
  o.augment = named_option(j, "augment", Augment::kCrop);
  o.image_mean = j.value("image_mean", std::vector<double>{});
  o.image_std = j.value("image_std", std::vector<double>{});
  o.loader_threads = j.value("loader_threads", 2);
  o.train_subset = j.at("train_subset").get<std::int64_t>();
  o.test_subset = j.at("test_subset").get<std::int64_t>();
  o.epochs = j.at("epochs").get<int>();
  o.steps = j.at("steps").get<std::int64_t>();
  o.stop_at_step = j.at("stop_at_step").get<std::int64_t>();
  o.global_batch = j.at("global_batch").get<std::int64_t>();
  o.per_worker_batch = j.value("per_worker_batch", std::int64_t{0});
  o.lr = j.at("lr").get<double>();
  o.optimizer = j.value("optimizer", std::string("sgd"));
  o.momentum = j.at("momentum").get<double>();
  o.beta1 = j.value("beta1", 0.9);
  o.beta2 = j.value("beta2", 0.999);
  o.eps = j.value("eps", 1e-8);
  o.weight_decay = j.at("weight_decay").get<double>();
  o.warmup_fraction = j.at("warmup_fraction").get<double>();
  o.seed = j.at("seed").get<std::uint64_t>();
  o.workers = j.at("workers").get<int>();
  o.threads = j.at("threads").get<int>();
  o.job_dir = j.at("job_dir").get<std::string>();
  o.checkpoint_every_steps = j.at("checkpoint_every_steps").get<std::int64_t>();
  o.checkpoint_every_s = j.at("checkpoint_every_s").get<double>();
  o.keep = j.at("keep").get<int>();
  o.bucket_bytes = j.at("bucket_bytes").get<std::int64_t>();
  o.compress = named_option(j, "compress", Compression::kNone);
  o.precision = named_option(j, "precision", Precision::kFp32);  // earlier jobs: fp32
  // A job of an earlier version ran its models contiguous.
  o.memory_format = named_option(j, "memory_format", MemoryFormat::kContiguous);
  o.device = named_option(j, "device", Device::kCpu);  // earlier coordinators: CPUs only
  o.heartbeat_timeout_s = j.at("heartbeat_timeout_s").get<double>();
  o.on_divergence = named_option(j, "on_divergence", OnDivergence::kStop);
  o.loss = named_option(j, "loss", Loss::kCrossEntropy);
  o.nesterov = j.value("nesterov", false);
  o.schedule = named_option(j, "schedule", LrSchedule::kCosine);
  o.clip_grad_norm = j.value("clip_grad_norm", 0.0);
  o.model_sha256 = j.value("model_sha256", std::string());
  o.instance_type = j.value("instance_type", std::string());
  o.market = j.value("market", std::string());
  o.price_usd_per_h = j.value("price_usd_per_h", 0.0);
  config.train_samples = j.at("train_samples").get<std::int64_t>();
  config.total_steps = j.at("total_steps").get<std::int64_t>();
  config.warmup_steps = j.at("warmup_steps").get<std::int64_t>();
  return config;
}

nlohmann::json to_json(const GenerationConfig& config) {
  return {{"generation", config.generation},
          {"members", config.members},
          {"start_step", config.start_step},
          {"checkpoint", config.checkpoint},
          {"checkpoint_bytes", config.checkpoint_bytes},
          {"checkpoint_crc32", config.checkpoint_crc32},
          {"speeds", config.speeds},
          {"since_checkpoint_s", config.since_checkpoint_s},
          {"probes", config.probes},
          {"lr_scale", config.lr_scale}};
}

GenerationConfig generation_config_from_json(const nlohmann::json& j) {
  GenerationConfig config;
  config.generation = j.at("generation").get<std::int64_t>();
  config.members = j.at("members").get<std::vector<std::string>>();
  config.start_step = j.at("start_step").get<std::int64_t>();
  config.checkpoint = j.at("checkpoint").get<std::string>();
  config.checkpoint_bytes = j.at("checkpoint_bytes").get<std::int64_t>();
  config.checkpoint_crc32 = j.at("checkpoint_crc32").get<std::uint32_t>();
  config.speeds = j.at("speeds").get<std::vector<double>>();
  config.since_checkpoint_s = j.value("since_checkpoint_s", 0.0);
  config.probes = j.value("probes", std::vector<std::string>{});
  config.lr_scale = j.value("lr_scale", 1.0);
  return config;
}

nlohmann::json to_json(const ProgressReport& report) {
  return {{"step", report.step},
          {"epoch", report.epoch},
          {"loss", report.loss},
          {"lr", report.lr},
          {"since_checkpoint_s", report.since_checkpoint_s}};
}

ProgressReport progress_report_from_json(const nlohmann::json& j) {
  ProgressReport report;
  report.step = j.at("step").get<std::int64_t>();
  report.epoch = j.at("epoch").get<std::int64_t>();
  report.loss = j.at("loss").get<double>();
  report.lr = j.at("lr").get<double>();
  report.since_checkpoint_s = j.value("since_checkpoint_s", 0.0);
  return report;
}

nlohmann::json to_json(const WorkerResult& result) {
  return {{"step", result.step},
          {"test_accuracy", result.test_accuracy},
          {"test_loss", result.test_loss},
          {"stopped", result.stopped}};
}

WorkerResult worker_result_from_json(const nlohmann::json& j) {
  WorkerResult result;
  result.step = j.at("step").get<std::int64_t>();
  result.test_accuracy = j.at("test_accuracy").get<double>();
  result.test_loss = j.at("test_loss").get<double>();
  result.stopped = j.at("stopped").get<bool>();
  return result;
}

std::string read_token_file(const std::string& path) {
  std::string token = read_file(path);
  while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back()))) token.pop_back();
  if (token.empty()) throw InputError(path, 0, "the job's token file is empty");
  return token;
}

std::string generation_prefix(std::int64_t generation) {
  return "gen/" + std::to_string(generation) + "/";
}

}  // namespace transient::train
