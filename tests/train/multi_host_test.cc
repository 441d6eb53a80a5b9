// Elastic training across hosts (issue 12): the coordinator and each worker on a host of its own,
// the hosts being network namespaces on a bridge that the test makes (emulated_hosts.h). Real
// processes, real sockets, real addresses; nothing on loopback. A test that reads what the
// checkpoints hold is in multi_host_checkpoints_test.cc, in the test program with libtorch.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <thread>

#include "train/cli_process.h"
#include "train/cpu_budget.h"
#include "train/emulated_hosts.h"
#include "train/job_records.h"
#include "train/multi_host.h"
#include "transient/train/channel.h"

namespace transient::train {
namespace {

using namespace testing;

// The members' addresses as the generation events and the workers' own reports name them.
std::set<std::string> peers_joined_from(const std::vector<nlohmann::json>& events) {
  std::set<std::string> hosts;
  for (const auto& e : events_named(events, "worker_joined")) {
    const std::string peer = e.at("peer");
    hosts.insert(peer.substr(0, peer.rfind(':')));
  }
  return hosts;
}

TEST_F(MultiHost, ACoordinatorAndThreeWorkersOnFourHostsSurviveAKillAndAdmitANewHost) {
  make_hosts(5);
  const std::string dir = fresh_dir("hosts-kill-join");
  constexpr int kSteps = 250;
  auto coordinator = start_coordinator(dir, kSteps, 3);
  const std::string address = front_door(dir);
  EXPECT_EQ(address, hosts_->address(0) + ":" + address.substr(address.rfind(':') + 1));
  auto a = start_worker(dir, 1, address);
  auto b = start_worker(dir, 2, address);
  auto c = start_worker(dir, 3, address);
  ASSERT_TRUE(wait_for_training(dir));
  ASSERT_TRUE(wait_until([&] { return last_event(events_so_far(dir), "generation") != nullptr; }));
  b->kill_group();  // host 2's worker dies
  ASSERT_TRUE(wait_until([&] { return !events_named(events_so_far(dir), "recovery").empty(); }));
  // A new host joins mid-run; its worker names the interface its peers reach it on
  // (--interface: the Gloo device and the address it advertises are eth0's). The job waits
  // for it to be in (it was sized for a slow start before: 600 steps).
  std::unique_ptr<CliProcess> d;
  {
    HeldWorkers held(dir);
    ASSERT_EQ(held.pids().size(), 2u);
    d = start_worker(dir, 4, address, {"--interface", "eth0"});
    ASSERT_TRUE(wait_until([&] { return has_joined(dir, d->pid()); }));
  }
  ASSERT_TRUE(wait_until([&] {
    const auto generation = last_event(events_so_far(dir), "generation");
    return generation != nullptr && generation.at("members").size() == 3u &&
           generation.at("gen").get<int>() >= 2;
  }));
  const auto done = coordinator->wait();
  ASSERT_EQ(done.exit_code, 0) << done.err;
  EXPECT_NE(done.out.find("join with: transient worker --coordinator " + address),
            std::string::npos)
      << done.out;
  for (auto* worker : {a.get(), c.get(), d.get()}) EXPECT_EQ(worker->wait().exit_code, 0);
  const auto events = read_events(dir);
  // Every worker came from its own host's address, and the Gloo groups formed across hosts.
  EXPECT_EQ(peers_joined_from(events),
            (std::set<std::string>{hosts_->address(1), hosts_->address(2), hosts_->address(3),
                                   hosts_->address(4)}));
  const auto recoveries = events_named(events, "recovery");
  ASSERT_EQ(recoveries.size(), 1u);
  EXPECT_EQ(recoveries[0].at("cause"), "failed");
  EXPECT_LE(recoveries[0].at("redone_steps").get<int>(), 1);
  expect_resumed_steps(events, 100);  // the survivors computed only the lost worker's samples
  EXPECT_LE(events_named(events, "step_resumed").size(), 1u);
  EXPECT_EQ(summary_of(dir).at("steps"), kSteps);
  expect_every_sample_once(dir, kSteps, 2000, 100);
}

TEST_F(MultiHost, AHostCutOffSilentlyIsDroppedByHeartbeatAndTheOthersGoOn) {
  make_hosts(4);
  const std::string dir = fresh_dir("hosts-cut");
  // A short heartbeat timeout: the cut is only seen as silence.
  constexpr int kSteps = 150;
  auto args = set_flag(with(coordinator_job(dir, kSteps, 3, {"--checkpoint-every", "50"}),
                            {"--bind", hosts_->address(0)}),
                       "--heartbeat-timeout", "3s");
  auto coordinator = std::make_unique<CliProcess>(args, dir + "-coordinator", hosts_->on(0));
  const std::string address = front_door(dir);
  auto a = start_worker(dir, 1, address);
  auto b = start_worker(dir, 2, address);
  auto c = start_worker(dir, 3, address);
  ASSERT_TRUE(wait_for_training(dir));
  {
    // Cut while the job is held, so that it comes before the job ends on any machine; the
    // members then wait for host 3 until it is dropped, training nothing (it had 500 steps).
    HeldWorkers held(dir);
    ASSERT_EQ(held.pids().size(), 3u);
    hosts_->cut(3);  // no reset, no close: packets to and from host 3 vanish
  }
  ASSERT_TRUE(wait_until([&] {
    for (const auto& e : events_named(events_so_far(dir), "worker_left")) {
      if (e.at("reason") == "silent") return true;
    }
    return false;
  }));
  const auto done = coordinator->wait();
  ASSERT_EQ(done.exit_code, 0) << done.err;
  EXPECT_EQ(a->wait().exit_code, 0);
  EXPECT_EQ(b->wait().exit_code, 0);
  c->kill_group();  // cut off, it cannot hear that the job ended
  const auto events = read_events(dir);
  const auto left = events_named(events, "worker_left");
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].at("reason"), "silent");
  EXPECT_EQ(summary_of(dir).at("steps"), kSteps);
  expect_every_sample_once(dir, kSteps, 2000, 100);
}

