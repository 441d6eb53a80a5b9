// Workload profiles (JSON, perf/workload): what is accepted is within the bounds of
// core/bounds.h, so that no model or solver downstream sees an absurd figure.
#include "fuzz_input.h"
#include "transient/core/bounds.h"
#include "transient/perf/workload.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = transient::fuzz::as_text(data, size);
  transient::fuzz::accept_or_input_error([&] {
    const auto w = transient::perf::parse_workload_profile(text, "profile.json");
    namespace b = transient::bounds;
    if (!b::kFlopsPerSample.contains(w.forward_flops_per_sample) ||
        !b::kFlopsPerSample.contains(w.backward_flops_per_sample) ||
        !b::kBatch.contains(w.batch_per_worker) || !b::kBytes.contains(w.gradient_bytes)) {
      transient::fuzz::finding("a profile beyond its bounds", text.c_str());
    }
    transient::perf::parse_workload_profile(transient::perf::to_json(w).dump(), "again.json");
  });
  return 0;
}
