// A job directory's records as `transient report` and `transient status` read them
// (records/): events.jsonl, steps.csv (with its header, and a part file without one),
// checkpoints/manifest.json and summary.json. These readers never throw for bad content, so any
// exception, InputError included, is a finding; and what a problem prints is safe to print.
#include <string>

#include "fuzz_input.h"
#include "transient/records/event_reader.h"
#include "transient/records/manifest_reader.h"
#include "transient/records/step_reader.h"
#include "transient/records/summary_reader.h"

namespace {

// A problem's text is one line: control characters of the input are shown as '?'.
void check_printable(const std::vector<transient::records::ReadProblem>& problems) {
  for (const auto& problem : problems) {
    for (const char c : problem.text()) {
      if (c == '\n' || c == '\r' || c == '\x1b') {
        transient::fuzz::finding("a problem line", problem.text().c_str());
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = transient::fuzz::as_text(data, size);
  transient::fuzz::accept_only<transient::fuzz::NothingThrown>([&] {
    check_printable(transient::records::parse_events(text, "events.jsonl").problems);
    check_printable(transient::records::parse_steps(text, "steps.csv", true).problems);
    check_printable(transient::records::parse_steps(text, "steps.part", false).problems);
    check_printable(transient::records::parse_manifest(text, "manifest.json").problems);
    check_printable(transient::records::parse_summary(text, "summary.json").problems);
  });
  return 0;
}
