#include "transient/train/group_reaper.h"

#include <cstdlib>
#include <mutex>
#include <utility>

namespace transient::train {

c10::intrusive_ptr<c10d::ProcessGroupGloo> make_gloo_group(
    const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
    const c10::intrusive_ptr<c10d::ProcessGroupGloo::Options>& options) {
  // Read once, by the recorder's first use: before the first group is made.
  static std::once_flag switched_off;
  std::call_once(switched_off, [] { ::setenv("TORCH_FR_BUFFER_SIZE", "0", /*overwrite=*/0); });
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, options);
}

GroupReaper::GroupReaper() : thread_([this] { run(); }) {}

GroupReaper::~GroupReaper() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void GroupReaper::take(c10::intrusive_ptr<c10d::ProcessGroupGloo> group) {
  if (!group) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    groups_.push_back(std::move(group));
  }
  wake_.notify_one();
}

void GroupReaper::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return stopping_ || !groups_.empty(); });
    if (groups_.empty()) return;  // stopping, and nothing left to end
    auto group = std::move(groups_.front());
    groups_.pop_front();
    lock.unlock();
    group.reset();  // may wait for the group's running collectives to time out
    lock.lock();
  }
}

}  // namespace transient::train
