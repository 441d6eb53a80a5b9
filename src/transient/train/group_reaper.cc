#include "transient/train/group_reaper.h"

#include <utility>

namespace transient::train {

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
