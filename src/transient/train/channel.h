// The coordinator's front door: one TCP connection per worker carrying JSON objects, one per line.
// The worker says hello with the job's token; the coordinator admits or refuses it; afterwards the
// connection carries heartbeats and reports one way and generation configs the other. Its closing
// is how the coordinator learns at once that a worker's process died (the kernel closes the
// socket); a silent host keeps it open but stops its heartbeats.
//
// Torch-free. A LineChannel may be written from several threads (send() is serialised); reading is
// done by one thread.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "transient/core/error.h"

namespace transient::train {

// HOST:PORT, e.g. "10.0.0.5:29400", or "[fd00::5]:29400" for an IPv6 address (host holds it
// without brackets). parse_endpoint throws InputError naming `what` (a flag) if it is not.
struct Endpoint {
  std::string host;
  std::uint16_t port = 0;
  std::string text() const {
    const bool v6 = host.find(':') != std::string::npos;
    return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
  }
};
Endpoint parse_endpoint(const std::string& text, const std::string& what);

// Thrown by Listener when its port is in use (EADDRINUSE): another program listens there, or a
// connection holds it as its own end (any outgoing connection of this host may have been given
// that port once its listener was gone).
class PortInUse : public InputError {
 public:
  using InputError::InputError;
};

// A listening TCP socket on `host` (an IPv4 or IPv6 address or a name; "0.0.0.0" or "::" for
// every interface) and
// `port` (0 = any free port), with SO_REUSEADDR so that a restarted coordinator can take its port
// back at once. Throws InputError naming `what` if the address cannot be bound (PortInUse if the
// port is in use).
class Listener {
 public:
  Listener(const std::string& host, std::uint16_t port, const std::string& what);
  ~Listener();
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;
  int fd() const { return fd_; }
  std::uint16_t port() const { return port_; }
  // A new connection (non-blocking), or -1 if none is waiting. `peer` gets "ADDRESS:PORT".
  int accept(std::string& peer);

 private:
  int fd_ = -1;
  std::uint16_t port_ = 0;
};

// A Listener on `port` that must be that port (a job taken back: its workers re-join there),
// tried again every 100 ms while a connection holds it as its own end, for up to `wait_s`
// seconds, before throwing as Listener does: such a connection holds its port only until it
// closes. Says once on stderr that it waits. A program listening there is named (its pid and
// name where this process may see them) and refused at once (PortInUse).
std::unique_ptr<Listener> listen_once_free(const std::string& host, std::uint16_t port,
                                           const std::string& what, double wait_s);

// A socket of this network namespace listening on a port, as /proc/net/tcp and tcp6 list it.
struct ListeningSocket {
  std::string address;   // in the kernel's hex: 8 digits (IPv4) or 32 (IPv6), by 32-bit words
  int accept_queue = 0;  // connections waiting to be accepted
  std::string inode;     // the socket's
};
std::vector<ListeningSocket> listening_sockets(std::uint16_t port);

// Whether a socket of this network namespace listens on `port` at an address that keeps `host`
// from being bound there (the same address, or either of them every interface): nullopt if none;
// else the process holding it, "pid N (NAME)", or "" if this process may not see which (another
// user's). Read from /proc/net/tcp and tcp6.
std::optional<std::string> listening_on(const std::string& host, std::uint16_t port);

// The addresses of this host's interfaces that are up, loopback left out (for telling people
// how other hosts reach a coordinator that listens on every interface).
std::vector<std::string> host_addresses();

// Whether `host` (a name or a numeric address) resolves to an IPv4 or IPv6 address now.
bool resolves(const std::string& host);

// The address of network interface `name` (its first IPv4 address, else its first IPv6 one).
// Throws InputError naming `what` if there is no such interface or it has no address.
std::string interface_address(const std::string& name, const std::string& what);

// `message` as one line, without its newline: message.dump() byte for byte, written faster where
// a member's value is a long string of characters that JSON writes as they are. The base64 of a
// checkpoint's chunks is such a string; nlohmann's serializer looks at each of its characters,
// about 1 s of the sending thread per 200 MB of checkpoint (bench/protocol_bench.cc).
std::string to_line(const nlohmann::json& message);

class LineChannel {
 public:
  static constexpr std::size_t kMaxLine = 1 << 20;  // a longer line is garbage