// A cut of the coordinator's own link, longer than the heartbeat timeout, silences every member
// at once: the members train on among themselves, and when the link is back the coordinator
// takes them back where they came to, as a restarted one does. It dropped each one as silent and
// refused their re-joins ("not a member of generation 0"), and the job went back to its last
// stored checkpoint.
TEST_F(MultiHost, ACutOfTheCoordinatorsLinkLosesNoMemberAndNoStep) {
  if (const auto why = CpuBudget::unavailable()) GTEST_SKIP() << "skipped: " << *why;
  make_hosts(3);
  const std::string dir = fresh_dir("hosts-coordinator-cut");
  constexpr int kSteps = 600;
  auto args = set_flag(with(coordinator_job(dir, kSteps, 2, {"--checkpoint-every", "100"}),
                            {"--bind", hosts_->address(0)}),
                       "--heartbeat-timeout", "2s");
  auto coordinator = std::make_unique<CliProcess>(args, dir + "-coordinator", hosts_->on(0));
  const std::string address = front_door(dir);
  auto a = start_worker(dir, 1, address);
  auto b = start_worker(dir, 2, address);
  ASSERT_TRUE(wait_for_training(dir));
  // The workers' hosts are slow once they train (a fifth of a CPU between them): the job trains
  // on through the cut with 600 steps, where it needed 1500 at full speed.
  const CpuBudget slow(0.2);
  ASSERT_TRUE(slow.add(a->pid()) && slow.add(b->pid()));
  hosts_->cut(0);
  ::sleep(6);  // three heartbeat timeouts
  hosts_->reconnect(0);
  ASSERT_TRUE(wait_until([&] { return coordinator->exited(); }, 120))
      << "the job did not end: " << slurp(dir + "-coordinator.err");
  const auto done = coordinator->wait();
  ASSERT_EQ(done.exit_code, 0) << done.err;
  EXPECT_EQ(a->wait().exit_code, 0) << slurp(dir + "-host1.err");
  EXPECT_EQ(b->wait().exit_code, 0) << slurp(dir + "-host2.err");
  const auto events = read_events(dir);
  EXPECT_TRUE(events_named(events, "worker_left").empty()) << done.err;
  EXPECT_TRUE(events_named(events, "recovery").empty()) << done.err;
  EXPECT_EQ(summary_of(dir).at("steps"), kSteps);
  expect_every_sample_once(dir, kSteps, 2000, 100);
}

