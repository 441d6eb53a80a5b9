// The header of a NumPy .npy file (format versions 1 to 3, as numpy.save writes them): the
// element type, the shape and where the data starts. A user's data set (`--data` with images.npy
// and labels.npy) is read through it, so anything but a little-endian, C-order array whose data
// is the rest of the file is refused with one line naming the file and what is accepted.
// Torch-free: the data set's tensors are made over the file in datasets.cc.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace transient::train {

struct NpyHeader {
  char kind = 0;       // 'u' unsigned, 'i' signed, 'f' floating point, 'b' boolean, 'c' complex
  int item_bytes = 0;  // bytes per element, 1 to 16
  std::vector<std::int64_t> shape;
  std::int64_t elements = 1;     // the product of the shape
  std::int64_t data_offset = 0;  // bytes before the data
};

// The most bytes a header may take (numpy writes a few hundred): a larger length field is damage.
inline constexpr std::int64_t kMaxNpyHeaderBytes = 1 << 20;

// Parses the header at the start of a file of `file_bytes` bytes: `start` is the file's first
// bytes (the whole header at least, else "cut short"). Throws InputError naming `path`.
NpyHeader parse_npy_header(std::string_view start, std::int64_t file_bytes,
                           const std::string& path);

// The header of the file at `path`; a missing file is an InputError saying what the data
// directory must hold (`layout`).
NpyHeader read_npy_header(const std::string& path, const std::string& layout);

}  // namespace transient::train
