// Where a worker's step time goes: with TRANSIENT_TRACE_STEPS=FIRST-LAST in its environment
// (a local job's workers inherit `transient train`'s), a worker records its steps FIRST to LAST
// (numbered as steps.csv numbers them, from 1) under PyTorch's profiler (Kineto: the CPU's
// operators with their inputs' shapes and, on a GPU, the CUDA kernels, copies and
// synchronisations) and writes their Chrome trace to TRANSIENT_TRACE_DIR (default: the current
// directory) as trace-<worker id>.json, atomically, once. Each step is a "transient::step" range
// holding "transient::data", "transient::forward_backward", "transient::allreduce" and
// "transient::optimizer" (worker.cc). Open it in Perfetto or chrome://tracing.
//
// The profiler costs the traced steps time (their steps.csv rows say how much); the others run
// as without it. Failure: a malformed TRANSIENT_TRACE_STEPS throws InputError naming the
// variable and what is accepted; a profiler that does not start (with the GPU's activity: then
// the CPU's alone is traced) and a trace that cannot be written are said on stderr, and training
// goes on.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace torch::autograd::profiler {
struct ProfilerResult;
}

namespace transient::train {

struct TraceSteps {
  std::int64_t first = 1;  // >= 1
  std::int64_t last = 1;   // >= first
};

// TRANSIENT_TRACE_STEPS, parsed: nullopt when unset or empty. Throws InputError otherwise when
// it is not FIRST-LAST with 1 <= FIRST <= LAST (or one step number N, meaning N-N).
std::optional<TraceSteps> trace_steps_from_environment();

// Starts PyTorch's profiler (Kineto) on the CPU's operators with their inputs' shapes, and with
// `gpu` the CUDA kernels, copies and synchronisations too; disableProfiler() ends it. Throws what
// libtorch throws when it cannot start.
void start_profiler(bool gpu);

// Writes a finished profile's Chrome trace to `path` atomically (Kineto writes a scratch file,
// which is then copied over the path). Throws InputError naming `path` and `flag` when it cannot.
void save_profiler_trace(torch::autograd::profiler::ProfilerResult& result, const std::string& path,
                         const std::string& flag);

// One worker's trace: before(step) starts the profiler at the first traced step, after(step)
// stops it after the last and writes the file. A trace left unfinished (the worker ended
// first) is dropped when this is destroyed.
class StepTrace {
 public:
  StepTrace(TraceSteps steps, std::string path, bool cuda);
  ~StepTrace();
  StepTrace(const StepTrace&) = delete;
  StepTrace& operator=(const StepTrace&) = delete;

  void before(std::int64_t step);
  void after(std::int64_t step);

 private:
  TraceSteps steps_;
  std::string path_;
  bool cuda_;
  bool running_ = false;
  bool done_ = false;
};

}  // namespace transient::train
