#include "transient/launch/worker_process.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace transient::launch {

WorkerProcess::WorkerProcess(const std::vector<std::string>& args) {
  // Everything the child needs is prepared before fork: after it, only async-signal-safe calls.
  std::vector<std::string> storage;
  storage.reserve(args.size() + 1);
  storage.push_back("/proc/self/exe");
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& arg : storage) argv.push_back(arg.data());
  argv.push_back(nullptr);
  const pid_t parent = ::getpid();

  const pid_t pid = ::fork();
  if (pid < 0)
    throw std::runtime_error(std::string("cannot start a worker: ") + std::strerror(errno));
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    // Ctrl-C reaches the whole process group: the launcher turns it into a pause of the job, so
    // its workers ignore it (an ignored signal stays ignored across exec).
    ::signal(SIGINT, SIG_IGN);
    if (::getppid() != parent) ::_exit(127);  // the launcher died before prctl took effect
    ::execv("/proc/self/exe", argv.data());
    ::_exit(127);
  }
  pid_ = pid;
}

WorkerProcess::WorkerProcess(WorkerProcess&& other) noexcept
    : pid_(other.pid_), status_(other.status_) {
  other.pid_ = -1;
}

WorkerProcess::~WorkerProcess() { kill(); }

std::optional<int> WorkerProcess::poll() {
  if (status_ || pid_ < 0) return status_;
  int status = 0;
  pid_t rc;
  do {
    rc = ::waitpid(pid_, &status, WNOHANG);
  } while (rc < 0 && errno == EINTR);
  if (rc == pid_) status_ = status;
  return status_;
}

int WorkerProcess::wait() {
  if (status_ || pid_ < 0) return status_.value_or(0);
  int status = 0;
  pid_t rc;
  do {
    rc = ::waitpid(pid_, &status, 0);
  } while (rc < 0 && errno == EINTR);
  status_ = status;
  return status;
}

void WorkerProcess::kill() {
  if (pid_ < 0 || poll()) return;
  ::kill(pid_, SIGKILL);
  wait();
}

std::string describe_wait_status(int status) {
  if (WIFEXITED(status)) return "exit code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    return "killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
           ::strsignal(WTERMSIG(status)) + ")";
  }
  return "wait status " + std::to_string(status);
}

}  // namespace transient::launch
