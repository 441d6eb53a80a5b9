#include "transient/records/manifest_reader.h"

#include <nlohmann/json.hpp>

#include "transient/core/json_number.h"
#include "transient/records/internal/record_file.h"

namespace transient::records {

ManifestRead parse_manifest(const std::string& text, const std::string& name) {
  ManifestRead read;
  const nlohmann::json json = nlohmann::json::parse(text, nullptr, false);
  if (json.is_discarded() || !json.is_object() || !json.contains("checkpoints") ||
      !json["checkpoints"].is_array()) {
    read.problems.push_back(
        {name, 0, "not a checkpoint manifest (a JSON object with \"checkpoints\": [...])"});
    return read;
  }
  int index = 0;
  for (const auto& entry : json["checkpoints"]) {
    ++index;
    try {
      CheckpointEntry checkpoint;
      checkpoint.file = entry.at("file").get<std::string>();
      checkpoint.step = whole_number_as<std::int64_t>(entry.at("step"), "step", 0);
      checkpoint.bytes = whole_number_as<std::int64_t>(entry.at("bytes"), "bytes", 0);
      checkpoint.crc32 = whole_number_as<std::uint32_t>(entry.at("crc32"), "crc32");
      read.checkpoints.push_back(std::move(checkpoint));
    } catch (const nlohmann::json::exception& error) {
      read.problems.push_back(
          {name, 0, "checkpoint " + std::to_string(index) + ": " + error.what()});
    }
  }
  return read;
}

ManifestRead read_manifest(const std::string& path) {
  const auto file = internal::read_record_file(path);
  if (!file.text) return {{}, {*file.problem}};
  return parse_manifest(*file.text, path);
}

}  // namespace transient::records
