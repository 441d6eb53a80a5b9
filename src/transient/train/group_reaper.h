// The life of a generation's Gloo process group: made by make_gloo_group, ended by a GroupReaper.
//
// GroupReaper ends process groups in the background. A group whose wait was abandoned
// (CollectiveAborted) can still have collectives running, which Gloo cannot cancel;
// ProcessGroupGloo's destructor waits for them, up to the group's collective timeout (seconds). A
// worker hands such a group here and forms the next generation at once instead of sitting out that
// timeout.
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

// A ProcessGroupGloo of `size` over `store` for `rank`. c10d's flight recorder (a trace of every
// collective for debugging hangs, on by default for Gloo as for NCCL) is switched off first,
// unless TORCH_FR_BUFFER_SIZE says otherwise: libtorch 2.11 updates its table of groups, shared
// by the whole process, without its lock, and a worker has two groups at once (the one being
// reaped and the new one; the tests, several), which crashed in that table's tree (seen in
// gradient_buckets_test about one run in two).
c10::intrusive_ptr<c10d::ProcessGroupGloo> make_gloo_group(
    const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
    const c10::intrusive_ptr<c10d::ProcessGroupGloo::Options>& options);

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
