// The simulator's future events: a binary min-heap of small PODs ordered by time, ties broken by
// insertion order so that runs are deterministic. Storage is reused between runs (clear() keeps
// the capacity), so the event loop does not allocate once warmed up.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "transient/sim/run_result.h"

namespace transient::sim::internal {

struct Event {
  double time_s;
  std::uint32_t seq;         // insertion order, for ties
  std::uint32_t generation;  // the server's (or the job's) generation when queued; stale if changed
  std::int32_t server;       // index of the server, -1 for job events
  EventKind kind;
};

class EventQueue {
 public:
  void clear() {
    heap_.clear();
    seq_ = 0;
  }
  void reserve(std::size_t n) { heap_.reserve(n); }
  bool empty() const { return heap_.empty(); }
  // The earliest event. REQUIRES: !empty().
  const Event& top() const { return heap_.front(); }

  void push(double time_s, EventKind kind, std::int32_t server, std::uint32_t generation) {
    heap_.push_back(Event{time_s, seq_++, generation, server, kind});
    std::push_heap(heap_.begin(), heap_.end(), Later{});
  }

  Event pop() {
    std::pop_heap(heap_.begin(), heap_.end(), Later{});
    const Event event = heap_.back();
    heap_.pop_back();
    return event;
  }

 private:
  // A function object rather than a function pointer, so that the heap operations inline it.
  struct Later {
    bool operator()(const Event& a, const Event& b) const {
      return a.time_s > b.time_s || (a.time_s == b.time_s && a.seq > b.seq);
    }
  };

  std::vector<Event> heap_;
  std::uint32_t seq_ = 0;
};

}  // namespace transient::sim::internal
