#include "transient/launch/fork_server.h"

#include <dirent.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>

namespace transient::launch {
namespace {

// A request: kSpawn, then the worker's arguments, each ended by '\0' (none is a request too).
constexpr char kSpawn = 'S';
constexpr std::size_t kMaxRequest = 64 * 1024;

// The memory of main's argv strings, which /proc/PID/cmdline shows: rewritten in place to name
// what a forked process is.
struct Title {
  char* begin = nullptr;
  std::size_t size = 0;

  void set(const std::vector<std::string>& words) const {
    if (begin == nullptr || size == 0) return;
    std::size_t at = 0;
    for (const auto& word : words) {
      if (at >= size - 1) break;
      const std::size_t n = std::min(word.size(), size - 1 - at);
      std::memcpy(begin + at, word.data(), n);
      at += n;
      begin[at++] = '\0';
    }
    std::memset(begin + at, 0, size - at);
  }
};

int count_threads() {
  DIR* tasks = ::opendir("/proc/self/task");
  if (tasks == nullptr) return -1;
  int n = 0;
  while (const dirent* entry = ::readdir(tasks)) {
    if (entry->d_name[0] != '.') ++n;
  }
  ::closedir(tasks);
  return n;
}

void send_reply(int socket, std::int64_t reply) {
  while (::send(socket, &reply, sizeof reply, MSG_NOSIGNAL) < 0 && errno == EINTR) {
  }
}

std::vector<std::string> split_request(const char* data, std::size_t size) {
  std::vector<std::string> args;
  std::size_t at = 0;
  while (at < size) {
    const std::size_t end = std::find(data + at, data + size, '\0') - data;
    args.emplace_back(data + at, end - at);
    at = end + 1;
  }
  return args;
}

// The worker, forked by a go-between that exits at once: once it is the launcher's child, it
// asks to die with it, says its pid, and runs the entry.
[[noreturn]] void become_worker(int socket, pid_t launcher, pid_t go_between,
                                ForkServer::Entry entry, const Title& title,
                                std::vector<std::string> args) {
  while (::getppid() == go_between) ::sched_yield();
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != launcher) ::_exit(127);  // the launcher died meanwhile
  send_reply(socket, ::getpid());
  ::close(socket);
  std::vector<std::string> words{title.begin != nullptr ? std::string(title.begin) : ""};
  words.insert(words.end(), args.begin(), args.end());
  title.set(words);
  const int code = entry(args);
  std::fflush(nullptr);
  std::_Exit(code);
}

[[noreturn]] void serve(int socket, pid_t launcher, ForkServer::Entry entry, const Title& title) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != launcher) ::_exit(0);
  ::signal(SIGINT, SIG_IGN);  // workers inherit it, as the exec'd ones do (worker_process.cc)
  title.set({title.begin != nullptr ? std::string(title.begin) : "", "fork-server"});
  std::vector<char> request(kMaxRequest);
  for (;;) {
    const ssize_t n = ::recv(socket, request.data(), request.size(), MSG_TRUNC);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) ::_exit(0);  // the launcher closed its end, or died
    if (static_cast<std::size_t>(n) > request.size() || request[0] != kSpawn) {
      send_reply(socket, -EINVAL);
      continue;
    }
    auto args = split_request(request.data() + 1, static_cast<std::size_t>(n) - 1);
    const pid_t go_between = ::fork();
    if (go_between == 0) {
      const pid_t self = ::getpid();  // the worker's parent until it is the launcher's child
      const pid_t worker = ::fork();
      if (worker == 0) become_worker(socket, launcher, self, entry, title, std::move(args));
      if (worker < 0) send_reply(socket, -errno);
      ::_exit(0);
    }
    if (go_between < 0) {
      send_reply(socket, -errno);
      continue;
    }
    while (::waitpid(go_between, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
}

}  // namespace

std::unique_ptr<ForkServer> ForkServer::start(Entry entry, int argc, char** argv,
                                              std::string* why_not) {
  auto fail = [&](const std::string& why) -> std::unique_ptr<ForkServer> {
    if (why_not != nullptr) *why_not = why;
    return nullptr;
  };
  if (const int threads = count_threads(); threads != 1) {
    return fail("this process has " + std::to_string(threads) + " threads, not one");
  }
  Title title;
  if (argc > 0 && argv != nullptr && argv[0] != nullptr) {
    title.begin = argv[0];
    title.size =
        static_cast<std::size_t>(argv[argc - 1] + std::strlen(argv[argc - 1]) + 1 - argv[0]);
  }
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
    return fail(std::string("PR_SET_CHILD_SUBREAPER: ") + std::strerror(errno));
  }
  int sockets[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sockets) != 0) {
    return fail(std::string("socketpair: ") + std::strerror(errno));
  }
  const pid_t launcher = ::getpid();
  std::fflush(nullptr);  // or what stdio holds would be written again by the server's workers
  const pid_t server = ::fork();
  if (server < 0) {
    const int error = errno;
    ::close(sockets[0]);
    ::close(sockets[1]);
    return fail(std::string("fork: ") + std::strerror(error));
  }
  if (server == 0) {
    ::close(sockets[0]);
    serve(sockets[1], launcher, entry, title);
  }
  ::close(sockets[1]);
  timeval timeout{10, 0};
  ::setsockopt(sockets[0], SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  return std::unique_ptr<ForkServer>(new ForkServer(sockets[0], server));
}

ForkServer::~ForkServer() {
  ::close(socket_);
  // It exits on reading the end of the socket; one stopped or stuck is killed after a second.
  for (int i = 0; i < 100; ++i) {
    const pid_t rc = ::waitpid(server_, nullptr, WNOHANG);
    if (rc == server_ || (rc < 0 && errno != EINTR)) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(server_, SIGKILL);
  while (::waitpid(server_, nullptr, 0) < 0 && errno == EINTR) {
  }
}

pid_t ForkServer::spawn(const std::vector<std::string>& args) {
  if (!usable_) throw std::runtime_error("the fork server is gone");
  std::string request(1, kSpawn);
  for (const auto& arg : args) {
    request += arg;
    request += '\0';
  }
  if (request.size() > kMaxRequest) {
    throw std::runtime_error("the fork server takes at most 64 KiB of arguments");
  }
  // Any failure but a refused fork leaves the exchange out of step: the server is used no more.
  auto gone = [this](const std::string& why) {
    usable_ = false;
    return std::runtime_error("the fork server " + why);
  };
  ssize_t sent;
  do {
    sent = ::send(socket_, request.data(), request.size(), MSG_NOSIGNAL);
  } while (sent < 0 && errno == EINTR);
  if (sent < 0 && (errno == EPIPE || errno == ECONNRESET || errno == ECONNREFUSED)) {
    throw gone("is gone");
  }
  if (sent < 0) throw gone(std::string("cannot be reached: ") + std::strerror(errno));
  std::int64_t reply = 0;
  ssize_t got;
  do {
    got = ::recv(socket_, &reply, sizeof reply, 0);
  } while (got < 0 && errno == EINTR);
  if (got == 0 || (got < 0 && errno == ECONNRESET)) throw gone("is gone");
  if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
    throw gone("did not answer within 10 s");
  }
  if (got < 0) throw gone(std::string("cannot be reached: ") + std::strerror(errno));
  if (got != sizeof reply) throw gone("answered nonsense");
  if (reply <= 0) {
    throw std::runtime_error(std::string("the fork server cannot fork: ") +
                             std::strerror(static_cast<int>(-reply)));
  }
  return static_cast<pid_t>(reply);
}

}  // namespace transient::launch
