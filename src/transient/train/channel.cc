#include "transient/train/channel.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "transient/core/error.h"

namespace transient::train {
namespace {

using Clock = std::chrono::steady_clock;

// The host of `address` as text (IPv6 without brackets), and its port.
std::string host_of(const sockaddr_storage& address) {
  char host[INET6_ADDRSTRLEN] = "?";
  if (address.ss_family == AF_INET) {
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&address)->sin_addr, host,
                sizeof(host));
  } else if (address.ss_family == AF_INET6) {
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&address)->sin6_addr, host,
                sizeof(host));
  }
  return host;
}

std::uint16_t port_of(const sockaddr_storage& address) {
  return address.ss_family == AF_INET
             ? ntohs(reinterpret_cast<const sockaddr_in*>(&address)->sin_port)
             : ntohs(reinterpret_cast<const sockaddr_in6*>(&address)->sin6_port);
}

std::string describe_address(const sockaddr_storage& address) {
  return Endpoint{host_of(address), port_of(address)}.text();
}

// The addresses of `host` (IPv4 or IPv6, numeric or a name) for a TCP socket; empty if none.
std::vector<sockaddr_storage> resolve(const std::string& host, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  addrinfo* found = nullptr;
  std::vector<sockaddr_storage> addresses;
  if (::getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0) return addresses;
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    if (a->ai_family != AF_INET && a->ai_family != AF_INET6) continue;
    sockaddr_storage address{};
    std::memcpy(&address, a->ai_addr, a->ai_addrlen);
    addresses.push_back(address);
  }
  ::freeaddrinfo(found);
  return addresses;
}

void set_port(sockaddr_storage& address, std::uint16_t port) {
  if (address.ss_family == AF_INET) {
    reinterpret_cast<sockaddr_in*>(&address)->sin_port = htons(port);
  } else {
    reinterpret_cast<sockaddr_in6*>(&address)->sin6_port = htons(port);
  }
}

socklen_t size_of(const sockaddr_storage& address) {
  return address.ss_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
}

}  // namespace

Endpoint parse_endpoint(const std::string& text, const std::string& what) {
  const auto colon = text.rfind(':');
  Endpoint endpoint;
  if (colon != std::string::npos && colon > 0) {
    endpoint.host = text.substr(0, colon);
    // An IPv6 address is written in brackets: [::1]:29400.
    if (endpoint.host.size() > 2 && endpoint.host.front() == '[' && endpoint.host.back() == ']') {
      endpoint.host = endpoint.host.substr(1, endpoint.host.size() - 2);
    }
    const std::string port = text.substr(colon + 1);
    if (!port.empty() && port.size() <= 5 &&
        port.find_first_not_of("0123456789") == std::string::npos) {
      const int value = std::stoi(port);
      if (value > 0 && value < 65536) endpoint.port = static_cast<std::uint16_t>(value);
    }
  }
  if (endpoint.port == 0) {
    throw InputError(what + ": \"" + text +
                     "\" is not HOST:PORT (e.g. 10.0.0.5:29400, [fd00::5]:29400)");
  }
  return endpoint;
}

bool resolves(const std::string& host) { return !resolve(host, false).empty(); }

std::vector<std::string> host_addresses() {
  std::vector<std::string> addresses;
  ifaddrs* interfaces = nullptr;
  if (::getifaddrs(&interfaces) != 0) return addresses;
  for (const ifaddrs* i = interfaces; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || (i->ifa_flags & IFF_UP) == 0 ||
        (i->ifa_flags & IFF_LOOPBACK) != 0)
      continue;
    if (i->ifa_addr->sa_family != AF_INET && i->ifa_addr->sa_family != AF_INET6) continue;
    sockaddr_storage address{};
    std::memcpy(&address, i->ifa_addr,
                i->ifa_addr->sa_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6));
    if (address.ss_family == AF_INET6 &&
        IN6_IS_ADDR_LINKLOCAL(&reinterpret_cast<sockaddr_in6*>(&address)->sin6_addr)) {
      continue;  // needs a scope id to be of use
    }
    addresses.push_back(host_of(address));
  }
  ::freeifaddrs(interfaces);
  return addresses;
}

