// NumPy .npy files that tests write themselves (format 1.0: the magic, a little-endian header
// length, the header dict padded so that the data starts 64-byte aligned, then the raw data).
#pragma once

#include <cstdint>
#include <fstream>
#include <string>
#include <string_view>

namespace transient::train::testing {

// Writes `data`, the raw values of `descr` ('<f4', '|u1', '<i8') and `shape` ("(100, 28, 28)"),
// as the .npy file at `path`.
inline void write_npy_file(const std::string& path, const std::string& descr,
                           const std::string& shape, std::string_view data) {
  std::string header =
      "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  out.write("\x93NUMPY\x01\x00", 8);
  out.put(static_cast<char>(header.size() & 0xff));
  out.put(static_cast<char>(header.size() >> 8));
  out << header;
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
}

}  // namespace transient::train::testing
