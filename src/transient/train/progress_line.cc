#include "transient/train/progress_line.h"

#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <string>

#include "transient/core/duration.h"
#include "transient/core/text.h"

namespace transient::train {
namespace {

// On a terminal: back to the row's start and erase it, the progress line on it if any.
constexpr const char* kEraseRow = "\r\033[K";

}  // namespace

ProgressLine::ProgressLine(double log_interval_s)
    : terminal_(::isatty(STDERR_FILENO) == 1), log_interval_s_(log_interval_s) {}

ProgressLine::~ProgressLine() { finish(); }

void ProgressLine::update(std::int64_t step, std::int64_t total_steps, std::int64_t epoch,
                          double loss, double samples_per_s, double eta_s) {
  const auto now = std::chrono::steady_clock::now();
  const bool last = step >= total_steps;
  if (!terminal_ && printed_ && !last &&
      std::chrono::duration<double>(now - last_print_).count() < log_interval_s_) {
    return;
  }
  if (terminal_ && printed_ && !last &&
      std::chrono::duration<double>(now - last_print_).count() < 0.2) {
    return;
  }
  last_print_ = now;
  printed_ = true;
  // No speed yet (the first step): "-", as the ETA, not 0 samples/s.
  char rate[32] = "-";
  if (samples_per_s > 0) std::snprintf(rate, sizeof(rate), "%.0f", samples_per_s);
  char line[256];
  std::snprintf(line, sizeof(line), "step %lld/%lld  epoch %lld  loss %.4f  %s samples/s  ETA %s",
                static_cast<long long>(step), static_cast<long long>(total_steps),
                static_cast<long long>(epoch + 1), loss, rate,
                eta_s >= 0 ? format_duration(eta_s).c_str() : "-");
  if (terminal_) {
    std::fprintf(stderr, "\r%s\033[K", line);
    open_ = true;
  } else {
    std::fprintf(stderr, "%s\n", line);
  }
  std::fflush(stderr);
}

void ProgressLine::finish() {
  if (open_) {
    std::fprintf(stderr, "\n");
    std::fflush(stderr);
    open_ = false;
  }
}

void ProgressLine::clear() {
  if (open_) {
    std::fputs(kEraseRow, stderr);
    open_ = false;
  }
}

void print_line(const char* format, ...) {
  std::string text = ::isatty(STDERR_FILENO) == 1 ? kEraseRow : "";
  std::va_list args;
  va_start(args, format);
  std::va_list again;
  va_copy(again, args);
  const int size = std::vsnprintf(nullptr, 0, format, args);
  va_end(args);
  if (size > 0) {
    const std::size_t at = text.size();
    text.resize(at + static_cast<std::size_t>(size) + 1);
    std::vsnprintf(text.data() + at, static_cast<std::size_t>(size) + 1, format, again);
    text.resize(at + static_cast<std::size_t>(size));
    // One line whatever it quotes (a peer's reason, a file's name): control characters but the
    // line's own end are shown as '?'.
    const bool ends_line = text.back() == '\n';
    const std::string shown = printable(text.substr(at, text.size() - at - (ends_line ? 1 : 0)));
    text.replace(at, shown.size(), shown);
  }
  va_end(again);
  std::fwrite(text.data(), 1, text.size(), stderr);
  std::fflush(stderr);
}

}  // namespace transient::train
