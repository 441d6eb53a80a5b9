// Model files written by `transient fit` and read by `--model` (perf/throughput_fitting).
#include "fuzz_input.h"
#include "transient/perf/throughput_fitting.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const transient::fuzz::ScratchFile file("model.json", transient::fuzz::as_text(data, size));
  transient::fuzz::accept_or_input_error(
      [&] { transient::perf::PerfModelFile::load(file.path()); });
  return 0;
}
