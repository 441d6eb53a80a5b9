#include "transient/train/protocol.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <limits>

#include "transient/core/atomic_file.h"
#include "transient/core/error.h"
#include "transient/core/json_number.h"
#include "transient/core/text.h"
#include "transient/train/option_fields.h"

namespace transient::train {

nlohmann::json to_json(const DataFacts& data) {
  return {{"train_samples", data.train_samples},
          {"channels", data.channels},
          {"height", data.height},
          {"width", data.width},
          {"classes", data.classes},
          {"test_samples", data.test_samples}};
}

DataFacts data_facts_from_json(const nlohmann::json& json) {
  DataFacts data;
  data.train_samples = integer_or(json, "train_samples", 0, 0);
  data.channels = integer_or(json, "channels", 0, 0);
  data.height = integer_or(json, "height", 0, 0);
  data.width = integer_or(json, "width", 0, 0);
  data.classes = integer_or(json, "classes", 0, 0);
  data.test_samples = integer_or(json, "test_samples", 0, 0);
  return data;
}

bool operator==(const DataFacts& a, const DataFacts& b) {
  return a.train_samples == b.train_samples && a.channels == b.channels && a.height == b.height &&
         a.width == b.width && a.classes == b.classes && a.test_samples == b.test_samples;
}

std::string to_text(const DataFacts& data) {
  std::string text = std::to_string(data.train_samples) + " training samples of " +
                     std::to_string(data.channels) + "x" + std::to_string(data.height) + "x" +
                     std::to_string(data.width) + " in " + std::to_string(data.classes) +
                     " classes";
  if (data.test_samples > 0) text += ", " + std::to_string(data.test_samples) + " to test";
  return text;
}

nlohmann::json to_json(const JobConfig& config) {
  nlohmann::json json = nlohmann::json::object();
  visit_option_fields(config.options, [&](const OptionField& field, const auto& value,
                                          const auto&) { json[field.key] = field_json(value); });
  json["train_samples"] = config.train_samples;
  json["total_steps"] = config.total_steps;
  json["warmup_steps"] = config.warmup_steps;
  json["data"] = to_json(config.data);
  return json;
}

JobConfig job_config_from_json(const nlohmann::json& j) {
  JobConfig config;
  visit_option_fields(config.options,
                      [&](const OptionField& field, auto& value, const auto& absent) {
                        value = field_value(j, field.key, absent);
                      });
  config.train_samples = integer_at(j, "train_samples");
  config.total_steps = integer_at(j, "total_steps");
  config.warmup_steps = integer_at(j, "warmup_steps");
  if (const auto data = j.find("data"); data != j.end() && data->is_object()) {
    config.data = data_facts_from_json(*data);
  }
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
  config.generation = integer_at(j, "generation");
  config.members = j.at("members").get<std::vector<std::string>>();
  config.start_step = integer_at(j, "start_step");
  config.checkpoint = j.at("checkpoint").get<std::string>();
  config.checkpoint_bytes = integer_at(j, "checkpoint_bytes");
  config.checkpoint_crc32 =
      whole_number_as<std::uint32_t>(j.at("checkpoint_crc32"), "checkpoint_crc32");
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

// A figure JSON cannot hold when it is not finite: NaN and infinities are written as null
// (nlohmann's dump), which read back as NaN (a test set none of whose samples could be read, a
// model whose scores overflow on one; read as a number, the result was refused and the job
// waited for it for ever).
double figure_at(const nlohmann::json& message, const char* key) {
  const nlohmann::json& value = message.at(key);
  return value.is_null() ? std::numeric_limits<double>::quiet_NaN() : value.get<double>();
}

std::int64_t step_or(const nlohmann::json& message, const char* key, std::int64_t absent) {
  return integer_or(message, key, absent, -1, kMaxWireStep);
}

std::int64_t step_at(const nlohmann::json& message, const char* key) {
  return integer_at(message, key, -1, kMaxWireStep);
}

ProgressReport progress_report_from_json(const nlohmann::json& j) {
  ProgressReport report;
  report.step = step_at(j, "step");
  report.epoch = step_at(j, "epoch");
  report.loss = figure_at(j, "loss");
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
  result.step = step_at(j, "step");
  result.test_accuracy = figure_at(j, "test_accuracy");
  result.test_loss = figure_at(j, "test_loss");
  result.stopped = j.at("stopped").get<bool>();
  return result;
}

std::string job_token(const std::string& text, const std::string& source) {
  std::string token = trim(text);
  if (token.empty()) throw InputError(source + ": no token; accepted: the job's token");
  return token;
}

std::string read_token_file(const std::string& path) {
  const std::string token = trim(read_file(path));
  if (token.empty()) throw InputError(path, 0, "the job's token file is empty");
  return token;
}

std::string read_job_token_file(const std::string& path) {
  struct stat status {};
  if (::stat(path.c_str(), &status) == 0 && (status.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(status.st_mode & 07777));
    throw InputError(path, 0,
                     std::string("mode ") + mode +
                         " lets other users read or change the job's token; accepted: a file "
                         "only its owner can read (chmod 600 " +
                         path + ")");
  }
  std::string token = read_token_file(path);
  if (token.size() < 16) {
    throw InputError(path, 0,
                     "a token of " + std::to_string(token.size()) +
                         " characters is too short to keep strangers out; accepted: 16 or more "
                         "(a new job makes 64 hex digits: remove the file to have one made)");
  }
  return token;
}

std::string generation_prefix(std::int64_t generation) {
  return "gen/" + std::to_string(generation) + "/";
}

}  // namespace transient::train
