// TOML through core/structured_input (scenario files are TOML; scenario_fuzz reads them whole).
#include "fuzz_input.h"
#include "transient/core/structured_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = transient::fuzz::as_text(data, size);
  transient::fuzz::accept_or_input_error([&] {
    const auto table = transient::parse_toml(text, "input.toml");
    for (const auto& [key, node] : table) transient::toml_line(node);
  });
  return 0;
}
