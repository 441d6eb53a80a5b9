#include "transient/train/event_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "transient/core/error.h"

namespace transient::train {

EventLog::EventLog(const std::string& path)
    : path_(path), start_(std::chrono::steady_clock::now()) {
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0)
    throw InputError(path, 0, std::string("cannot open for appending: ") + std::strerror(errno));
  // A log whose last line was cut short (a crash, a full disk) is ended first: the next event
  // was appended to that line, and both were lost to its readers.
  struct stat info {};
  char last = '\n';
  if (::fstat(fd_, &info) == 0 && info.st_size > 0 &&
      ::pread(fd_, &last, 1, info.st_size - 1) == 1 && last != '\n') {
    const char newline = '\n';
    if (::write(fd_, &newline, 1) != 1) {
      const int error = errno;
      ::close(fd_);
      throw InputError(path, 0,
                       std::string("cannot end its cut-short last line: ") + std::strerror(error));
    }
  }
}

EventLog::~EventLog() {
  if (fd_ >= 0) {
    ::fsync(fd_);
    ::close(fd_);
  }
}

std::string utc_now_iso8601() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  const auto millis =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm utc{};
  ::gmtime_r(&seconds, &utc);
  char text[64];
  std::snprintf(text, sizeof(text), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900,
                utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                static_cast<int>(millis));
  return text;
}

double EventLog::elapsed_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void EventLog::append(nlohmann::json event) {
  nlohmann::ordered_json line = nlohmann::ordered_json::object();
  line["t"] = std::round(elapsed_s() * 1000.0) / 1000.0;
  line["time"] = utc_now_iso8601();
  line["event"] = event.value("event", "unknown");
  // `t` and `time` are this log's: an event that carries its own (from a worker) cannot move it.
  for (auto& [key, value] : event.items()) {
    if (key != "event" && key != "t" && key != "time") line[key] = value;
  }
  // Text from outside (a garbage line, a peer's message) may not be UTF-8: replaced, not thrown.
  const std::string text =
      line.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
  // A line is appended whole or not at all: one cut short (a full disk takes part of it) is cut
  // off again, and the file ends with the last whole line, as readers expect.
  const off_t before = ::lseek(fd_, 0, SEEK_END);
  const char* data = text.data();
  std::size_t left = text.size();
  while (left > 0) {
    const ssize_t n = ::write(fd_, data, left);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int saved = errno;
      // If even that fails, readers name the line as cut short.
      [[maybe_unused]] const int cut = before >= 0 ? ::ftruncate(fd_, before) : 0;
      throw InputError(path_, 0, std::string("cannot append: ") + std::strerror(saved));
    }
    data += n;
    left -= static_cast<std::size_t>(n);
  }
}

}  // namespace transient::train
