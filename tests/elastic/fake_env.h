// A clock the test moves and the checkpoints it says were written: the Env of the membership
// tests, and helpers to read the machine's actions.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "transient/elastic/membership.h"

namespace transient::elastic::testing {

class FakeEnv : public Env {
 public:
  TimePoint now() override { return now_; }
  // Now, unless the test stalled the reading (a coordinator busy after it read every worker).
  TimePoint listened_at() override { return listened_ ? *listened_ : now_; }
  void stall_reading() { listened_ = now_; }
  void read_again() { listened_.reset(); }
  StartPoint start_point() override {
    ++start_points;
    return checkpoint;
  }
  void advance(double seconds) {
    now_ += std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  }

  StartPoint checkpoint;  // the newest valid one
  int start_points = 0;   // times asked

 private:
  TimePoint now_ = TimePoint{} + std::chrono::hours(1);
  std::optional<TimePoint> listened_;
};

// The actions of type T among `actions`, in order.
template <typename T>
std::vector<T> all_of(const std::vector<Action>& actions) {
  std::vector<T> found;
  for (const auto& action : actions) {
    if (const T* one = std::get_if<T>(&action)) found.push_back(*one);
  }
  return found;
}

}  // namespace transient::elastic::testing
