// Node-event traces (CSV `time_ms,add|remove,node`, market/node_trace_model).
#include "fuzz_input.h"
#include "transient/market/node_trace_model.h"
#include "transient/market/revocation_model.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const transient::fuzz::ScratchFile file("nodes.csv", transient::fuzz::as_text(data, size));
  transient::fuzz::accept_or_input_error([&] {
    const auto model =
        transient::market::NodeTraceModel::read(file.path(), 0.0, transient::market::kNever);
    model->describe();
  });
  return 0;
}
