#include "transient/train/step_trace.h"

#include <unistd.h>

#include <torch/csrc/autograd/profiler_kineto.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "transient/core/atomic_file.h"
#include "transient/core/error.h"
#include "transient/train/cuda_support.h"
#include "transient/train/progress_line.h"

namespace transient::train {

namespace {

namespace impl = torch::profiler::impl;

bool parse_step(const std::string& text, std::int64_t& step) {
  if (text.empty() || text.size() > 12 ||
      text.find_first_not_of("0123456789") != std::string::npos) {
    return false;
  }
  step = std::stoll(text);
  return step >= 1;
}

}  // namespace

std::optional<TraceSteps> trace_steps_from_environment() {
  const char* setting = std::getenv("TRANSIENT_TRACE_STEPS");
  if (setting == nullptr || *setting == '\0') return std::nullopt;
  const std::string text = setting;
  const auto dash = text.find('-');
  TraceSteps steps;
  const bool parsed = dash == std::string::npos
                          ? parse_step(text, steps.first) && parse_step(text, steps.last)
                          : parse_step(text.substr(0, dash), steps.first) &&
                                parse_step(text.substr(dash + 1), steps.last);
  if (!parsed || steps.last < steps.first) {
    throw InputError("TRANSIENT_TRACE_STEPS=" + text +
                     ": accepted: FIRST-LAST, step numbers with 1 <= FIRST <= LAST (or one "
                     "step N)");
  }
  return steps;
}

void save_profiler_trace(torch::autograd::profiler::ProfilerResult& result, const std::string& path,
                         const std::string& flag) {
  const std::string scratch = (std::filesystem::temp_directory_path() /
                               ("transient-trace-" + std::to_string(::getpid()) + ".json"))
                                  .string();
  try {
    result.save(scratch);
    write_file_atomically(path, read_file(scratch));
  } catch (const InputError&) {
    std::filesystem::remove(scratch);
    throw;
  } catch (const std::exception& error) {
    std::filesystem::remove(scratch);
    const std::string what = error.what();
    throw InputError(path, 0,
                     flag + ": cannot write the trace (" + what.substr(0, what.find('\n')) + ")");
  }
  std::filesystem::remove(scratch);
}

void start_profiler(bool gpu) {
  // Without an NVIDIA driver, Kineto logs its failed GPU query as an error; nothing else it says
  // matters here. A value given is kept.
  if (!nvidia_driver_present()) ::setenv("KINETO_LOG_LEVEL", "5", /*overwrite=*/0);
  const impl::ProfilerConfig config(impl::ProfilerState::KINETO, /*report_input_shapes=*/true);
  std::set<impl::ActivityType> activities{impl::ActivityType::CPU};
  if (gpu) activities.insert(impl::ActivityType::CUDA);
  torch::autograd::profiler::prepareProfiler(config, activities);
  torch::autograd::profiler::enableProfiler(config, activities);
}

StepTrace::StepTrace(TraceSteps steps, std::string path, bool cuda)
    : steps_(steps), path_(std::move(path)), cuda_(cuda) {}

StepTrace::~StepTrace() {
  if (!running_) return;
  try {
    torch::autograd::profiler::disableProfiler();
  } catch (...) {  // a destructor: the trace is dropped either way
  }
}

void StepTrace::before(std::int64_t step) {
  if (running_ || done_ || step < steps_.first || step > steps_.last) return;
  // A trace is a diagnosis, never a reason to stop training: if the profiler does not start
  // with the GPU's activity it traces the CPU alone, and if not even that, nothing (said once).
  auto start = [](bool gpu) -> std::string {
    try {
      start_profiler(gpu);
      return "";
    } catch (const std::exception& error) {
      const std::string what = error.what();
      return what.substr(0, what.find('\n'));
    }
  };
  std::string failed = start(cuda_);
  if (!failed.empty() && cuda_) {
    print_line("transient worker: TRANSIENT_TRACE_STEPS: %s; tracing the CPU only\n",
               failed.c_str());
    failed = start(false);
  }
  if (!failed.empty()) {
    print_line("transient worker: TRANSIENT_TRACE_STEPS: %s; no trace\n", failed.c_str());
    done_ = true;
    return;
  }
  running_ = true;
}

void StepTrace::after(std::int64_t step) {
  if (!running_ || step < steps_.last) return;
  running_ = false;
  done_ = true;
  const auto result = torch::autograd::profiler::disableProfiler();
  try {
    save_profiler_trace(*result, path_, "TRANSIENT_TRACE_STEPS");
    print_line("transient worker: steps %lld-%lld traced to %s\n",
               static_cast<long long>(steps_.first), static_cast<long long>(steps_.last),
               path_.c_str());
  } catch (const InputError& error) {
    print_line("transient worker: %s\n", error.what());
  }
}

}  // namespace transient::train
