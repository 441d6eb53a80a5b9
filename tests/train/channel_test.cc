// The front door's line channel (channel.h) between two ends of a real socket.
#include "transient/train/channel.h"

#include <gtest/gtest.h>
#include <sys/socket.h>

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

}  // namespace
}  // namespace transient::train
