// Reads a PNG's signature and size from its bytes, for tests that check a written picture.
#pragma once

#include <cstdint>
#include <string>

namespace transient::testing {

struct PngHeader {
  bool valid = false;  // the 8-byte PNG signature is there and the IHDR size fits
  std::uint32_t width_px = 0;
  std::uint32_t height_px = 0;
};

inline PngHeader read_png_header(const std::string& png) {
  PngHeader header;
  if (png.size() < 24 || png.compare(0, 8, std::string("\x89PNG\r\n\x1a\n", 8)) != 0) return header;
  // IHDR follows the signature: big-endian width and height at bytes 16..23.
  const auto be32 = [&](std::size_t at) {
    std::uint32_t v = 0;
    for (std::size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(png[at + i]);
    return v;
  };
  header.valid = true;
  header.width_px = be32(16);
  header.height_px = be32(20);
  return header;
}

}  // namespace transient::testing
