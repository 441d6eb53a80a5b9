// A worker process started by the launcher: fork + exec of this very program (/proc/self/exe)
// with the `worker` subcommand, or a child a fork server started (fork_server.h). The child asks
// the kernel to SIGKILL it when the launcher dies (PR_SET_PDEATHSIG), so no worker outlives a
// crashed launcher; the object kills and reaps its child in its destructor, so no worker outlives
// the launcher on any exit path either. Used by the launcher's main thread only (PR_SET_PDEATHSIG
// follows the thread that forked).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace transient::launch {

class WorkerProcess {
 public:
  // Starts `/proc/self/exe args...`. Throws std::runtime_error if fork fails.
  explicit WorkerProcess(const std::vector<std::string>& args);
  // Takes over `child`, a child process of this one started otherwise (by a fork server).
  explicit WorkerProcess(pid_t child) : pid_(child) {}
  ~WorkerProcess();
  WorkerProcess(WorkerProcess&& other) noexcept;
  WorkerProcess& operator=(WorkerProcess&&) = delete;
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  pid_t pid() const { return pid_; }

  // The child's wait status if it has exited (reaped now or earlier); nullopt while it runs.
  std::optional<int> poll();
  // Waits for the child to exit and returns its wait status.
  int wait();
  // SIGKILLs the child if it still runs and reaps it.
  void kill();

 private:
  pid_t pid_ = -1;
  std::optional<int> status_;
};

// "exit code 3" or "killed by signal 9 (Killed)", for messages.
std::string describe_wait_status(int status);

}  // namespace transient::launch
