// Spot availability traces (JSON, market/availability_trace_model).
#include "fuzz_input.h"
#include "transient/market/availability_trace_model.h"
#include "transient/market/revocation_model.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const transient::fuzz::ScratchFile file("trace.json", transient::fuzz::as_text(data, size));
  transient::fuzz::accept_or_input_error([&] {
    const auto model = transient::market::AvailabilityTraceModel::read(file.path(), 0.0,
                                                                       transient::market::kNever);
    model->describe();
  });
  return 0;
}