std::string interface_address(const std::string& name, const std::string& what) {
  ifaddrs* interfaces = nullptr;
  if (::getifaddrs(&interfaces) != 0) {
    throw InputError(what + ": cannot list the network interfaces: " + std::strerror(errno));
  }
  std::string v4;
  std::string v6;
  std::vector<std::string> names;
  for (const ifaddrs* i = interfaces; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr) continue;
    if (std::find(names.begin(), names.end(), i->ifa_name) == names.end())
      names.push_back(i->ifa_name);
    if (name != i->ifa_name) continue;
    sockaddr_storage address{};
    if (i->ifa_addr->sa_family == AF_INET && v4.empty()) {
      std::memcpy(&address, i->ifa_addr, sizeof(sockaddr_in));
      v4 = host_of(address);
    } else if (i->ifa_addr->sa_family == AF_INET6 && v6.empty()) {
      std::memcpy(&address, i->ifa_addr, sizeof(sockaddr_in6));
      if (!IN6_IS_ADDR_LINKLOCAL(&reinterpret_cast<sockaddr_in6*>(&address)->sin6_addr)) {
        v6 = host_of(address);
      }
    }
  }
  ::freeifaddrs(interfaces);
  if (!v4.empty()) return v4;
  if (!v6.empty()) return v6;
  std::string known;
  for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
  throw InputError(what + ": no network interface \"" + name +
                   "\" with an address here; this host has: " + known);
}

Listener::Listener(const std::string& host, std::uint16_t port, const std::string& what) {
  auto addresses = resolve(host, true);
  if (addresses.empty()) {
    throw InputError(what + ": cannot resolve \"" + host +
                     "\"; accepted: an IPv4 or IPv6 address (0.0.0.0 or :: for every interface) "
                     "or a host name");
  }
  sockaddr_storage address = addresses.front();
  set_port(address, port);
  fd_ = ::socket(address.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd_ < 0) throw InputError(what + ": cannot create a socket: " + std::strerror(errno));
  const int on = 1;
  ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
  if (::bind(fd_, reinterpret_cast<sockaddr*>(&address), size_of(address)) != 0 ||
      ::listen(fd_, 64) != 0) {
    const int error = errno;
    ::close(fd_);
    const std::string message =
        what + ": cannot listen on " + Endpoint{host, port}.text() + ": " + std::strerror(error);
    if (error == EADDRINUSE) throw PortInUse(message);
    throw InputError(message);
  }
  sockaddr_storage bound{};
  socklen_t size = sizeof(bound);
  ::getsockname(fd_, reinterpret_cast<sockaddr*>(&bound), &size);
  port_ = bound.ss_family == AF_INET ? ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port)
                                     : ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port);
}

Listener::~Listener() {
  if (fd_ >= 0) ::close(fd_);
}

namespace {

// Whether a socket listening on `theirs` (as /proc/net/tcp{,6} writes it: the address's 4 or 16
// bytes as 32-bit words in hex, each in the host's order) keeps `ours` from being bound: the
// same address, or either of them every interface.
bool overlaps(const std::string& theirs, const sockaddr_storage& ours) {
  std::uint32_t words[4] = {0, 0, 0, 0};
  const std::size_t n = theirs.size() / 8;
  if ((n != 1 && n != 4) || theirs.size() % 8 != 0) return true;  // unknown: take it as ours
  for (std::size_t i = 0; i < n; ++i) {
    words[i] = static_cast<std::uint32_t>(std::stoul(theirs.substr(8 * i, 8), nullptr, 16));
  }
  const bool their_any = words[0] == 0 && words[1] == 0 && words[2] == 0 && words[3] == 0;
  if (their_any) return true;
  if (ours.ss_family == AF_INET) {
    const in_addr& a = reinterpret_cast<const sockaddr_in*>(&ours)->sin_addr;
    return a.s_addr == INADDR_ANY || (n == 1 && a.s_addr == words[0]);
  }
  const in6_addr& a = reinterpret_cast<const sockaddr_in6*>(&ours)->sin6_addr;
  if (IN6_IS_ADDR_UNSPECIFIED(&a)) return true;
  if (n != 4) return false;
  std::uint32_t mine[4];
  std::memcpy(mine, a.s6_addr, sizeof(mine));
  return std::equal(mine, mine + 4, words);
}

// The process holding socket `inode` open, as "pid N (NAME)", or "" if none of those this
// process may look into does (another user's, or one of another PID namespace).
std::string owner_of_socket(const std::string& inode) {
  namespace fs = std::filesystem;
  const std::string link = "socket:[" + inode + "]";
  std::error_code ec;
  for (const auto& process : fs::directory_iterator("/proc", ec)) {
    const std::string pid = process.path().filename().string();
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::error_code fd_error;
    for (const auto& fd : fs::directory_iterator(process.path() / "fd", fd_error)) {
      std::error_code read_error;
      if (fs::read_symlink(fd.path(), read_error).string() != link) continue;
      std::ifstream comm(process.path() / "comm");
      std::string name;
      std::getline(comm, name);
      return "pid " + pid + (name.empty() ? "" : " (" + name + ")");
    }
  }
  return "";
}

}  // namespace