// Restarted as the README says (`transient coordinator --job-dir DIR`, no --bind), it listens
// where the job's journal says: on the address the other hosts reach (it listened on loopback,
// and the workers re-joined nothing), with the dashboard off as it was.
TEST_F(MultiHost, ACoordinatorRestartedOnItsHostTakesTheJobBack) {
  make_hosts(3);
  const std::string dir = fresh_dir("hosts-restart");
  auto coordinator = start_coordinator(dir, 150, 2, {"--dashboard", "off"});
  const std::string address = front_door(dir);
  auto a = start_worker(dir, 1, address);
  auto b = start_worker(dir, 2, address);
  ASSERT_TRUE(wait_for_training(dir));
  // The workers wait, held, until the coordinator is back (the job was sized for the slowest
  // restart before: 600 steps).
  auto held = std::make_unique<HeldWorkers>(dir);
  ASSERT_EQ(held->pids().size(), 2u);
  coordinator->kill_group();
  // Another --port would leave its workers knocking at the old one: refused (it was ignored).
  const std::string port = address.substr(address.rfind(':') + 1);
  CliProcess other_port({"coordinator", "--job-dir", dir, "--port", "23918"}, dir + "-other-port",
                        hosts_->on(0));
  const auto refused = other_port.wait();
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_NE(
      refused.err.find("--port: a job taken back listens where its workers re-join it, port " +
                       port + " (its journal's); drop --port"),
      std::string::npos)
      << refused.err;
  CliProcess restarted({"coordinator", "--job-dir", dir}, dir + "-restarted", hosts_->on(0));
  ASSERT_TRUE(wait_for_journal_of(dir, restarted.pid()));
  held.reset();
  ASSERT_TRUE(
      wait_until([&] { return events_named(events_so_far(dir), "worker_rejoined").size() == 2; }));
  const auto done = restarted.wait();
  ASSERT_EQ(done.exit_code, 0) << done.err;
  EXPECT_NE(done.out.find("listening on " + address), std::string::npos) << done.out;
  EXPECT_EQ(done.err.find("dashboard on"), std::string::npos) << done.err;
  EXPECT_EQ(a->wait().exit_code, 0);
  EXPECT_EQ(b->wait().exit_code, 0);
  EXPECT_EQ(summary_of(dir).at("steps"), 150);
}

