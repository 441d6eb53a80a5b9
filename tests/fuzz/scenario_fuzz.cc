// Scenario files (TOML, sim/scenario_loader), and through them core/structured_input's TOML.
#include "fuzz_input.h"
#include "transient/sim/scenario_loader.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = transient::fuzz::as_text(data, size);
  transient::fuzz::accept_or_input_error([&] {
    transient::sim::parse_scenario(text, "scenario.toml", transient::fuzz::scratch_dir().string());
  });
  return 0;
}