std::vector<ListeningSocket> listening_sockets(std::uint16_t port) {
  std::vector<ListeningSocket> found;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // the header
    while (std::getline(in, line)) {
      // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
      std::istringstream fields(line);
      std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
      if (!(fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >>
            timeout >> inode)) {
        continue;
      }
      const auto colon = local.find(':');
      const auto queue_colon = queues.find(':');
      if (state != "0A" || colon == std::string::npos || queue_colon == std::string::npos) {
        continue;  // 0A: TCP_LISTEN
      }
      if (std::stoul(local.substr(colon + 1), nullptr, 16) != port) continue;
      // A listening socket's rx_queue is its accept queue.
      found.push_back({local.substr(0, colon),
                       static_cast<int>(std::stoul(queues.substr(queue_colon + 1), nullptr, 16)),
                       inode});
    }
  }
  return found;
}

std::optional<std::string> listening_on(const std::string& host, std::uint16_t port) {
  const auto addresses = resolve(host, true);
  if (addresses.empty()) return std::nullopt;
  for (const auto& socket : listening_sockets(port)) {
    if (overlaps(socket.address, addresses.front())) return owner_of_socket(socket.inode);
  }
  return std::nullopt;
}

std::unique_ptr<Listener> listen_once_free(const std::string& host, std::uint16_t port,
                                           const std::string& what, double wait_s) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::duration<double>(wait_s);
  for (bool said = false;; said = true) {
    try {
      return std::make_unique<Listener>(host, port, what);
    } catch (const PortInUse& error) {
      // A program listening there keeps it until it is stopped: said at once, not after wait_s.
      if (const auto owner = listening_on(host, port)) {
        throw PortInUse(std::string(error.what()) + ": " + (owner->empty() ? "a program" : *owner) +
                        " listens there; stop it or free the port");
      }
      if (std::chrono::steady_clock::now() >= give_up) throw;
      if (!said) {
        std::fprintf(stderr,
                     "transient: %s: port %u is in use (a connection of this host may hold it "
                     "as its own end); trying again for up to %.0f s\n",
                     what.c_str(), unsigned{port}, wait_s);
        std::fflush(stderr);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
}

void LineChannel::set_user_timeout(double seconds) {
  const unsigned int ms = static_cast<unsigned int>(std::clamp(seconds, 0.001, 86400.0) * 1000);
  ::setsockopt(fd_, IPPROTO_TCP, TCP_USER_TIMEOUT, &ms, sizeof(ms));
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
    for (auto address : resolve(endpoint.host, false)) {
      set_port(address, endpoint.port);
      const int fd = ::socket(address.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
      if (fd < 0) continue;
      // Non-blocking, so that a host that drops packets costs the time left, not the kernel's
      // two minutes of SYN retries.
      bool connected = ::connect(fd, reinterpret_cast<sockaddr*>(&address), size_of(address)) == 0;
      if (!connected && errno == EINPROGRESS) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        pollfd waiting{fd, POLLOUT, 0};
        int error = 0;
        socklen_t size = sizeof(error);
        connected =
            ::poll(&waiting, 1, static_cast<int>(std::max<std::int64_t>(1, left.count()))) == 1 &&
            ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &size) == 0 && error == 0;
      }
      if (connected) {
        const int on = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
        return std::make_unique<LineChannel>(fd, endpoint.text());
      }
      ::close(fd);
    }
    if (Clock::now() >= deadline) return nullptr;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

std::string LineChannel::local_host() const {
  sockaddr_storage address{};
  socklen_t size = sizeof(address);
  if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &size) != 0) return "";
  return host_of(address);
}

