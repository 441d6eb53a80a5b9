// A checkpoint as the manifest lists it (checkpoint.h writes and reads them), without libtorch:
// the worker's connection sends and fetches checkpoints by their record.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace transient::train {

// One entry of the manifest.
struct CheckpointRecord {
  std::string file;  // name inside the checkpoint directory
  std::int64_t step = 0;
  std::int64_t bytes = 0;
  std::uint32_t crc32 = 0;
  double write_s = 0;  // time to serialise and write (not kept in the manifest)
};

// The job a checkpoint belongs to and the steps it holds, as its bytes say.
struct CheckpointIdentity {
  std::string model;
  std::int64_t global_batch = 0;
  std::uint64_t seed = 0;
  std::int64_t step = 0;
};

// zlib's CRC-32 of `bytes`.
std::uint32_t crc32_of(const char* bytes, std::size_t size);

}  // namespace transient::train
