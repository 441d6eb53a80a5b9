#include "transient/train/channel.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "transient/core/error.h"

namespace transient::train {
namespace {

using Clock = std::chrono::steady_clock;

std::string describe_address(const sockaddr_storage& address) {
  char host[INET6_ADDRSTRLEN] = "?";
  std::uint16_t port = 0;
  if (address.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&address);
    ::inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
    port = ntohs(in->sin_port);
  } else if (address.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&address);
    ::inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
    port = ntohs(in6->sin6_port);
  }
  return std::string(host) + ":" + std::to_string(port);
}

// The first IPv4 address of `host`, or nullopt.
std::optional<in_addr> resolve(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0 || found == nullptr) {
    return std::nullopt;
  }
  const in_addr address = reinterpret_cast<const sockaddr_in*>(found->ai_addr)->sin_addr;
  ::freeaddrinfo(found);
  return address;
}

}  // namespace

Endpoint parse_endpoint(const std::string& text, const std::string& what) {
  const auto colon = text.rfind(':');
  Endpoint endpoint;
  if (colon != std::string::npos && colon > 0) {
    endpoint.host = text.substr(0, colon);
    const std::string port = text.substr(colon + 1);
    if (!port.empty() && port.size() <= 5 &&
        port.find_first_not_of("0123456789") == std::string::npos) {
      const int value = std::stoi(port);
      if (value > 0 && value < 65536) endpoint.port = static_cast<std::uint16_t>(value);
    }
  }
  if (endpoint.port == 0) {
    throw InputError(what + ": \"" + text + "\" is not HOST:PORT (e.g. 127.0.0.1:29400)");
  }
  return endpoint;
}

Listener::Listener(const std::string& host, std::uint16_t port, const std::string& what) {
  const auto address = resolve(host);
  if (!address)
    throw InputError(what + ": cannot resolve \"" + host +
                     "\"; accepted: an IPv4 address or host name");
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd_ < 0) throw InputError(what + ": cannot create a socket: " + std::strerror(errno));
  const int on = 1;
  ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
  sockaddr_in bind_address{};
  bind_address.sin_family = AF_INET;
  bind_address.sin_port = htons(port);
  bind_address.sin_addr = *address;
  if (::bind(fd_, reinterpret_cast<sockaddr*>(&bind_address), sizeof(bind_address)) != 0 ||
      ::listen(fd_, 64) != 0) {
    const std::string reason = std::strerror(errno);
    ::close(fd_);
    throw InputError(what + ": cannot listen on " + host + ":" + std::to_string(port) + ": " +
                     reason);
  }
  sockaddr_in bound{};
  socklen_t size = sizeof(bound);
  ::getsockname(fd_, reinterpret_cast<sockaddr*>(&bound), &size);
  port_ = ntohs(bound.sin_port);
}

Listener::~Listener() {
  if (fd_ >= 0) ::close(fd_);
}

int Listener::accept(std::string& peer) {
  sockaddr_storage address{};
  socklen_t size = sizeof(address);
  const int fd =
      ::accept4(fd_, reinterpret_cast<sockaddr*>(&address), &size, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (fd < 0) return -1;
  const int on = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
  peer = describe_address(address);
  return fd;
}

LineChannel::LineChannel(int fd, std::string peer) : fd_(fd), peer_(std::move(peer)) {
  const int flags = ::fcntl(fd_, F_GETFL);
  ::fcntl(fd_, F_SETFL, flags | O_NONBLOCK);
}

LineChannel::~LineChannel() { ::close(fd_); }

std::unique_ptr<LineChannel> LineChannel::connect(const Endpoint& endpoint, double timeout_s) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    if (const auto address = resolve(endpoint.host)) {
      const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (fd >= 0) {
        sockaddr_in target{};
        target.sin_family = AF_INET;
        target.sin_port = htons(endpoint.port);
        target.sin_addr = *address;
        if (::connect(fd, reinterpret_cast<sockaddr*>(&target), sizeof(target)) == 0) {
          const int on = 1;
          ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
          return std::make_unique<LineChannel>(fd, endpoint.text());
        }
        ::close(fd);
      }
    }
    if (Clock::now() >= deadline) return nullptr;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

bool LineChannel::send(const nlohmann::json& message) {
  const std::string text = message.dump() + "\n";
  std::lock_guard<std::mutex> lock(send_mutex_);
  std::size_t sent = 0;
  while (sent < text.size()) {
    const ssize_t n = ::send(fd_, text.data() + sent, text.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd waiting{fd_, POLLOUT, 0};
      if (::poll(&waiting, 1, 5000) <= 0) return false;
      continue;
    }
    return false;
  }
  return true;
}

LineChannel::Status LineChannel::read_available(std::vector<std::string>& lines) {
  char chunk[65536];
  // At most kMaxLine bytes per call: one fast sender cannot hold the coordinator's thread.
  for (std::size_t read = 0; read < max_line_;) {
    const ssize_t n = ::recv(fd_, chunk, sizeof(chunk), 0);
    if (n > 0) {
      read += static_cast<std::size_t>(n);
      received_ += static_cast<std::size_t>(n);
      buffer_.append(chunk, static_cast<std::size_t>(n));
      std::size_t start = 0;
      for (std::size_t end; (end = buffer_.find('\n', start)) != std::string::npos;
           start = end + 1) {
        lines.push_back(buffer_.substr(start, end - start));
      }
      buffer_.erase(0, start);
      if (buffer_.size() > max_line_) return Status::kTooLong;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return Status::kOpen;
    closed_ = true;
    return Status::kClosed;
  }
  return Status::kOpen;
}

std::optional<std::string> LineChannel::read_line(double timeout_s) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    if (!ready_.empty()) {
      std::string line = std::move(ready_.front());
      ready_.erase(ready_.begin());
      return line;
    }
    if (closed_) return std::nullopt;
    const auto status = read_available(ready_);
    if (!ready_.empty()) continue;
    if (status != Status::kOpen) {
      closed_ = true;
      return std::nullopt;
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return std::nullopt;
    pollfd waiting{fd_, POLLIN, 0};
    ::poll(&waiting, 1, static_cast<int>(std::min<std::int64_t>(left.count(), 1000)));
  }
}

void LineChannel::shutdown() { ::shutdown(fd_, SHUT_RDWR); }

}  // namespace transient::train
