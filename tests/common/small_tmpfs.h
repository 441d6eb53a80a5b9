// A small tmpfs mounted on a folder while it lives: a disk that fills, for tests of what a full
// disk does (mounting needs root). Unmounted (lazily, MNT_DETACH) however the test ends, so that
// a failed assertion leaves no mount behind.
#pragma once

#include <sys/mount.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

namespace transient::testing {

class SmallTmpfs {
 public:
  // Mounts a tmpfs of `size` ("16k", "4m") on the existing folder `dir`.
  SmallTmpfs(std::string dir, const std::string& size) : dir_(std::move(dir)) {
    if (::mount("tmpfs", dir_.c_str(), "tmpfs", 0, ("size=" + size).c_str()) != 0) {
      why_not_ = std::string("cannot mount a small tmpfs (needs root): ") + std::strerror(errno);
    }
  }
  ~SmallTmpfs() {
    if (why_not_.empty()) ::umount2(dir_.c_str(), MNT_DETACH);
  }
  SmallTmpfs(const SmallTmpfs&) = delete;
  SmallTmpfs& operator=(const SmallTmpfs&) = delete;

  // Empty once mounted; else why not, for the test's GTEST_SKIP.
  const std::string& why_not() const { return why_not_; }

 private:
  std::string dir_;
  std::string why_not_;
};

}  // namespace transient::testing
