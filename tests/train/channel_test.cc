// The front door's line channel (channel.h) between two ends of a real socket.
#include "transient/train/channel.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

namespace transient::train {
namespace {

// A send() waiting for a peer that does not read (a coordinator cut off, its socket full) holds
// no other sender: queue() from another thread (a worker's training thread) returns at once, and
// both lines arrive whole and in order once the peer reads. queue() waited behind the send's
// 5 s, and a worker's training thread stood still until its peers' collectives timed out.
TEST(LineChannel, ASendWaitingForAPeerThatDoesNotReadHoldsNoOtherSender) {
  int fds[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  const int small_buffer = 16 << 10;
  ::setsockopt(fds[0], SOL_SOCKET, SO_SNDBUF, &small_buffer, sizeof(small_buffer));
  LineChannel sender(fds[0], "sender");
  LineChannel reader(fds[1], "reader");
  const std::string big(900 << 10, 'x');  // far more than the socket holds, less than a line may
  std::atomic<bool> sent{false};
  std::atomic<bool> sent_whole{false};
  std::thread waiting([&] {
    sent_whole = sender.send({{"big", big}});
    sent = true;
  });
  for (int i = 0; i < 1000 && sender.queued_bytes() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_GT(sender.queued_bytes(), 0u) << "the big line went out whole: no wait to test";
  EXPECT_TRUE(sender.queue({{"small", 1}}));
  EXPECT_FALSE(sent) << "queue() returned only once the waiting send() had given up";
  const auto first = reader.read_line(10);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(nlohmann::json::parse(*first).at("big").get<std::string>().size(), big.size());
  const auto second = reader.read_line(10);
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(nlohmann::json::parse(*second), (nlohmann::json{{"small", 1}}));
  waiting.join();
  EXPECT_TRUE(sent_whole);
}

// A connection of this host holding a port as its own end (an outgoing connection the kernel gave
// the port of a coordinator that died): a coordinator taking the job back waits for it to close
// rather than fail at once (a `make test` flake: "the job's front door (coordinator.json's, where
// its workers re-join): cannot listen on 127.0.0.1:33773: Address already in use").
TEST(Listener, APortAConnectionHoldsIsInUseUntilItClosesAndATakeBackWaitsForIt) {
  Listener server("127.0.0.1", 0, "server");
  // A client bound to a port of its choosing, then connected: that port is its own end.
  const int client = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(client, 0);
  sockaddr_in any{};
  any.sin_family = AF_INET;
  ::inet_pton(AF_INET, "127.0.0.1", &any.sin_addr);
  ASSERT_EQ(::bind(client, reinterpret_cast<sockaddr*>(&any), sizeof(any)), 0);
  socklen_t size = sizeof(any);
  ASSERT_EQ(::getsockname(client, reinterpret_cast<sockaddr*>(&any), &size), 0);
  const std::uint16_t held = ntohs(any.sin_port);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(server.port());
  ::inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
  ASSERT_EQ(::connect(client, reinterpret_cast<sockaddr*>(&to), sizeof(to)), 0);
  std::string peer;
  int accepted = -1;
  for (int i = 0; i < 1000 && accepted < 0; ++i) {
    accepted = server.accept(peer);
    if (accepted < 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_GE(accepted, 0);

  EXPECT_THROW(Listener("127.0.0.1", held, "--port"), PortInUse);
  try {
    listen_once_free("127.0.0.1", held, "the job's front door", 0);
    ADD_FAILURE() << "port " << held << " was not in use";
  } catch (const PortInUse& error) {
    EXPECT_NE(std::string(error.what())
                  .find("the job's front door: cannot listen on 127.0.0.1:" + std::to_string(held) +
                        ": Address already in use"),
              std::string::npos)
        << error.what();
  }
  // Closed a moment later, by its peer first (the end that closes first keeps its port in
  // TIME_WAIT for a minute): the take-back listens there.
  std::thread closing([client, accepted] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ::close(accepted);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ::close(client);
  });
  std::unique_ptr<Listener> taken;
  EXPECT_NO_THROW(taken = listen_once_free("127.0.0.1", held, "the job's front door", 60));
  closing.join();
  ASSERT_NE(taken, nullptr);
  EXPECT_EQ(taken->port(), held);
  // Another error than a port in use is not waited on.
  EXPECT_THROW(listen_once_free("192.0.2.1", 0, "--bind", 60), InputError);
}

// A program listening on the port (not a connection's own end, which closes by itself) is named
// and refused at once: a coordinator taking a job back waited 75 s for it, then said only
// "Address already in use".
TEST(Listener, AProgramListeningOnThePortIsNamedAndNotWaitedFor) {
  Listener other("127.0.0.1", 0, "another program");
  const std::uint16_t port = other.port();
  const auto owner = listening_on("127.0.0.1", port);
  ASSERT_TRUE(owner.has_value());
  EXPECT_EQ(owner->rfind("pid " + std::to_string(::getpid()) + " (", 0), 0u) << *owner;
  // Every interface's listener keeps one address from being bound; another address does not.
  EXPECT_TRUE(listening_on("0.0.0.0", port).has_value());
  EXPECT_FALSE(listening_on("127.0.0.2", port).has_value());
  Listener everywhere("::", 0, "every interface");
  EXPECT_TRUE(listening_on("127.0.0.1", everywhere.port()).has_value());
  try {
    listen_once_free("127.0.0.1", port, "the job's front door", 600);
    ADD_FAILURE() << "port " << port << " was not in use";
  } catch (const PortInUse& error) {
    EXPECT_NE(std::string(error.what())
                  .find("the job's front door: cannot listen on 127.0.0.1:" + std::to_string(port) +
                        ": Address already in use: pid " + std::to_string(::getpid()) + " ("),
              std::string::npos)
        << error.what();
    EXPECT_NE(std::string(error.what()).find("listens there; stop it or free the port"),
              std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace transient::train