// A coordinator bound to every interface (IPv4 and IPv6 alike) says how to join it at each of
// its host's addresses; workers join over IPv6.
TEST_F(MultiHost, WorkersJoinOverIPv6AndTheCoordinatorSaysHowToJoinAtEachAddress) {
  make_hosts(3);
  const std::string dir = fresh_dir("hosts-ipv6");
  auto coordinator = start_coordinator(dir, 200, 2, {}, "::");
  const std::string port = front_door(dir).substr(front_door(dir).rfind(':') + 1);
  const std::string address = "[" + hosts_->address6(0) + "]:" + port;
  auto a = start_worker(dir, 1, address);
  auto b = start_worker(dir, 2, address);
  const auto done = coordinator->wait();
  ASSERT_EQ(done.exit_code, 0) << done.err;
  EXPECT_EQ(a->wait().exit_code, 0);
  EXPECT_EQ(b->wait().exit_code, 0);
  for (const auto& at : {hosts_->address(0) + ":" + port, address}) {
    EXPECT_NE(done.out.find("join with: transient worker --coordinator " + at + " --token-file " +
                            dir + "/token"),
              std::string::npos)
        << done.out;
  }
  EXPECT_NE(done.out.find("TCP port " + port + " of this host"), std::string::npos) << done.out;
  EXPECT_EQ(
      peers_joined_from(read_events(dir)),
      (std::set<std::string>{"[" + hosts_->address6(1) + "]", "[" + hosts_->address6(2) + "]"}));
  EXPECT_EQ(summary_of(dir).at("steps"), 200);
  // Bound to 0.0.0.0 it listens on IPv4 only: its IPv6 address, where nothing answers, is not
  // offered (a worker told to join there tried for 30 s and gave up).
  const std::string v4 = fresh_dir("hosts-ipv4-only");
  auto only_v4 = start_coordinator(v4, 100000, 1, {}, "0.0.0.0");
  const std::string v4_port = front_door(v4).substr(front_door(v4).rfind(':') + 1);
  ASSERT_TRUE(wait_until([&] {
    return slurp(v4 + "-coordinator.out").find("workers on other hosts need") != std::string::npos;
  }));
  // Left without workers, it says how one joins with this host's address to fill in, not at
  // 0.0.0.0, where no worker reaches it (review).
  auto joiner = start_worker(v4, 1, hosts_->address(0) + ":" + v4_port);
  ASSERT_TRUE(wait_for_training(v4));
  joiner->kill_group();
  EXPECT_TRUE(wait_until([&] {
    return slurp(v4 + "-coordinator.err").find("the job waits for one to join") !=
           std::string::npos;
  }));
  only_v4->kill_group();
  const auto said = only_v4->wait();
  EXPECT_NE(said.out.find("join with: transient worker --coordinator " + hosts_->address(0) + ":" +
                          v4_port),
            std::string::npos)
      << said.out;
  EXPECT_EQ(said.out.find("[" + hosts_->address6(0) + "]"), std::string::npos) << said.out;
  EXPECT_NE(said.err.find("the job waits for one to join (transient worker --coordinator HOST:" +
                          v4_port + " (HOST: an address of this host, as the join lines said)"),
            std::string::npos)
      << said.err;
}

