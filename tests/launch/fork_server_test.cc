// The fork server with real processes: what it starts runs the entry in a child of the caller
// (no exec could run a function of this test), exits with the entry's code, dies with the
// process that started the server, and is named on its command line.
#include "transient/launch/fork_server.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>

#include "transient/launch/worker_process.h"

namespace transient::launch {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::filesystem::path scratch_root() {
  return std::filesystem::temp_directory_path() /
         ("transient-fork-server-test-" + std::to_string(::getpid()));
}

std::string scratch(const std::string& name) {
  std::filesystem::create_directories(scratch_root());
  return (scratch_root() / name).string();
}

class RemoveScratch : public ::testing::Environment {
 public:
  void TearDown() override { std::filesystem::remove_all(scratch_root()); }
};

::testing::Environment* const kRemoveScratch =
    ::testing::AddGlobalTestEnvironment(new RemoveScratch);

// Writes its parent's pid, its own command line and its arguments to the file args[0]; exits
// with args[1].
int record_and_exit(const std::vector<std::string>& args) {
  std::ofstream out(args.at(0), std::ios::binary);
  out << ::getppid() << "\n" << read_file("/proc/self/cmdline") << "\n";
  for (const auto& arg : args) out << arg << " ";
  return std::stoi(args.at(1));
}

int sleep_for_ever(const std::vector<std::string>&) {
  for (;;) ::pause();
}

// Whether `pid` has ended: no such process, or a zombie not reaped yet.
bool ended(pid_t pid) {
  const std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  if (stat.empty()) return true;
  const auto close = stat.rfind(')');
  return close != std::string::npos && stat.size() > close + 2 && stat[close + 2] == 'Z';
}

bool eventually(const std::function<bool()>& condition) {
  for (int i = 0; i < 1000; ++i) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

TEST(ForkServer, AWorkerRunsTheEntryAsThisProcesssChildAndExitsWithItsCode) {
  std::string why;
  auto server = ForkServer::start(record_and_exit, 0, nullptr, &why);
  ASSERT_NE(server, nullptr) << why;
  for (const int code : {7, 0}) {
    const std::string path = scratch("record-" + std::to_string(code));
    WorkerProcess worker(server->spawn({path, std::to_string(code), "more words"}));
    const int status = worker.wait();
    ASSERT_TRUE(WIFEXITED(status)) << describe_wait_status(status);
    EXPECT_EQ(WEXITSTATUS(status), code);
    std::istringstream recorded(read_file(path));
    pid_t parent = 0;
    recorded >> parent;
    EXPECT_EQ(parent, ::getpid()) << "the worker is not this process's child";
    EXPECT_NE(read_file(path).find(" more words "), std::string::npos) << read_file(path);
  }
}

// main's argv of this process, found where the kernel keeps it (/proc/self/stat's arg_start and
// arg_end): the memory that /proc/PID/cmdline shows.
std::vector<char*> own_argv() {
  std::string stat = read_file("/proc/self/stat");
  std::istringstream fields(stat.substr(stat.rfind(')') + 2));
  std::vector<std::string> field;
  for (std::string word; fields >> word;) field.push_back(word);
  // Fields 48 and 49 of stat(5), counted from 1 with pid and comm: 46 and 47 after them.
  char* begin = reinterpret_cast<char*>(std::stoull(field.at(45)));
  char* end = reinterpret_cast<char*>(std::stoull(field.at(46)));
  std::vector<char*> argv;
  for (char* at = begin; at < end; at += std::strlen(at) + 1) argv.push_back(at);
  return argv;
}

TEST(ForkServer, TheServerAndItsWorkersAreNamedOnTheirCommandLines) {
  auto argv = own_argv();
  ASSERT_GE(argv.size(), 1u);
  const std::string program = argv[0];
  const std::string own_line = read_file("/proc/self/cmdline");
  auto server = ForkServer::start(record_and_exit, static_cast<int>(argv.size()), argv.data());
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(read_file("/proc/self/cmdline"), own_line) << "the caller's own title changed";
  const std::string named = program + std::string("\0fork-server\0", 13);
  const std::string server_cmdline = "/proc/" + std::to_string(server->pid()) + "/cmdline";
  EXPECT_TRUE(eventually([&] {
    return read_file(server_cmdline).substr(0, named.size()) == named;
  })) << read_file(server_cmdline);

  const std::string path = scratch("titled");
  WorkerProcess worker(server->spawn({path, "0", "worker", "--coordinator", "host:1234"}));
  ASSERT_EQ(worker.wait(), 0);
  const std::string recorded = read_file(path);
  const std::string line = recorded.substr(recorded.find('\n') + 1);
  // As much of "PROGRAM PATH 0 worker --coordinator host:1234" as fits in this one's title.
  std::string expected = program + '\0' + path + '\0' + "0" + '\0' + "worker" + '\0' +
                         "--coordinator" + '\0' + "host:1234" + '\0';
  const std::size_t room = own_line.size() - 1;
  expected = expected.substr(0, std::min(expected.size(), room));
  EXPECT_EQ(line.substr(0, expected.size()), expected);
}

TEST(ForkServer, ItsWorkersDieWithTheProcessThatStartedIt) {
  int pids[2];
  ASSERT_EQ(::pipe(pids), 0);
  const pid_t launcher = ::fork();
  ASSERT_GE(launcher, 0);
  if (launcher == 0) {
    // A launcher: starts a server and a worker with no arguments, says their pids and dies
    // (without destructors, as a crash would leave them).
    try {
      auto server = ForkServer::start(sleep_for_ever, 0, nullptr);
      if (server == nullptr) ::_exit(3);
      const pid_t reported[2] = {server->pid(), server->spawn({})};
      if (::write(pids[1], reported, sizeof reported) != sizeof reported) ::_exit(4);
      ::_exit(0);
    } catch (...) {
      ::_exit(5);
    }
  }
  ::close(pids[1]);
  pid_t reported[2] = {0, 0};
  ASSERT_EQ(::read(pids[0], reported, sizeof reported), static_cast<ssize_t>(sizeof reported));
  ::close(pids[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(launcher, &status, 0), launcher);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_TRUE(eventually([&] { return ended(reported[0]); })) << "the server outlived it";
  EXPECT_TRUE(eventually([&] { return ended(reported[1]); })) << "the worker outlived it";
  for (const pid_t pid : reported) ::waitpid(pid, nullptr, WNOHANG);  // if they became ours
}

TEST(ForkServer, WhenTheServerIsGoneSpawnSaysSoEveryTime) {
  auto server = ForkServer::start(record_and_exit, 0, nullptr);
  ASSERT_NE(server, nullptr);
  ::kill(server->pid(), SIGKILL);
  for (int i = 0; i < 2; ++i) {
    try {
      server->spawn({scratch("never"), "0"});
      ADD_FAILURE() << "spawn started a worker without a server";
    } catch (const std::runtime_error& error) {
      EXPECT_NE(std::string(error.what()).find("fork server is gone"), std::string::npos)
          << error.what();
    }
  }
}

TEST(ForkServer, IsNotStartedInAProcessWithThreads) {
  std::mutex mutex;
  std::condition_variable done;
  bool over = false;
  std::thread other([&] {
    std::unique_lock<std::mutex> lock(mutex);
    done.wait(lock, [&] { return over; });
  });
  std::string why;
  EXPECT_EQ(ForkServer::start(record_and_exit, 0, nullptr, &why), nullptr);
  EXPECT_EQ(why, "this process has 2 threads, not one");
  {
    std::lock_guard<std::mutex> lock(mutex);
    over = true;
  }
  done.notify_one();
  other.join();
}

}  // namespace
}  // namespace transient::launch
