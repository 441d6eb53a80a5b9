#include "transient/train/event_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "transient/core/error.h"

namespace transient::train {

EventLog::EventLog(const std::string& path)
    : path_(path), start_(std::chrono::steady_clock::now()) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0)
    throw InputError(path, 0, std::string("cannot open for appending: ") + std::strerror(errno));
}

EventLog::~EventLog() {
  if (fd_ >= 0) {
    ::fsync(fd_);
    ::close(fd_);
  }
}

double EventLog::elapsed_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void EventLog::append(nlohmann::json event) {
  nlohmann::ordered_json line = nlohmann::ordered_json::object();
  line["t"] = std::round(elapsed_s() * 1000.0) / 1000.0;
  line["event"] = event.value("event", "unknown");
  for (auto& [key, value] : event.items()) {
    if (key != "event") line[key] = value;
  }
  // Text from outside (a garbage line, a peer's message) may not be UTF-8: replaced, not thrown.
  const std::string text =
      line.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
  const char* data = text.data();
  std::size_t left = text.size();
  while (left > 0) {
    const ssize_t n = ::write(fd_, data, left);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw InputError(path_, 0, std::string("cannot append: ") + std::strerror(errno));
    data += n;
    left -= static_cast<std::size_t>(n);
  }
}

}  // namespace transient::train
