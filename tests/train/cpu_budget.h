// A CPU budget for the processes a test starts, as a slow or shared host gives them: a control
// group of the kernel's CPU bandwidth control, whose processes together get a share of one CPU
// per 100 ms period. A test whose job must train on through something timed (a link cut longer
// than the heartbeat timeout, a chaos of kills and stops) then trains fewer steps, and spends
// less CPU, in the same time. Without libtorch.
#pragma once

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "train/cli_process.h"

namespace transient::train::testing {

class CpuBudget {
 public:
  // Why no budget can be set here (nullopt: it can): it needs root and the cpu controller, of
  // cgroup v1 (/sys/fs/cgroup/cpu) or v2 (cpu.max).
  static std::optional<std::string> unavailable() {
    if (::geteuid() != 0) return "a CPU budget (a cgroup) needs root";
    if (!hierarchy()) {
      return "no cgroup hierarchy with the cpu controller (/sys/fs/cgroup/cpu of cgroup v1, or "
             "cpu in /sys/fs/cgroup/cgroup.subtree_control of cgroup v2)";
    }
    return std::nullopt;
  }

  // A group whose processes together get `cpus` of one CPU (0 < cpus).
  explicit CpuBudget(double cpus) {
    static std::atomic<int> count{0};
    const auto found = hierarchy();
    if (!found) throw std::runtime_error(*unavailable());
    base_ = found->first;
    v2_ = found->second;
    dir_ = base_ + "/transient-test-" + std::to_string(::getpid()) + "-" + std::to_string(count++);
    std::filesystem::create_directories(dir_);
    const long quota = static_cast<long>(cpus * 100000);
    if (v2_) {
      write(dir_ + "/cpu.max", std::to_string(quota) + " 100000");
    } else {
      write(dir_ + "/cpu.cfs_period_us", "100000");
      write(dir_ + "/cpu.cfs_quota_us", std::to_string(quota));
    }
  }
  CpuBudget(const CpuBudget&) = delete;
  CpuBudget& operator=(const CpuBudget&) = delete;

  // Its processes go back to the whole machine's group, and the group is removed.
  ~CpuBudget() {
    for (int attempt = 0; attempt < 100; ++attempt) {
      std::istringstream procs(read(dir_ + "/cgroup.procs"));
      for (std::string pid; std::getline(procs, pid);) write(base_ + "/cgroup.procs", pid);
      std::error_code error;
      if (std::filesystem::remove(dir_, error) || !std::filesystem::exists(dir_)) return;
      ::usleep(10000);
    }
    std::fprintf(stderr, "warning: could not remove the test's cgroup %s\n", dir_.c_str());
  }

  // Moves every process that descends from `pid` (not `pid` itself) into the group: a launcher's
  // workers and the fork server that starts its replacements, not the coordinator in it.
  void add_descendants(pid_t pid) const {
    for (const pid_t child : children_of(pid)) {
      add(child);
      add_descendants(child);
    }
  }

  // Moves process `pid` into the group, with the threads it has and the processes it starts
  // later (a worker once it trains: its start, loading libtorch, stays as fast as the
  // machine's). False if it is gone.
  bool add(long pid) const {
    std::ofstream out(dir_ + "/cgroup.procs");
    out << pid << "\n";
    out.flush();
    return static_cast<bool>(out);
  }

 private:
  // The hierarchy with the cpu controller, and whether it is cgroup v2's.
  static std::optional<std::pair<std::string, bool>> hierarchy() {
    if (std::filesystem::exists("/sys/fs/cgroup/cpu/cpu.cfs_quota_us")) {
      return std::make_pair(std::string("/sys/fs/cgroup/cpu"), false);
    }
    const std::string controllers = read("/sys/fs/cgroup/cgroup.subtree_control");
    std::istringstream words(controllers);
    for (std::string word; words >> word;) {
      if (word == "cpu") return std::make_pair(std::string("/sys/fs/cgroup"), true);
    }
    return std::nullopt;
  }

  static std::string read(const std::string& path) {
    std::ifstream in(path);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  }

  static void write(const std::string& path, const std::string& text) {
    std::ofstream out(path);
    out << text << "\n";
  }

  std::string base_;
  bool v2_ = false;
  std::string dir_;
};

}  // namespace transient::train::testing
