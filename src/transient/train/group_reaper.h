// Ends process groups in the background. A group whose wait was abandoned (CollectiveAborted)
// can still have collectives running, which Gloo cannot cancel; ProcessGroupGloo's destructor
// waits for them, up to the group's collective timeout (seconds). A worker hands such a group
// here and forms the next generation at once instead of sitting out that timeout.
//
// Thread-safety: take() may be called from any thread. The destructor waits until every group
// handed over is destroyed (each within its own timeout).
#pragma once

#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

namespace transient::train {

class GroupReaper {
 public:
  GroupReaper();
  ~GroupReaper();
  GroupReaper(const GroupReaper&) = delete;
  GroupReaper& operator=(const GroupReaper&) = delete;

  // Destroys `group` on the reaper's thread (the last reference this caller holds; a group still
  // referenced elsewhere lives on there).
  void take(c10::intrusive_ptr<c10d::ProcessGroupGloo> group);

 private:
  void run();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<c10::intrusive_ptr<c10d::ProcessGroupGloo>> groups_;  // GUARDED_BY(mutex_)
  bool stopping_ = false;                                          // GUARDED_BY(mutex_)
  std::thread thread_;  // started last, joined by the destructor
};

}  // namespace transient::train