// What a host without the token can do: it cannot join, and it cannot read or write a
// rendezvous key, because the job has no port but the front door, where nothing is served before
// the token is proven.
TEST_F(MultiHost, AHostWithoutTheTokenCanNeitherJoinNorTouchTheRendezvousKeys) {
  make_hosts(4);
  const std::string dir = fresh_dir("hosts-stranger");
  auto coordinator = start_coordinator(dir, 100, 2);
  const std::string address = front_door(dir);
  const std::string port = address.substr(address.rfind(':') + 1);
  auto a = start_worker(dir, 1, address);
  auto b = start_worker(dir, 2, address);
  ASSERT_TRUE(wait_for_training(dir));
  // The job waits, held, while the stranger tries (it was sized to run on for 800 steps).
  auto held = std::make_unique<HeldWorkers>(dir);
  ASSERT_EQ(held->pids().size(), 2u);
  // Other hosts can reach the front door of the coordinator's host and nothing else (its live
  // dashboard listens on loopback).
  const std::string listening = dir + "-listening";
  ASSERT_EQ(hosts_->exec(0, "ss -ltnH | grep -v -e ' 127.0.0.1:' -e ' \\[::1\\]:' > " + listening),
            0);
  const std::string sockets = slurp(listening);
  EXPECT_EQ(std::count(sockets.begin(), sockets.end(), '\n'), 1) << sockets;
  EXPECT_NE(sockets.find(hosts_->address(0) + ":" + port), std::string::npos) << sockets;
  // A worker with a wrong token, from another host, is refused.
  CliProcess stranger({"worker", "--coordinator", address, "--token", "wrong"}, dir + "-stranger",
                      hosts_->on(3));
  const auto stranger_done = stranger.wait();
  EXPECT_EQ(stranger_done.exit_code, kExitBadInput) << stranger_done.err;
  // Store requests without the token's proof: the connection is dropped, nothing answered.
  const std::string heard = dir + "-heard";
  const std::string probe =
      "bash -c 'exec 3<>/dev/tcp/" + hosts_->address(0) + "/" + port +
      "; printf \"%s\\n\" "
      "\"{\\\"store\\\":\\\"get\\\",\\\"id\\\":1,\\\"keys\\\":[\\\"gen/0/pg/0\\\"]}\" "
      "\"{\\\"store\\\":\\\"set\\\",\\\"id\\\":2,\\\"keys\\\":[\\\"gen/1/pg/"
      "0\\\"],\\\"values\\\":[\\\"eA==\\\"]}\" >&3; "
      "timeout 3 cat <&3 > " +
      heard + "'";
  hosts_->exec(3, probe);
  EXPECT_EQ(slurp(heard), "") << "the coordinator answered a stranger";
  held.reset();
  const auto done = coordinator->wait();
  ASSERT_EQ(done.exit_code, 0) << done.err;
  EXPECT_EQ(a->wait().exit_code, 0);
  EXPECT_EQ(b->wait().exit_code, 0);
  const auto events = read_events(dir);
  EXPECT_GE(events_named(events, "worker_refused").size(), 1u);
  bool dropped = false;
  for (const auto& e : events_named(events, "connection_dropped")) {
    dropped = dropped || e.at("peer").get<std::string>().rfind(hosts_->address(3), 0) == 0;
  }
  EXPECT_TRUE(dropped) << "the store requests without a hello were not dropped";
  EXPECT_EQ(summary_of(dir).at("steps"), 100);
}

// A worker that advertises an address its peers cannot reach: the group cannot form; the errors
// name the address, and the second failure with the same members drops that worker, so that the
// others train instead of trying for ever.
TEST_F(MultiHost, AWorkerNobodyCanReachIsNamedAndDroppedAfterTwoFailedGenerations) {
  make_hosts(4);
  const std::string dir = fresh_dir("hosts-unreachable");
  // An address that host 3 holds but that no other host has a route to.
  ASSERT_EQ(hosts_->exec(3, "ip addr add 10.0.0.7/32 dev lo"), 0);
  auto args = set_flag(with(coordinator_job(dir, 300, 3), {"--bind", hosts_->address(0)}),
                       "--heartbeat-timeout", "2s");
  CliProcess coordinator(args, dir + "-coordinator", hosts_->on(0));
  const std::string address = front_door(dir);
  // In Gloo's mesh the member of a pair with the lower address is the one reached (the other
  // connects): 10.0.0.7 is lower than every host's own address, so every peer must reach it.
  auto a = start_worker(dir, 1, address);
  auto b = start_worker(dir, 2, address);
  ASSERT_TRUE(
      wait_until([&] { return events_named(events_so_far(dir), "worker_ready").size() == 2; }));
  auto c = start_worker(dir, 3, address, {"--advertise", "10.0.0.7"});
  const auto done = coordinator.wait();
  ASSERT_EQ(done.exit_code, 0) << done.err;
  EXPECT_NE(done.err.find("10.0.0.7"), std::string::npos) << done.err;
  EXPECT_NE(done.err.find("--advertise"), std::string::npos) << done.err;
  EXPECT_EQ(a->wait().exit_code, 0);
  EXPECT_EQ(b->wait().exit_code, 0);
  const auto dropped = c->wait();
  EXPECT_EQ(dropped.exit_code, kExitDropped) << dropped.err;
  EXPECT_NE(dropped.err.find("unreachable"), std::string::npos) << dropped.err;
  const auto events = read_events(dir);
  const auto unreachable = events_named(events, "worker_unreachable");
  ASSERT_EQ(unreachable.size(), 1u);
  EXPECT_EQ(unreachable[0].at("address"), "10.0.0.7");
  EXPECT_EQ(summary_of(dir).at("steps"), 300);
}

