// The launcher's progress line on stderr: step, epoch, loss, samples/s and ETA. On a terminal it
// is rewritten in place (\r); in a log it is printed as a new line at most every `interval_s`
// seconds, so that a long run does not flood the log. Used by the coordinator's thread only.
//
// The workers `transient train` starts share its terminal: their lines (print_line) and the
// coordinator's (after clear()) erase the row the cursor is on first, which is the progress line
// where one is drawn, so that no line is written into it and none leaves a blank row; the
// progress line is drawn again below them at the next step.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace transient::train {

class ProgressLine {
 public:
  explicit ProgressLine(double log_interval_s = 10.0);
  ~ProgressLine();  // ends a line left open on a terminal

  // Shows the state after `step` of `total_steps`.
  void update(std::int64_t step, std::int64_t total_steps, std::int64_t epoch, double loss,
              double samples_per_s, double eta_s);
  // Ends the in-place line, so that what follows starts on a line of its own: the line stays.
  void finish();
  // Erases the in-place line, so that what follows is written where it was.
  void clear();

 private:
  bool terminal_;
  double log_interval_s_;
  bool open_ = false;
  std::chrono::steady_clock::time_point last_print_{};
  bool printed_ = false;
};

// printf to stderr of `format` (a whole line, ending in \n) as one write; on a terminal the row
// the cursor is on is erased first (\r, erase to its end), as ProgressLine::clear() does. Control
// characters in what it formats (a peer's reason, a file's name), but the line's own end, are
// shown as '?': it stays one line and cannot steer the terminal.
void print_line(const char* format, ...) __attribute__((format(printf, 1, 2)));

}  // namespace transient::train
