// Several hosts on one machine for the trainer's multi-host tests: one network namespace per
// host, each with a veth pair whose outer end sits on a bridge of the test's own, and addresses
// of the test's own (10.<N>.<M>.<host+1>/24 and fd77:<N>:<M>::<host+1>/64; nothing is routed to
// or from the machine's own network). Everything made is removed when the object goes.
//
// Needs root (CI runs as root); unavailable() says why not otherwise, for GTEST_SKIP with the
// reason printed.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace transient::train::testing {

class EmulatedHosts {
 public:
  // Why hosts cannot be emulated here (nullopt: they can).
  static std::optional<std::string> unavailable() {
    if (::geteuid() != 0) return "emulating hosts needs root (ip netns, veth, a bridge)";
    if (std::system("ip netns list >/dev/null 2>&1") != 0) {
      return "the ip command (Debian's iproute2) cannot list network namespaces";
    }
    return std::nullopt;
  }

  // `count` hosts. Names carry this process's id, so that tests running at once never meet.
  explicit EmulatedHosts(int count) : tag_(std::to_string(::getpid() % 100000)) {
    const int pid = static_cast<int>(::getpid());
    subnet_ = std::to_string(60 + pid % 100) + "." + std::to_string((pid / 100) % 250);
    // Written as inet_ntop writes it (no group that "::" would swallow), as addresses appear in
    // the records.
    subnet6_ = std::to_string(pid % 10000) + ":" + std::to_string((pid / 10000) % 9999 + 1);
    bridge_ = "trb" + tag_;
    run("ip link add " + bridge_ + " type bridge");
    run("ip link set " + bridge_ + " up");
    for (int i = 0; i < count; ++i) {
      const std::string ns = "tr" + tag_ + "h" + std::to_string(i);
      const std::string outer = "trv" + tag_ + "h" + std::to_string(i);
      run("ip netns add " + ns);
      namespaces_.push_back(ns);
      run("ip link add " + outer + " type veth peer name eth0 netns " + ns);
      outers_.push_back(outer);
      run("ip link set " + outer + " master " + bridge_ + " up");
      run("ip -n " + ns + " addr add " + address(i) + "/24 dev eth0");
      run("ip -n " + ns + " -6 addr add " + address6(i) + "/64 dev eth0 nodad");
      run("ip -n " + ns + " link set eth0 up");
      run("ip -n " + ns + " link set lo up");
    }
  }

  ~EmulatedHosts() {
    for (const auto& ns : namespaces_) {
      // Whatever still runs in a host is ended with it (a failed test's processes).
      quiet("ip netns pids " + ns + " | xargs -r kill -9");
      quiet("ip netns del " + ns);
    }
    for (std::FILE* delay : delays_) ::pclose(delay);  // their programs were killed above
    for (const auto& outer : outers_) quiet("ip link del " + outer);
    quiet("ip link del " + bridge_);
  }

  EmulatedHosts(const EmulatedHosts&) = delete;
  EmulatedHosts& operator=(const EmulatedHosts&) = delete;

  int size() const { return static_cast<int>(namespaces_.size()); }
  const std::string& name(int host) const { return namespaces_.at(static_cast<std::size_t>(host)); }
  std::string address(int host) const { return "10." + subnet_ + "." + std::to_string(host + 1); }
  std::string address6(int host) const {
    return "fd77:" + subnet6_ + "::" + std::to_string(host + 1);
  }
  // The command prefix that runs a program on `host`.
  std::vector<std::string> on(int host) const {
    return {"/usr/bin/ip", "netns", "exec", name(host)};
  }

  // Cuts `host` off the bridge without telling it (its link stays up, packets go nowhere: a
  // silent failure, as a host that froze or lost its network), or connects it again.
  void cut(int host) { run("ip link set " + outer(host) + " nomaster"); }
  void reconnect(int host) { run("ip link set " + outer(host) + " master " + bridge_); }

  // Limits `host`'s outgoing rate (tc tbf), e.g. "10gbit".
  void limit_rate(int host, const std::string& rate) {
    run("ip netns exec " + name(host) + " tc qdisc replace dev eth0 root tbf rate " + rate +
        " burst 1mbit latency 50ms");
  }

  // Why delay() cannot work here (nullopt: it can).
  static std::optional<std::string> delay_unavailable() {
    if (std::system("iptables --version >/dev/null 2>&1") != 0 ||
        std::system("ip6tables --version >/dev/null 2>&1") != 0) {
      return "delaying a host's packets needs iptables and ip6tables (Debian's iptables)";
    }
    return std::nullopt;
  }

  // Holds every packet `host` receives for `one_way_ms`, so that two delayed hosts see a round
  // trip of twice that: tests/tools/link_delay on an NFQUEUE rule of the host's own, since tc's
  // netem is missing from this project's test kernels. Held on the way in, not out: a packet
  // held on its sender's way out still counts against its socket (TCP small queues), which
  // would throttle the sender to a few packets a round trip. Returns once the delay is in force.
  void delay(int host, double one_way_ms) {
    const std::string in_host = "ip netns exec " + name(host) + " ";
    std::FILE* program = ::popen(("exec " + in_host + TRANSIENT_LINK_DELAY_PATH +
                                  " --queue 1 --delay-ms " + std::to_string(one_way_ms))
                                     .c_str(),
                                 "r");
    if (program == nullptr) throw std::runtime_error("emulating hosts: cannot start link_delay");
    delays_.push_back(program);
    char line[64] = {};
    if (std::fgets(line, sizeof line, program) == nullptr || std::string(line) != "ready\n") {
      throw std::runtime_error("emulating hosts: link_delay did not start on " + name(host));
    }
    run(in_host + "iptables -w -A INPUT -i eth0 -j NFQUEUE --queue-num 1");
    run(in_host + "ip6tables -w -A INPUT -i eth0 -j NFQUEUE --queue-num 1");
  }

  // Runs `command` in `host`, returning its exit status.
  int exec(int host, const std::string& command) const {
    return std::system(("ip netns exec " + name(host) + " " + command).c_str());
  }

 private:
  const std::string& outer(int host) const { return outers_.at(static_cast<std::size_t>(host)); }

  static void run(const std::string& command) {
    if (std::system((command + " 2>&1").c_str()) != 0) {
      throw std::runtime_error("emulating hosts: `" + command + "` failed");
    }
  }
  static void quiet(const std::string& command) {
    [[maybe_unused]] const int ignored = std::system((command + " >/dev/null 2>&1").c_str());
  }

  std::string tag_;
  std::string subnet_;   // "N.M" of 10.N.M.0/24
  std::string subnet6_;  // of fd77:...::/64
  std::string bridge_;
  std::vector<std::string> namespaces_;
  std::vector<std::string> outers_;
  std::vector<std::FILE*> delays_;  // link_delay programs, read for their "ready"
};

}  // namespace transient::train::testing
