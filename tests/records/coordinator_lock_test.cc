// Whether a coordinator holds a job's lock, told without taking it: the rule on /proc/locks'
// lines, and a real process that holds the flock and is then killed, as a coordinator is.
#include "transient/records/coordinator_lock.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "common/lock_holder.h"

namespace transient::records {
namespace {

TEST(RecordsCoordinatorLock, ALockHeldOnTheInodeIsHeldAndAWaiterHoldsNothing) {
  const std::string locks =
      "1: POSIX  ADVISORY  WRITE 812 fd:00:2531452 0 EOF\n"
      "2: FLOCK  ADVISORY  WRITE 4242 fe:00:10994503 0 EOF\n"
      "2: -> FLOCK  ADVISORY  WRITE 4243 fe:00:777 0 EOF\n"
      "3: OFDLCK ADVISORY  READ  -1 00:05:1234 0 EOF\n";
  EXPECT_EQ(lock_in_proc_locks(locks, 10994503), CoordinatorLock::kHeld);
  EXPECT_EQ(lock_in_proc_locks(locks, 1234), CoordinatorLock::kHeld);
  // Only waited for (the holder of inode 777 is not listed): nobody holds it.
  EXPECT_EQ(lock_in_proc_locks(locks, 777), CoordinatorLock::kFree);
  EXPECT_EQ(lock_in_proc_locks(locks, 42), CoordinatorLock::kFree);
  // A later kernel's deeper waiters are indented; a lock on no inode names none.
  EXPECT_EQ(lock_in_proc_locks("4: FLOCK  ADVISORY  WRITE 9 08:01:55 0 EOF\n"
                               "4:  -> FLOCK  ADVISORY  WRITE 10 08:01:66 0 EOF\n"
                               "5: LEASE  ACTIVE    READ  11 <none>:0 0 EOF\n",
                               66),
            CoordinatorLock::kFree);
  EXPECT_EQ(lock_in_proc_locks("", 55), CoordinatorLock::kFree);
  // A line not as the kernel writes it: the lock cannot be told, never "free".
  EXPECT_EQ(lock_in_proc_locks("1: FLOCK ADVISORY WRITE 9 somewhere 0 EOF\n", 55),
            CoordinatorLock::kUnknown);
  EXPECT_EQ(lock_in_proc_locks("1: FLOCK ADVISORY WRITE 9 08:01:5x 0 EOF\n", 55),
            CoordinatorLock::kUnknown);
}

// Why this machine cannot tell a lock of `dir`'s file system, or "" if it can: a PID namespace
// other than the initial one, or a file system other than the common local ones.
std::string why_untold(const std::string& dir) {
  char ns[64] = {};
  if (::readlink("/proc/self/ns/pid", ns, sizeof(ns) - 1) <= 0 ||
      std::string(ns) != "pid:[4026531836]") {
    return "not in the initial PID namespace";
  }
  struct statfs fs {};
  if (::statfs(dir.c_str(), &fs) != 0) return "statfs failed";
  switch (static_cast<unsigned long>(fs.f_type)) {
    case 0xEF53UL:      // ext4
    case 0x58465342UL:  // xfs
    case 0x9123683EUL:  // btrfs
    case 0x01021994UL:  // tmpfs
      return "";
    default:
      return dir + " is on no local file system";
  }
}

// A real process holds the flock, as a coordinator does: held; SIGKILLed, the kernel lets go of
// it: free. Probing takes no lock: the holder's own lock stays the only one on the file, and
// another process can take it at once after the kill.
TEST(RecordsCoordinatorLock, AHolderKilledLeavesTheLockFree) {
  const std::string dir = ::testing::TempDir() + "/records_coordinator_lock";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string lock = dir + "/.coordinator.lock";
  EXPECT_EQ(probe_coordinator_lock(lock), CoordinatorLock::kUnknown);  // no lock file
  std::ofstream(lock).close();
  if (const std::string why = why_untold(dir); !why.empty()) GTEST_SKIP() << why;
  testing::LockHolder holder(lock);
  EXPECT_EQ(probe_coordinator_lock(lock), CoordinatorLock::kHeld);
  EXPECT_EQ(probe_coordinator_lock(lock), CoordinatorLock::kHeld);
  holder.kill();
  EXPECT_EQ(probe_coordinator_lock(lock), CoordinatorLock::kFree);
  const int fd = ::open(lock.c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);  // as a coordinator taking the job back
  EXPECT_EQ(probe_coordinator_lock(lock), CoordinatorLock::kHeld);
  ::close(fd);
  EXPECT_EQ(probe_coordinator_lock(lock), CoordinatorLock::kFree);
}

// A lock file on a file system this machine cannot tell for all hosts, or not a file: unknown.
TEST(RecordsCoordinatorLock, WhatIsNoLocalLockFileIsUnknown) {
  EXPECT_EQ(probe_coordinator_lock("/proc/self/status"), CoordinatorLock::kUnknown);   // procfs
  EXPECT_EQ(probe_coordinator_lock(::testing::TempDir()), CoordinatorLock::kUnknown);  // a folder
  EXPECT_EQ(probe_coordinator_lock("/no/such/dir/.coordinator.lock"), CoordinatorLock::kUnknown);
}

}  // namespace
}  // namespace transient::records
