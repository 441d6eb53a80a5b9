// A real process that holds an flock on a file, as a coordinator holds its job's
// .coordinator.lock: forked, it takes the lock with flock(2), says so and waits until it is
// killed. Its destructor kills it (SIGKILL) and reaps it, so that no test leaves it behind.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>

namespace transient::testing {

class LockHolder {
 public:
  // Forks the holder of `path` (created if missing) and returns once it holds the lock.
  explicit LockHolder(const std::string& path) {
    int ready[2];
    EXPECT_EQ(::pipe(ready), 0);
    pid_ = ::fork();
    if (pid_ == 0) {  // only async-signal-safe calls until it is killed
      ::close(ready[0]);
      const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
      if (fd < 0 || ::flock(fd, LOCK_EX) != 0) ::_exit(1);
      const char held = 1;
      if (::write(ready[1], &held, 1) != 1) ::_exit(1);
      for (;;) ::pause();
    }
    ::close(ready[1]);
    char held = 0;
    EXPECT_EQ(::read(ready[0], &held, 1), 1) << "the holder could not lock " << path;
    ::close(ready[0]);
  }
  ~LockHolder() { kill(); }
  LockHolder(const LockHolder&) = delete;
  LockHolder& operator=(const LockHolder&) = delete;

  // SIGKILL, as a coordinator killed gets, and waits until it has gone (the kernel has let go of
  // its lock by then).
  void kill() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }

 private:
  pid_t pid_ = -1;
};

}  // namespace transient::testing
