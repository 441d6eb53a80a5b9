// The coordinator <-> worker messages once a worker is admitted (train/messages.h): a line from
// the peer, read as the receivers read it (parse_line, checked against nlohmann's parser), decoded
// as the coordinator decodes what workers send and as a worker decodes what the coordinator sends.
// A message that cannot be read is refused with ProtocolError (logged, and the connection goes on);
// anything else escaping, or undefined behaviour on the way (a number that does not fit the field
// it is read into), is a finding.
#include <string>

#include "fuzz_input.h"
#include "transient/train/messages.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // The receivers read a line with parse_line: a checkpoint's chunk in one pass, anything else by
  // nlohmann's parser (at most kMaxDepth deep). It must read what the parser reads, as it reads it.
  const std::string line = transient::fuzz::as_text(data, size);
  const auto parsed = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  using transient::train::message::ProtocolError;
  nlohmann::json message;
  try {
    message = transient::train::message::parse_line(line);
  } catch (const nlohmann::json::exception& error) {
    // As the receivers catch it: a syntax error, or a number no double holds ("1e3005...": an
    // out_of_range, which escaped a harness that caught parse errors only).
    if (!parsed.is_discarded()) transient::fuzz::finding("parse_line refused JSON", error.what());
    return 0;  // no JSON: the channel drops the line before decoding
  } catch (const ProtocolError&) {
    return 0;  // nested too deep: dropped the same way
  }
  if (parsed.is_discarded()) transient::fuzz::finding("parse_line read", "a line that is no JSON");
  if (message != parsed) {
    transient::fuzz::finding("parse_line read otherwise than the parser", line.c_str());
  }
  transient::fuzz::accept_only<ProtocolError>(
      [&] { transient::train::message::decode_to_coordinator(message); });
  transient::fuzz::accept_only<ProtocolError>(
      [&] { transient::train::message::decode_to_worker(message); });
  return 0;
}
