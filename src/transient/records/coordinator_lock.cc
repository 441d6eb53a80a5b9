#include "transient/records/coordinator_lock.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <optional>
#include <sstream>

namespace transient::records {
namespace {

// File systems of this machine's own disks and memory, whose flocks are the kernel's and whose
// inode numbers stat and /proc/locks show alike (statfs's f_type, linux/magic.h). Any other is
// left unknown: a network file system's lock may be held on another host.
bool local_file_system(long type) {
  switch (static_cast<unsigned long>(type)) {
    case 0xEF53UL:      // ext2, ext3, ext4
    case 0x58465342UL:  // xfs
    case 0x9123683EUL:  // btrfs
    case 0x01021994UL:  // tmpfs
    case 0xF2F52010UL:  // f2fs
    case 0x2FC12FC1UL:  // zfs
      return true;
    default:
      return false;
  }
}

// /proc/locks leaves out the locks of processes that its PID namespace cannot see; only the
// initial namespace's (PROC_PID_INIT_INO, a constant of the kernel's ABI) sees them all.
bool in_the_initial_pid_namespace() {
  char target[64] = {};
  const ssize_t n = ::readlink("/proc/self/ns/pid", target, sizeof(target) - 1);
  return n > 0 && std::string(target, static_cast<std::size_t>(n)) == "pid:[4026531836]";
}

// The text of /proc/locks, or nullopt if it cannot be read.
std::optional<std::string> proc_locks() {
  const int fd = ::open("/proc/locks", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string text;
  char buffer[8192];
  ssize_t n = 0;
  while ((n = ::read(fd, buffer, sizeof buffer)) > 0 || (n < 0 && errno == EINTR)) {
    if (n > 0) text.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);
  if (n < 0) return std::nullopt;
  return text;
}

}  // namespace

CoordinatorLock lock_in_proc_locks(const std::string& proc_locks, std::uint64_t inode) {
  // "12: FLOCK  ADVISORY  WRITE 4242 fd:00:2531448 0 EOF"; a process waiting for that lock is
  // "12: -> FLOCK ..." after it (it holds nothing); a lock on no inode names "<none>:0".
  std::istringstream in(proc_locks);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(' ') == std::string::npos) continue;
    std::istringstream words(line);
    std::string word;
    bool waiting = false;
    std::string file;  // MAJOR:MINOR:INODE
    while (words >> word) {
      if (word == "->") waiting = true;
      if (std::count(word.begin(), word.end(), ':') == 2) {
        file = word;
        break;
      }
      if (word == "<none>:0") break;
    }
    if (waiting || word == "<none>:0") continue;
    if (file.empty()) return CoordinatorLock::kUnknown;
    const std::string number = file.substr(file.rfind(':') + 1);
    std::uint64_t locked = 0;
    const auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), locked);
    if (error != std::errc() || end != number.data() + number.size() || number.empty()) {
      return CoordinatorLock::kUnknown;
    }
    if (locked == inode) return CoordinatorLock::kHeld;
  }
  return CoordinatorLock::kFree;
}

CoordinatorLock probe_coordinator_lock(const std::string& lock_path) {
  struct stat file {};
  struct statfs file_system {};
  if (::stat(lock_path.c_str(), &file) != 0 || !S_ISREG(file.st_mode) ||
      ::statfs(lock_path.c_str(), &file_system) != 0 || !local_file_system(file_system.f_type) ||
      !in_the_initial_pid_namespace()) {
    return CoordinatorLock::kUnknown;
  }
  // The kernel writes /proc/locks a page at a time, going on from the same place in its list: a
  // lock let go before ours between two pages moves ours back into the page already read. Free
  // is what two readings say.
  for (int reading = 0; reading < 2; ++reading) {
    const auto text = proc_locks();
    if (!text) return CoordinatorLock::kUnknown;
    const CoordinatorLock lock = lock_in_proc_locks(*text, static_cast<std::uint64_t>(file.st_ino));
    if (lock != CoordinatorLock::kFree) return lock;
  }
  return CoordinatorLock::kFree;
}

}  // namespace transient::records
