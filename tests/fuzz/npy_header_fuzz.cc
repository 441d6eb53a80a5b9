// The header of a user's .npy file (train/npy_header.h), as `transient train --data DIR` reads
// images.npy and labels.npy: the input is the file, its size the file's. Anything but a header
// numpy writes is refused with InputError; anything else escaping (a number that overflows, a
// read past the header) is a finding.
#include <string>

#include "fuzz_input.h"
#include "transient/train/npy_header.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string file = transient::fuzz::as_text(data, size);
  transient::fuzz::accept_or_input_error([&] {
    const auto header = transient::train::parse_npy_header(
        file, static_cast<std::int64_t>(file.size()), "images.npy");
    // What it accepts describes the file: its data is the rest of it, exactly.
    if (header.data_offset + header.elements * header.item_bytes !=
        static_cast<std::int64_t>(file.size())) {
      transient::fuzz::finding("an accepted header", "its data is not the rest of the file");
    }
  });
  return 0;
}
