// The .npy header as numpy.save writes it (format versions 1 and 2), and what is refused: each
// refusal one InputError naming the file.
#include "transient/train/npy_header.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "transient/core/error.h"

namespace transient::train {
namespace {

// A .npy file's first bytes as numpy writes them: the preamble, the dictionary padded with spaces
// and a newline to a multiple of 64 bytes, then `data_bytes` of data.
std::string npy_file(const std::string& dictionary, std::size_t data_bytes, int major = 1) {
  const std::size_t prefix = major == 1 ? 10 : 12;
  std::string header = dictionary;
  while ((prefix + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string file = "\x93NUMPY";
  file += static_cast<char>(major);
  file += '\0';
  std::size_t length = header.size();
  for (std::size_t i = 0; i < prefix - 8; ++i) {
    file += static_cast<char>(length & 0xff);
    length >>= 8;
  }
  return file + header + std::string(data_bytes, '\0');
}

NpyHeader parse(const std::string& file) {
  return parse_npy_header(file, static_cast<std::int64_t>(file.size()), "images.npy");
}

// The refusal's text; "" when the header is accepted.
std::string refusal(const std::string& file) {
  try {
    parse(file);
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("images.npy: ", 0), 0u) << e.what();
    return e.what();
  }
  return "";
}

TEST(NpyHeader, ReadsWhatNumpySaveWrites) {
  const auto images = parse(npy_file(
      "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 28, 28), }", 3 * 28 * 28 * 4));
  EXPECT_EQ(images.kind, 'f');
  EXPECT_EQ(images.item_bytes, 4);
  EXPECT_EQ(images.shape, (std::vector<std::int64_t>{3, 28, 28}));
  EXPECT_EQ(images.elements, 3 * 28 * 28);
  EXPECT_EQ(images.data_offset, 128);
  const auto labels =
      parse(npy_file("{'descr': '|u1', 'fortran_order': False, 'shape': (5,), }", 5));
  EXPECT_EQ(labels.kind, 'u');
  EXPECT_EQ(labels.item_bytes, 1);
  EXPECT_EQ(labels.shape, (std::vector<std::int64_t>{5}));
  // Version 2 (a header longer than 64 KiB, a 4-byte length), double quotes, no trailing comma.
  const auto two =
      parse(npy_file("{\"descr\": \"<i8\", \"shape\": (2, 1), \"fortran_order\": False}", 16, 2));
  EXPECT_EQ(two.kind, 'i');
  EXPECT_EQ(two.item_bytes, 8);
  EXPECT_EQ(two.data_offset, 128);
  // A scalar, and an empty array whose other dimension is large.
  EXPECT_EQ(parse(npy_file("{'descr': '<f8', 'fortran_order': False, 'shape': (), }", 8)).elements,
            1);
  EXPECT_EQ(
      parse(npy_file("{'descr': '<f8', 'fortran_order': False, 'shape': (0, 99999999999), }", 0))
          .elements,
      0);
}

TEST(NpyHeader, AShapeThatIsNoTupleOfWholeNumbersIsRefusedNamingTheFile) {
  // Before: std::stoll's exception escaped, "error: internal failure: stoll".
  for (const char* shape : {"(abc, 28, 28)", "(-1, 28)", "(3.5,)", "(3 4)", "[3, 4]", "(3,",
                            "(1234567890123456789012,)"}) {
    const std::string text = refusal(npy_file(
        std::string("{'descr': '<f4', 'fortran_order': False, 'shape': ") + shape + ", }", 16));
    EXPECT_NE(text.find("shape"), std::string::npos) << shape << ": " << text;
  }
}

TEST(NpyHeader, AShapeWhoseSizeOverflowsIsRefusedNotWrappedAround) {
  // 2^32 x 2^32 x 4 elements of 4 bytes is 2^70 bytes: the product wrapped to 0 before, matched
  // an empty file and reached libtorch, which crashed.
  const std::string text = refusal(npy_file(
      "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4), }", 0));
  EXPECT_NE(text.find("needs more"), std::string::npos) << text;
  EXPECT_NE(refusal(npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 16))
                .find("holds 16 bytes of data; its header says 3 elements of 4 bytes"),
            std::string::npos);
}

TEST(NpyHeader, ElementTypesOrderAndKeysOtherThanNumpysAreRefused) {
  const auto with = [](const std::string& descr, const std::string& order = "False") {
    return refusal(
        npy_file("{'descr': " + descr + ", 'fortran_order': " + order + ", 'shape': (2,), }", 8));
  };
  EXPECT_NE(with("'>f4'").find("little-endian"), std::string::npos);
  EXPECT_NE(with("'<f'").find("accepted: a plain number type"), std::string::npos);
  EXPECT_NE(with("'<f99'").find("1 to 16 bytes"), std::string::npos);
  EXPECT_NE(with("'<U10'").find("accepted: a plain number type"), std::string::npos);  // text
  EXPECT_NE(with("[('x', '<f4')]").find("quoted element type"), std::string::npos);
  EXPECT_NE(with("'<f4'", "True").find("Fortran order"), std::string::npos);
  EXPECT_NE(with("'<f4'", "maybe").find("accepted: True, False"), std::string::npos);
  EXPECT_NE(refusal(npy_file("{'descr': '<f4', 'shape': (2,), }", 8)).find("no 'fortran_order'"),
            std::string::npos);
  EXPECT_NE(refusal(npy_file("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, "
                             "'shape': (2,), }",
                             8))
                .find("'descr' twice"),
            std::string::npos);
  EXPECT_NE(refusal(npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", 8))
                .find("accepted: 'descr', 'fortran_order' and 'shape'"),
            std::string::npos);
}

TEST(NpyHeader, DamagedPreamblesAreRefused) {
  const std::string good = npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 8);
  EXPECT_NE(refusal("PK\x03\x04 a zip file").find("no \\x93NUMPY magic"), std::string::npos);
  std::string version = good;
  version[6] = 9;
  EXPECT_NE(refusal(version).find("format version 9.0; accepted: 1, 2 and 3"), std::string::npos);
  EXPECT_NE(refusal(good.substr(0, 40)).find("cut short"), std::string::npos);
  std::string zero = good;
  zero[8] = zero[9] = 0;
  EXPECT_NE(refusal(zero).find("damaged"), std::string::npos);
  // The dictionary's last byte cut: no closing brace.
  std::string open = npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)", 8);
  EXPECT_NE(refusal(open).find("'}'"), std::string::npos) << refusal(open);
  EXPECT_NE(refusal(npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} and more", 8))
                .find("text after its dictionary"),
            std::string::npos);
}

}  // namespace
}  // namespace transient::train