std::string to_line(const nlohmann::json& message) {
  // Shorter strings, and strings with a character JSON escapes or checks (a quote, a backslash, a
  // control character, any byte beyond ASCII), are the serializer's.
  constexpr std::size_t kLong = 4096;
  auto plain = [](const std::string& text) {
    return std::all_of(text.begin(), text.end(), [](char c) {
      const auto byte = static_cast<unsigned char>(c);
      return byte >= 0x20 && byte < 0x7f && byte != '"' && byte != '\\';
    });
  };
  const bool any_long =
      message.is_object() &&
      std::any_of(message.begin(), message.end(), [](const nlohmann::json& value) {
        return value.is_string() && value.get_ref<const std::string&>().size() >= kLong;
      });
  // Bytes that are not UTF-8 (a file name a worker skipped, as the file system has it) are sent
  // as U+FFFD: nlohmann's dump throws on them, which ended the job over an image it had skipped.
  const auto dump = [](const nlohmann::json& value) {
    return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  };
  if (!any_long) return dump(message);
  std::string line = "{";
  for (auto it = message.begin(); it != message.end(); ++it) {
    if (line.size() > 1) line += ',';
    line += dump(nlohmann::json(it.key()));
    line += ':';
    const auto* text = it.value().is_string() ? &it.value().get_ref<const std::string&>() : nullptr;
    if (text != nullptr && text->size() >= kLong && plain(*text)) {
      line += '"';
      line += *text;
      line += '"';
    } else {
      line += dump(it.value());
    }
  }
  line += '}';
  return line;
}

bool LineChannel::send(const nlohmann::json& message) {
  const std::string text = to_line(message) + "\n";
  std::unique_lock<std::mutex> lock(send_mutex_);
  queued_ += text;
  // Out once the bytes written reach the end of this line. The wait for the socket is not under
  // the lock: a sender waiting for a peer that stopped reading (a checkpoint's chunk to a
  // coordinator cut off) held every other sender, and a worker's training thread, which only
  // queues, stopped with it until its peers' collectives timed out.
  const std::uint64_t through = written_ + (queued_.size() - queued_from_);
  for (;;) {
    if (!write_queued_locked()) return false;
    if (written_ >= through) return true;
    lock.unlock();
    pollfd waiting{fd_, POLLOUT, 0};
    const int ready = ::poll(&waiting, 1, 5000);
    lock.lock();
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0 && written_ < through) return false;  // 5 s without room: not reading
  }
}

bool LineChannel::queue(const nlohmann::json& message) {
  std::lock_guard<std::mutex> lock(send_mutex_);
  queued_ += to_line(message);
  queued_ += '\n';
  return write_queued_locked();
}

bool LineChannel::flush() {
  std::lock_guard<std::mutex> lock(send_mutex_);
  return write_queued_locked();
}

bool LineChannel::write_queued_locked() {
  while (queued_from_ < queued_.size()) {
    const ssize_t n =
        ::send(fd_, queued_.data() + queued_from_, queued_.size() - queued_from_, MSG_NOSIGNAL);
    if (n > 0) {
      queued_from_ += static_cast<std::size_t>(n);
      written_ += static_cast<std::uint64_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      // What was written goes, so that a queue that is never quite empty does not grow.
      if (queued_from_ >= (1u << 20)) {
        queued_.erase(0, queued_from_);
        queued_from_ = 0;
      }
      return true;
    }
    return false;
  }
  queued_.clear();
  queued_from_ = 0;
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
        // A whole line that came in one read is held to the limit too (a 32 KB hello was read).
        if (end - start > max_line_) return Status::kTooLong;
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
