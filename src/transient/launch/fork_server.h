// A fork server: a process forked from the launcher at its start, while it has one thread, that
// starts the launcher's workers by fork alone, without exec. A worker so started begins with the
// program's libraries loaded and initialised: libtorch's static start-up (registering its
// operators) costs each process 0.15-0.4 s of CPU, and every replacement paid it again.
//
// A worker it starts is the launcher's child, as one started by fork + exec is (worker_process.h):
// the launcher is the child subreaper (PR_SET_CHILD_SUBREAPER) and the server forks the worker
// through a go-between that exits at once, so that the worker is handed to the launcher; it then
// asks for SIGKILL when the launcher dies (PR_SET_PDEATHSIG) and only then says its pid. The
// launcher waits for it, signals it and reaps it as before. The server itself exits when the
// launcher closes its end of their socket or dies, and ignores Ctrl-C (the launcher turns that
// into a pause of the job). Its command line reads `PROGRAM fork-server`, a worker's
// `PROGRAM ARGS...` (cut to the length of the launcher's own command line).
//
// Used by the launcher's main thread only. Torch-free: the worker's code is the entry given.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

namespace transient::launch {

class ForkServer {
 public:
  // What a worker process runs: its arguments (the command line after the program) in, its exit
  // code out. The process ends with that code once stdio is flushed, running no exit handlers.
  using Entry = int (*)(const std::vector<std::string>& args);

  // Forks the server. `argc` and `argv` are main's (their memory holds the processes' titles).
  // nullptr, with `why_not` set, when this process already has more than one thread (a fork
  // would copy it in a state no other thread can finish) or a system call fails: the caller
  // then starts workers by exec.
  static std::unique_ptr<ForkServer> start(Entry entry, int argc, char** argv,
                                           std::string* why_not = nullptr);
  // Closes the server's socket: it exits. The workers it started run on.
  ~ForkServer();
  ForkServer(const ForkServer&) = delete;
  ForkServer& operator=(const ForkServer&) = delete;

  // Starts a worker running `entry(args)`; returns its pid once it is this process's child and
  // dies with it. Throws std::runtime_error if the server cannot fork, or is gone or silent for
  // 10 s (then it is used no more: every later call throws).
  pid_t spawn(const std::vector<std::string>& args);

  pid_t pid() const { return server_; }

 private:
  ForkServer(int socket, pid_t server) : socket_(socket), server_(server) {}
  int socket_;
  pid_t server_;
  bool usable_ = true;
};

}  // namespace transient::launch
