// The coordinator <-> worker messages once a worker is admitted (train/messages.h): a line from
// the peer, parsed as JSON, decoded as the coordinator decodes what workers send and as a worker
// decodes what the coordinator sends. A message that cannot be read is refused with
// ProtocolError (logged, and the connection goes on); anything else escaping, or undefined
// behaviour on the way (a number that does not fit the field it is read into), is a finding.
#include <string>

#include "fuzz_input.h"
#include "transient/train/messages.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // The channel hands over a line that is valid JSON; one that is not is dropped before this.
  const auto message = nlohmann::json::parse(transient::fuzz::as_text(data, size), nullptr,
                                             /*allow_exceptions=*/false);
  if (message.is_discarded()) return 0;
  using transient::train::message::ProtocolError;
  transient::fuzz::accept_only<ProtocolError>(
      [&] { transient::train::message::decode_to_coordinator(message); });
  transient::fuzz::accept_only<ProtocolError>(
      [&] { transient::train::message::decode_to_worker(message); });
  return 0;
}
