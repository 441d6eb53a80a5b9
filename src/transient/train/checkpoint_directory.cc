#include "transient/train/checkpoint_directory.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "transient/core/atomic_file.h"
#include "transient/core/error.h"
#include "transient/records/job_files.h"
#include "transient/records/manifest_reader.h"

namespace transient::train {
namespace {

// The manifest's format: the version of the checkpoints it lists (checkpoint.h).
constexpr const char* kManifestFormat = "transient-checkpoint-v2";

}  // namespace

std::string checkpoint_name(std::int64_t step) {
  char name[64];
  std::snprintf(name, sizeof(name), "step-%08lld.pt", static_cast<long long>(step));
  return name;
}

std::uint32_t crc32_of(const char* bytes, std::size_t size) {
  uLong crc = crc32(0L, Z_NULL, 0);
  // zlib takes uInt lengths: feed large buffers in pieces.
  while (size > 0) {
    const auto piece = static_cast<uInt>(std::min<std::size_t>(size, 1u << 30));
    crc = crc32(crc, reinterpret_cast<const Bytef*>(bytes), piece);
    bytes += piece;
    size -= piece;
  }
  return static_cast<std::uint32_t>(crc);
}

CheckpointDirectory::CheckpointDirectory(std::string dir, int keep)
    : dir_(std::move(dir)), keep_(std::max(1, keep)) {}

std::string CheckpointDirectory::manifest_path() const {
  return (std::filesystem::path(dir_) / records::kManifestFile).string();
}

std::string CheckpointDirectory::path_of(const CheckpointRecord& record) const {
  return (std::filesystem::path(dir_) / record.file).string();
}

CheckpointRecord CheckpointDirectory::write(std::int64_t step, std::string_view bytes) {
  const auto start = std::chrono::steady_clock::now();
  CheckpointRecord record;
  record.file = checkpoint_name(step);
  record.step = step;
  record.bytes = static_cast<std::int64_t>(bytes.size());
  record.crc32 = crc32_of(bytes.data(), bytes.size());
  unlist_if_replaced(record);
  write_file_atomically(path_of(record), bytes);
  add_to_manifest(record);
  record.write_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return record;
}

std::string CheckpointDirectory::incoming_path(std::int64_t step, const std::string& sender) const {
  return (std::filesystem::path(dir_) / (checkpoint_name(step) + ".tmp.incoming-" + sender))
      .string();
}

void CheckpointDirectory::adopt(const std::string& temporary, const CheckpointRecord& record) {
  try {
    unlist_if_replaced(record);
  } catch (const InputError&) {
    std::error_code ignored;
    std::filesystem::remove(temporary, ignored);
    throw;
  }
  std::error_code error;
  std::filesystem::rename(temporary, path_of(record), error);
  if (error) {
    std::filesystem::remove(temporary, error);
    throw InputError(path_of(record), 0, "cannot store the checkpoint: " + error.message());
  }
  sync_directory(dir_);
  add_to_manifest(record);
}

namespace {

// An exclusive lock on a checkpoint directory's manifest, held while it lives.
class ManifestLock {
 public:
  explicit ManifestLock(const std::string& dir)
      : fd_(::open((std::filesystem::path(dir) / ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC,
                   0644)) {
    if (fd_ >= 0) ::flock(fd_, LOCK_EX);
  }
  ~ManifestLock() {
    if (fd_ >= 0) ::close(fd_);  // closing releases the lock
  }
  ManifestLock(const ManifestLock&) = delete;
  ManifestLock& operator=(const ManifestLock&) = delete;

 private:
  int fd_;
};

}  // namespace

void CheckpointDirectory::add_to_manifest(const CheckpointRecord& record) const {
  // Two workers may write at once (a rank 0 dropped as silent that wakes mid-write, and the new
  // one): the manifest's read-modify-write is under an exclusive lock on the directory, and the
  // manifest is kept in step order, so the newest checkpoint is the one of the latest step.
  ManifestLock lock(dir_);
  auto records = list();
  std::vector<CheckpointRecord> kept;
  for (const auto& old : records) {
    if (old.step != record.step) kept.push_back(old);
  }
  kept.push_back(record);
  std::stable_sort(kept.begin(), kept.end(),
                   [](const auto& a, const auto& b) { return a.step < b.step; });
  publish(std::move(kept), -1);
}

std::vector<CheckpointRecord> CheckpointDirectory::trim(std::int64_t keeping) {
  ManifestLock lock(dir_);
  auto records = list();
  if (static_cast<int>(records.size()) <= keep_) return {};
  return publish(std::move(records), keeping);
}

std::vector<CheckpointRecord> CheckpointDirectory::publish(std::vector<CheckpointRecord> records,
                                                           std::int64_t keeping) const {
  std::vector<CheckpointRecord> dropped;
  for (auto old = records.begin();
       static_cast<int>(records.size()) > keep_ && old != records.end();) {
    if (old->step == keeping) {
      ++old;
      continue;
    }
    dropped.push_back(*old);
    old = records.erase(old);
  }
  write_manifest(records);
  // Only now that the manifest no longer lists them may the old files go.
  for (const auto& old : dropped) std::filesystem::remove(path_of(old));
  return dropped;
}

void CheckpointDirectory::unlist_if_replaced(const CheckpointRecord& record) const {
  ManifestLock lock(dir_);
  auto records = list();
  const auto listed = std::find_if(records.begin(), records.end(),
                                   [&](const auto& old) { return old.step == record.step; });
  if (listed == records.end() || (listed->bytes == record.bytes && listed->crc32 == record.crc32)) {
    return;
  }
  records.erase(listed);
  write_manifest(records);
}

void CheckpointDirectory::write_manifest(const std::vector<CheckpointRecord>& records) const {
  nlohmann::json manifest;
  manifest["format"] = kManifestFormat;
  manifest["checkpoints"] = nlohmann::json::array();
  for (const auto& record : records) {
    manifest["checkpoints"].push_back({{"file", record.file},
                                       {"step", record.step},
                                       {"bytes", record.bytes},
                                       {"crc32", record.crc32}});
  }
  write_file_atomically(manifest_path(), manifest.dump(2) + "\n");
}

std::vector<CheckpointRecord> CheckpointDirectory::list() const {
  const std::string path = manifest_path();
  if (!std::filesystem::exists(path)) return {};
  // Read as `transient report` reads it (records/manifest_reader.h), but strictly: a manifest
  // with any entry that cannot be read vouches for nothing.
  const auto read = records::parse_manifest(read_file(path), path);
  if (!read.problems.empty()) {
    throw InputError(path, 0, read.problems.front().what);
  }
  std::vector<CheckpointRecord> records;
  for (const auto& entry : read.checkpoints) {
    if (entry.file.find('/') != std::string::npos) {
      throw InputError(path, 0, "lists a checkpoint outside its directory: " + entry.file);
    }
    records.push_back({entry.file, entry.step, entry.bytes, entry.crc32});
  }
  return records;
}

std::vector<char> CheckpointDirectory::read_verified(const CheckpointRecord& record) const {
  const std::string path = path_of(record);
  const std::string bytes = read_file(path);
  if (static_cast<std::int64_t>(bytes.size()) != record.bytes) {
    throw InputError(path, 0,
                     "checkpoint is " + std::to_string(bytes.size()) +
                         " bytes, the manifest says " + std::to_string(record.bytes) +
                         " (truncated or overwritten)");
  }
  if (crc32_of(bytes.data(), bytes.size()) != record.crc32) {
    throw InputError(path, 0, "checkpoint is corrupt (CRC-32 differs from the manifest's)");
  }
  return std::vector<char>(bytes.begin(), bytes.end());
}

std::vector<CheckpointRecord> CheckpointDirectory::set_aside_from(std::int64_t step,
                                                                  const std::string& prefix) {
  ManifestLock lock(dir_);
  std::vector<CheckpointRecord> kept;
  std::vector<CheckpointRecord> set_aside;
  for (const auto& record : list()) (record.step >= step ? set_aside : kept).push_back(record);
  if (set_aside.empty()) return set_aside;
  write_manifest(kept);
  // Only now that the manifest no longer lists them are the files renamed.
  for (const auto& record : set_aside) {
    std::error_code ignored;  // a file already missing was not a checkpoint to resume from
    std::filesystem::rename(path_of(record), std::filesystem::path(dir_) / (prefix + record.file),
                            ignored);
  }
  return set_aside;
}

void CheckpointDirectory::remove_leftovers() const {
  if (!std::filesystem::is_directory(dir_)) return;
  for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
    if (entry.path().filename().string().find(".tmp.") != std::string::npos) {
      std::filesystem::remove(entry.path());
    }
  }
}

}  // namespace transient::train
