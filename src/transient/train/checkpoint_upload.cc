#include "transient/train/checkpoint_upload.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <utility>

#include "transient/core/error.h"
#include "transient/train/rendezvous_store.h"

namespace transient::train {
namespace {

constexpr std::int64_t kMaxCheckpointBytes = std::int64_t{1} << 40;  // 1 TiB

}  // namespace

CheckpointUpload::CheckpointUpload(std::int64_t id, std::int64_t step, std::int64_t bytes,
                                   std::string path, std::int64_t total_steps)
    : id_(id), path_(std::move(path)), started_(std::chrono::steady_clock::now()) {
  record_.step = step;
  record_.bytes = bytes;
  record_.file = checkpoint_name(step);
  crc32_ = static_cast<std::uint32_t>(::crc32(0L, Z_NULL, 0));
  if (step < 0 || step > total_steps || bytes <= 0 || bytes > kMaxCheckpointBytes) {
    fail("a checkpoint of step " + std::to_string(step) + " and " + std::to_string(bytes) +
         " bytes is refused");
    return;
  }
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) fail("cannot write " + path_ + ": " + std::strerror(errno));
}

CheckpointUpload::~CheckpointUpload() {
  if (!adopted_) close_and_remove();
}

double CheckpointUpload::seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
}

void CheckpointUpload::close_and_remove() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  std::error_code ignored;
  std::filesystem::remove(path_, ignored);
}

void CheckpointUpload::fail(const std::string& why) {
  close_and_remove();
  failure_ = why;
}

void CheckpointUpload::add_chunk(const std::string& base64) {
  std::string bytes;
  try {
    bytes = decode_store_value(base64);
  } catch (const std::invalid_argument&) {
    return fail("a chunk of the checkpoint of step " + std::to_string(record_.step) +
                " is not base64");
  }
  received_ += static_cast<std::int64_t>(bytes.size());
  if (received_ > record_.bytes) return fail("more bytes than announced");
  for (std::size_t done = 0; done < bytes.size();) {
    const ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail("cannot write " + path_ + ": " + std::strerror(errno));
    done += static_cast<std::size_t>(n);
  }
  crc32_ = static_cast<std::uint32_t>(::crc32(crc32_, reinterpret_cast<const Bytef*>(bytes.data()),
                                              static_cast<uInt>(bytes.size())));
}

std::string CheckpointUpload::check(std::uint32_t crc32) {
  record_.crc32 = crc32;
  if (received_ != record_.bytes || crc32_ != record_.crc32) {
    fail("the checkpoint of step " + std::to_string(record_.step) +
         " arrived damaged (size or CRC-32 differs from what was sent)");
  }
  return failure_;
}

std::string CheckpointUpload::adopt(int sync_error, CheckpointDirectory& directory) {
  if (sync_error != 0) {
    fail("cannot write " + path_ + ": " + std::strerror(sync_error));
    return failure_;
  }
  ::close(fd_);
  fd_ = -1;
  try {
    directory.adopt(path_, record_);
  } catch (const InputError& error) {
    fail(error.what());
    return failure_;
  }
  adopted_ = true;
  return "";
}

}  // namespace transient::train
