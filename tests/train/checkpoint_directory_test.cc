// The job's checkpoint directory and its manifest (checkpoint_directory.h), without libtorch: the
// bytes here are any bytes; what a checkpoint holds is checkpoint_test.cc's.
#include "transient/train/checkpoint_directory.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "transient/core/error.h"

namespace transient::train {
namespace {

namespace fs = std::filesystem;

// Makes `path` immutable while it lives (chattr +i: not even root may replace it), so that a
// write of the manifest fails where a crash could stop it; empty why_not() if it could.
class Immutable {
 public:
  explicit Immutable(const std::string& path) : path_(path) { why_not_ = set(true); }
  ~Immutable() {
    if (why_not_.empty()) set(false);
  }
  Immutable(const Immutable&) = delete;
  Immutable& operator=(const Immutable&) = delete;
  const std::string& why_not() const { return why_not_; }

 private:
  std::string set(bool on) {
    const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return "cannot open " + path_;
    int flags = 0;
    std::string why;
    if (::ioctl(fd, FS_IOC_GETFLAGS, &flags) != 0) {
      why = "this file system keeps no inode flags";
    } else {
      flags = on ? flags | FS_IMMUTABLE_FL : flags & ~FS_IMMUTABLE_FL;
      if (::ioctl(fd, FS_IOC_SETFLAGS, &flags) != 0) {
        why = "cannot set the immutable flag (needs root and ext4, XFS or btrfs)";
      }
    }
    ::close(fd);
    return why;
  }
  std::string path_;
  std::string why_not_;
};

// A step's checkpoint written again with other bytes (a step trained again after a restart, two
// writers of one step) replaced the file before the manifest, which still held the old checksum:
// a crash between the two left the manifest vouching for a file that fails its check. Now the
// old entry leaves the manifest first, so that when the manifest cannot be written nothing is
// replaced, and what it lists stays readable.
TEST(CheckpointDirectory, AStepWrittenAgainNeverLeavesTheManifestVouchingForOtherBytes) {
  const std::string dir = ::testing::TempDir() + "/checkpoint_directory_again";
  fs::remove_all(dir);
  fs::create_directories(dir);
  CheckpointDirectory directory(dir, 3);
  directory.write(4, "the state of step 4");
  directory.write(5, "the state of step 5");

  {
    Immutable frozen(directory.manifest_path());
    if (!frozen.why_not().empty()) GTEST_SKIP() << "skipped: " << frozen.why_not();
    EXPECT_THROW(directory.write(5, "step 5 trained again"), InputError);
    const std::string incoming = directory.incoming_path(5, "w1");
    std::ofstream(incoming) << "step 5 from another writer";
    auto record = directory.list().back();
    record.bytes = 26;
    record.crc32 ^= 1;
    EXPECT_THROW(directory.adopt(incoming, record), InputError);
    EXPECT_FALSE(fs::exists(incoming)) << "an incoming file not adopted is left behind";
  }
  for (const auto& record : directory.list()) {
    EXPECT_NO_THROW(directory.read_verified(record)) << record.file;
  }
  EXPECT_EQ(directory.list().back().step, 5);

  // Written when the manifest can be: listed with its own bytes.
  const auto again = directory.write(5, "step 5 trained again");
  EXPECT_EQ(directory.list().back().crc32, again.crc32);
  const auto read = directory.read_verified(directory.list().back());
  EXPECT_EQ(std::string(read.begin(), read.end()), "step 5 trained again");
  EXPECT_EQ(directory.list().size(), 2u);
}

// A job resumed with a lower --keep: its older checkpoints go at once (listed first, then their
// files), never the one it resumes from; they stayed until the next write, on a disk that could
// not hold it beside them.
TEST(CheckpointDirectory, TrimmedToAKeepLowerThanItHoldsItDropsTheOldestButTheOneResumedFrom) {
  const std::string dir = ::testing::TempDir() + "/checkpoint_directory_trim";
  fs::remove_all(dir);
  fs::create_directories(dir);
  {
    CheckpointDirectory five(dir, 5);
    for (int step = 10; step <= 40; step += 10) five.write(step, "step " + std::to_string(step));
    EXPECT_TRUE(five.trim(40).empty());  // holds no more than it keeps
  }
  CheckpointDirectory two(dir, 2);
  const auto dropped = two.trim(40);
  ASSERT_EQ(dropped.size(), 2u);
  EXPECT_EQ(dropped[0].step, 10);
  EXPECT_EQ(dropped[1].step, 20);
  ASSERT_EQ(two.list().size(), 2u);
  EXPECT_EQ(two.list().front().step, 30);
  for (const auto& gone : dropped) EXPECT_FALSE(fs::exists(two.path_of(gone))) << gone.file;
  for (const auto& kept : two.list()) EXPECT_NO_THROW(two.read_verified(kept)) << kept.file;
  // Resumed from an older one than the newest: that one stays.
  CheckpointDirectory one(dir, 1);
  const auto more = one.trim(30);
  ASSERT_EQ(more.size(), 1u);
  EXPECT_EQ(more[0].step, 40);
  ASSERT_EQ(one.list().size(), 1u);
  EXPECT_EQ(one.list()[0].step, 30);
}

}  // namespace
}  // namespace transient::train