// A preemption notice to a worker whose group cannot form (a peer does not answer) is honoured
// at once, not when Gloo gives up; so is one to the coordinator of such a job.
TEST_F(MultiHost, SigtermEndsAWorkerAndACoordinatorWhileTheGroupCannotForm) {
  make_hosts(3);
  const std::string dir = fresh_dir("hosts-sigterm-forming");
  // A long heartbeat timeout: waiting for it would take a minute.
  auto args = set_flag(with(coordinator_job(dir, 300, 2), {"--bind", hosts_->address(0)}),
                       "--heartbeat-timeout", "60s");
  CliProcess coordinator(args, dir + "-coordinator", hosts_->on(0));
  const std::string address = front_door(dir);
  // Host 2's worker is ready, then cut off; host 1's joins: generation 0 has both, and host 1's
  // worker waits for an address host 2 will never publish.
  auto b = start_worker(dir, 2, address);
  ASSERT_TRUE(
      wait_until([&] { return last_event(events_so_far(dir), "worker_ready") != nullptr; }));
  hosts_->cut(2);
  auto a = start_worker(dir, 1, address);
  ASSERT_TRUE(wait_until([&] { return last_event(events_so_far(dir), "generation") != nullptr; }));
  ::kill(a->pid(), SIGTERM);
  // Well within the heartbeat timeout: the worker did not wait for its peer.
  ASSERT_TRUE(wait_until([&] { return a->exited(); }, 30)) << "the worker ignored SIGTERM";
  const auto left = a->wait();
  EXPECT_EQ(left.exit_code, 0) << left.err;
  ::kill(coordinator.pid(), SIGTERM);
  ASSERT_TRUE(wait_until([&] { return coordinator.exited(); }, 30))
      << "the coordinator ignored SIGTERM";
  EXPECT_EQ(coordinator.wait().exit_code, kExitPaused);
  b->kill_group();
}

// The round trip from `from` to `to` in milliseconds, as a TCP connection attempt sees it: a SYN
// to a port nobody listens on and the RST that answers it (Python's socket module, in `from`).
double round_trip_ms(const EmulatedHosts& hosts, int from, int to) {
  const std::string command =
      "ip netns exec " + hosts.name(from) + " " + TRANSIENT_PYTHON +
      " -c \"import socket, time\n"
      "t = time.monotonic()\n"
      "try: socket.create_connection(('" +
      hosts.address(to) +
      "', 9), timeout=5)\n"
      "except ConnectionRefusedError: print((time.monotonic() - t) * 1000)\"";
  std::FILE* out = ::popen(command.c_str(), "r");
  if (out == nullptr) return -1;
  char line[64] = {};
  const bool read = std::fgets(line, sizeof line, out) != nullptr;
  ::pclose(out);
  return read ? std::atof(line) : -1;
}