  explicit LineChannel(int fd, std::string peer = {});  // takes ownership of a connected socket
  ~LineChannel();
  LineChannel(const LineChannel&) = delete;
  LineChannel& operator=(const LineChannel&) = delete;

  // Connects to `endpoint`, trying until `timeout_s` has passed; nullptr if it could not.
  static std::unique_ptr<LineChannel> connect(const Endpoint& endpoint, double timeout_s);

  int fd() const { return fd_; }
  const std::string& peer() const { return peer_; }
  // The local address of this connection (the address of this host's route to the peer), as
  // text without brackets; "" if the socket cannot say.
  std::string local_host() const;

  // Writes what queue() left, then `message` and a newline, waiting while the peer reads (at
  // most 5 s without room in the socket); false if the connection is broken or the peer stopped
  // reading (the line stays queued, whole, to go out after what is ahead of it). Thread-safe;
  // the wait holds no other sender: queue() from another thread goes on meanwhile.
  bool send(const nlohmann::json& message);

  // The coordinator's way for bulk data (a checkpoint a worker fetches), which must not hold its
  // one thread while a slow peer reads: `message` and a newline join the queue, and as much of
  // the queue as the socket takes now is written. flush() writes more of it, never waiting; the
  // next send() writes the rest first, so that lines go out in the order they were given. Both
  // return false if the connection is broken.
  bool queue(const nlohmann::json& message);
  bool flush();
  // Bytes queue() took that are not written yet.
  std::size_t queued_bytes() const {
    std::lock_guard<std::mutex> lock(send_mutex_);
    return queued_.size() - queued_from_;
  }

  enum class Status { kOpen, kClosed, kTooLong };
  // Reads what has arrived (up to kMaxLine bytes) without blocking and appends the complete lines
  // to `lines`. kClosed
  // once the peer has closed the connection (or it broke), kTooLong if a line exceeds kMaxLine.
  Status read_available(std::vector<std::string>& lines);

  // Waits up to `timeout_s` for the next line; nullopt on timeout, or if the connection closed
  // (then closed() is true).
  std::optional<std::string> read_line(double timeout_s);
  bool closed() const { return closed_; }
  // A line longer than `bytes` (at most kMaxLine) makes read_available() return kTooLong.
  void set_max_line(std::size_t bytes) { max_line_ = std::min(bytes, kMaxLine); }

  // Shuts the connection down (both ways); a thread blocked in read_line returns.
  void shutdown();

  // Data written and not acknowledged by the peer's host for `seconds` breaks the connection
  // (TCP_USER_TIMEOUT): a peer whose host vanished is known once a line to it goes unanswered
  // that long, rather than when TCP's retries give up. A peer alive but not reading is not
  // affected (its host acknowledges).
  void set_user_timeout(double seconds);

  // Bytes received so far (for messages about garbage).
  std::size_t bytes_received() const { return received_; }

 private:
  int fd_;
  std::string peer_;
  // Writes as much of the queue as the socket takes now; false if the connection is broken.
  // Under send_mutex_.
  bool write_queued_locked();

  mutable std::mutex send_mutex_;
  std::string queued_;  // lines queue() and send() took; written from queued_from_ on
  std::size_t queued_from_ = 0;
  std::uint64_t written_ = 0;  // bytes written since the connection opened
  std::string buffer_;
  std::vector<std::string> ready_;
  bool closed_ = false;
  std::size_t max_line_ = kMaxLine;
  std::size_t received_ = 0;
};

}  // namespace transient::train
