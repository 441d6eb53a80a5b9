// `--revoke` rules (launch/revocation_schedule).
#include "fuzz_input.h"
#include "transient/launch/revocation_schedule.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = transient::fuzz::as_text(data, size);
  transient::fuzz::accept_or_input_error([&] { transient::launch::parse_revoke_rule(text); });
  return 0;
}