// Issue 12's cross-region path: every host holds what it receives for 15 ms (a 30 ms round trip
// between any two) and sends at most 1 Gbit/s. The round trip is measured first, so that the test
// knows the latency is there; then three workers train across it, one is killed, the other two
// go on, and the job ends with every sample once.
TEST_F(MultiHost, ThreeWorkersTrainAcrossA30MillisecondRoundTripAndSurviveAKill) {
  if (const auto why = EmulatedHosts::delay_unavailable()) GTEST_SKIP() << "skipped: " << *why;
  make_hosts(4);
  for (int host = 0; host < hosts_->size(); ++host) {
    hosts_->delay(host, 15.0);
    hosts_->limit_rate(host, "1gbit");
  }
  const double round_trip = round_trip_ms(*hosts_, 1, 2);
  ASSERT_GE(round_trip, 30.0) << "the emulated path is not 30 ms long";
  const std::string dir = fresh_dir("hosts-cross-region");
  auto coordinator = start_coordinator(dir, 150, 3);
  const std::string address = front_door(dir);
  auto a = start_worker(dir, 1, address);
  auto b = start_worker(dir, 2, address);
  auto c = start_worker(dir, 3, address);
  ASSERT_TRUE(wait_for_training(dir));
  ASSERT_TRUE(wait_until([&] { return last_event(events_so_far(dir), "generation") != nullptr; }));
  c->kill_group();
  const auto done = coordinator->wait();
  ASSERT_EQ(done.exit_code, 0) << done.err;
  EXPECT_EQ(a->wait().exit_code, 0);
  EXPECT_EQ(b->wait().exit_code, 0);
  const auto events = read_events(dir);
  const auto recoveries = events_named(events, "recovery");
  ASSERT_EQ(recoveries.size(), 1u);
  EXPECT_EQ(recoveries[0].at("cause"), "failed");
  EXPECT_LE(recoveries[0].at("redone_steps").get<int>(), 1);
  expect_resumed_steps(events, 100);
  EXPECT_LE(events_named(events, "step_resumed").size(), 1u);
  EXPECT_EQ(summary_of(dir).at("steps"), 150);
  expect_every_sample_once(dir, 150, 2000, 100);
}

// Moves the calling thread into host `name`'s network namespace: the sockets it makes then
// belong to that host.
bool enter_host(const std::string& name) {
  const int ns = ::open(("/var/run/netns/" + name).c_str(), O_RDONLY | O_CLOEXEC);
  if (ns < 0) return false;
  const bool entered = ::setns(ns, CLONE_NEWNET) == 0;
  ::close(ns);
  return entered;
}

// A worker whose coordinator's host vanished (no close, no reset: a revoked server) knows it once
// a heartbeat has gone unacknowledged for the channel's user timeout, and re-connects from there:
// it knew only when TCP's retries gave up, about 15 minutes later, and its --coordinator-wait
// began only then.
TEST(HostLinks, AWriterWhosePeersHostVanishedKnowsItAfterItsUserTimeout) {
  if (const auto why = EmulatedHosts::unavailable()) GTEST_SKIP() << "skipped: " << *why;
  EmulatedHosts hosts(2);  // made first, gone last: the sockets keep their hosts
  std::unique_ptr<Listener> listener;
  std::thread([&] {
    if (enter_host(hosts.name(0)))
      listener = std::make_unique<Listener>(hosts.address(0), 0, "server");
  }).join();
  ASSERT_NE(listener, nullptr);
  std::unique_ptr<LineChannel> client;
  std::thread([&] {
    if (enter_host(hosts.name(1))) {
      client = LineChannel::connect(Endpoint{hosts.address(0), listener->port()}, 10);
    }
  }).join();
  ASSERT_NE(client, nullptr);
  std::string peer;
  int accepted = -1;
  for (int i = 0; i < 1000 && accepted < 0; ++i) {
    accepted = listener->accept(peer);
    if (accepted < 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_GE(accepted, 0);
  client->set_user_timeout(1.0);
  hosts.cut(0);
  // Heartbeats, as a worker sends them, until the channel breaks (or 30 s).
  const auto start = std::chrono::steady_clock::now();
  for (int beat = 0;
       !client->closed() && std::chrono::steady_clock::now() - start < std::chrono::seconds(30);
       ++beat) {
    client->queue({{"hb", beat}});
    client->read_line(0.1);
  }
  EXPECT_TRUE(client->closed()) << "30 s of unacknowledged heartbeats did not break the channel";
  ::close(accepted);
}

}  // namespace
}  // namespace transient::train
