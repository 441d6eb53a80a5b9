// JSON through core/structured_input: every JSON input of the program is read by parse_json.
#include "fuzz_input.h"
#include "transient/core/structured_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = transient::fuzz::as_text(data, size);
  transient::fuzz::accept_or_input_error([&] { transient::parse_json(text, "input.json"); });
  return 0;
}
