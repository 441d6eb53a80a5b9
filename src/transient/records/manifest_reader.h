// Reading checkpoints/manifest.json: the kept checkpoints with their sizes and CRC-32 checksums,
// in step order. (Whether a checkpoint's bytes match is the trainer's business:
// train/checkpoint.h.)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "transient/records/read_problem.h"

namespace transient::records {

struct CheckpointEntry {
  std::string file;         // the file's name in checkpoints/
  std::int64_t step = 0;    // the step it holds
  std::int64_t bytes = 0;   // its size
  std::uint32_t crc32 = 0;  // its checksum
};

struct ManifestRead {
  std::vector<CheckpointEntry> checkpoints;  // the readable entries
  std::vector<ReadProblem> problems;         // the file or the entries that could not be read
};

// Reads `path`; never throws for bad content.
ManifestRead read_manifest(const std::string& path);
// The same from text; `name` stands for the path in problems.
ManifestRead parse_manifest(const std::string& text, const std::string& name);

}  // namespace transient::records
