// link_delay: holds every packet a host sends for a fixed time, so that emulated hosts (network
// namespaces on a bridge) see a real path's latency.
//
// The usual tool for this, tc's netem qdisc, is missing from kernels built without
// CONFIG_NET_SCH_NETEM (this project's test machines: "Specified qdisc kind is unknown"). This
// program does the one thing netem would do here, with the kernel's own netfilter queue: an
// iptables rule in the host's namespace sends the packets leaving one interface to a queue
// (NFQUEUE), and this program, run in the same namespace, accepts each one `delay_ms` after it
// was queued. It sees only the packets' metadata, never their bytes, and large TCP segments are
// queued whole (GSO), so a packet costs it two system calls at most. A rate limit stays with tc's
// tbf, which runs after the delay.
//
//   ip netns exec HOST iptables -A OUTPUT -o eth0 -j NFQUEUE --queue-num N
//   ip netns exec HOST link_delay --queue N --delay-ms 15
//
// With every host delaying what it sends by D, two hosts see a round trip of 2 D. The program
// prints "ready" on stdout once the queue is bound, and ends on SIGTERM or SIGINT (packets still
// held are then dropped by the kernel, as a cut link would drop them). Errors: one line on stderr,
// exit 2 for bad flags, 1 for a queue that cannot be bound (not root, no NFQUEUE in the kernel).
#include <arpa/inet.h>
#include <libnetfilter_queue/libnetfilter_queue.h>
#include <linux/netfilter.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <time.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <string>

namespace {

volatile sig_atomic_t stop_requested = 0;
void on_stop(int) { stop_requested = 1; }

std::int64_t now_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<std::int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
}

struct Held {
  std::uint32_t id;
  std::int64_t release_ns;
};

// The packets held, oldest first. With one delay for all of them, release order is queue order.
struct Queue {
  std::deque<Held> held;
  std::int64_t delay_ns = 0;
  std::uint64_t packets = 0;
};

int on_packet(nfq_q_handle*, nfgenmsg*, nfq_data* data, void* user) {
  auto* queue = static_cast<Queue*>(user);
  const nfqnl_msg_packet_hdr* header = nfq_get_msg_packet_hdr(data);
  if (header == nullptr) return 0;
  queue->held.push_back({ntohl(header->packet_id), now_ns() + queue->delay_ns});
  ++queue->packets;
  return 0;
}

[[noreturn]] void usage_error(const std::string& what) {
  std::fprintf(stderr,
               "error: link_delay: %s; accepted: --queue N (0-65535) --delay-ms D (0 to 10000, "
               "decimals allowed)\n",
               what.c_str());
  std::exit(2);
}

double parse_number(const char* flag, const char* text, double low, double high) {
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(text, &end);
  if (errno != 0 || end == text || *end != '\0' || !(value >= low && value <= high)) {
    usage_error(std::string(flag) + " " + text + " is not a number in range");
  }
  return value;
}

}  // namespace

int main(int argc, char** argv) {
  int queue_number = -1;
  double delay_ms = -1;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) usage_error(flag + " needs a value");
    if (flag == "--queue") {
      queue_number = static_cast<int>(parse_number("--queue", argv[++i], 0, 65535));
    } else if (flag == "--delay-ms") {
      delay_ms = parse_number("--delay-ms", argv[++i], 0, 10000);
    } else {
      usage_error("unknown flag " + flag);
    }
  }
  if (queue_number < 0 || delay_ms < 0) usage_error("both flags are needed");

  Queue queue;
  queue.delay_ns = static_cast<std::int64_t>(delay_ms * 1e6);

  nfq_handle* handle = nfq_open();
  if (handle == nullptr) {
    std::fprintf(stderr, "error: link_delay: cannot open a netfilter queue handle: %s (root?)\n",
                 std::strerror(errno));
    return 1;
  }
  nfq_q_handle* bound =
      nfq_create_queue(handle, static_cast<std::uint16_t>(queue_number), &on_packet, &queue);
  if (bound == nullptr) {
    std::fprintf(stderr, "error: link_delay: cannot bind queue %d: %s (another program on it?)\n",
                 queue_number, std::strerror(errno));
    nfq_close(handle);
    return 1;
  }
  // Metadata only; GSO packets whole; room for a second of a fast link's packets, so that the
  // kernel never drops for want of queue space.
  if (nfq_set_mode(bound, NFQNL_COPY_META, 0) < 0 ||
      nfq_set_queue_flags(bound, NFQA_CFG_F_GSO, NFQA_CFG_F_GSO) < 0 ||
      nfq_set_queue_maxlen(bound, 1 << 17) < 0) {
    std::fprintf(stderr, "error: link_delay: cannot configure queue %d: %s\n", queue_number,
                 std::strerror(errno));
    nfq_destroy_queue(bound);
    nfq_close(handle);
    return 1;
  }
  const int fd = nfq_fd(handle);
  nfnl_rcvbufsiz(nfq_nfnlh(handle), 64u << 20);
  // ENOBUFS on the socket means the kernel dropped queue messages (the packets too): never
  // silently, it is counted and said at the end.
  std::uint64_t overruns = 0;

  struct sigaction action {};
  action.sa_handler = on_stop;
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
  std::printf("ready\n");
  std::fflush(stdout);

  alignas(8) char buffer[1 << 16];
  while (!stop_requested) {
    // Release every packet that is due, with one verdict for all of them (ids rise in queue order).
    const std::int64_t now = now_ns();
    std::uint32_t last_due = 0;
    bool any_due = false;
    while (!queue.held.empty() && queue.held.front().release_ns <= now) {
      last_due = queue.held.front().id;
      any_due = true;
      queue.held.pop_front();
    }
    if (any_due) nfq_set_verdict_batch(bound, last_due, NF_ACCEPT);

    timespec wait{};
    timespec* timeout = nullptr;
    if (!queue.held.empty()) {
      const std::int64_t left = queue.held.front().release_ns - now_ns();
      const std::int64_t ns = left > 0 ? left : 0;
      wait.tv_sec = ns / 1000000000;
      wait.tv_nsec = ns % 1000000000;
      timeout = &wait;
    }
    pollfd readable{fd, POLLIN, 0};
    const int ready = ppoll(&readable, 1, timeout, nullptr);
    if (ready < 0) {
      if (errno == EINTR) continue;
      std::fprintf(stderr, "error: link_delay: poll: %s\n", std::strerror(errno));
      break;
    }
    if (ready == 0) continue;
    for (;;) {
      const ssize_t got = recv(fd, buffer, sizeof buffer, MSG_DONTWAIT);
      if (got < 0) {
        if (errno == ENOBUFS) {
          ++overruns;
          continue;
        }
        break;  // EAGAIN: all read
      }
      nfq_handle_packet(handle, buffer, static_cast<int>(got));
    }
  }
  std::fprintf(stderr, "link_delay: queue %d: %llu packets delayed %.3f ms, %llu overruns\n",
               queue_number, static_cast<unsigned long long>(queue.packets), delay_ms,
               static_cast<unsigned long long>(overruns));
  nfq_destroy_queue(bound);
  nfq_close(handle);
  return 0;
}
