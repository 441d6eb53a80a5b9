#include "transient/train/fashion_mnist.h"

#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <vector>

#include "transient/core/error.h"

namespace transient::train {
namespace {

constexpr std::uint32_t kImagesMagic = 0x00000803;  // unsigned byte, 3 dimensions
constexpr std::uint32_t kLabelsMagic = 0x00000801;  // unsigned byte, 1 dimension

std::string file_in(const std::string& dir, const std::string& name) {
  return (std::filesystem::path(dir) / name).string();
}

std::vector<std::uint8_t> gunzip_file(const std::string& path) {
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) {
    throw InputError(path, 0,
                     "cannot open the data set file (install Debian's dataset-fashion-mnist, or "
                     "pass --data-dir DIR holding the four *-ubyte.gz files)");
  }
  std::unique_ptr<gzFile_s, int (*)(gzFile)> closer(file, gzclose);
  std::vector<std::uint8_t> bytes;
  std::vector<std::uint8_t> chunk(1 << 20);
  for (;;) {
    const int n = gzread(file, chunk.data(), static_cast<unsigned>(chunk.size()));
    if (n < 0) throw InputError(path, 0, "not a readable gzip file");
    if (n == 0) break;
    bytes.insert(bytes.end(), chunk.begin(), chunk.begin() + n);
  }
  return bytes;
}

std::uint32_t big_endian_u32(const std::vector<std::uint8_t>& bytes, std::size_t at) {
  return (std::uint32_t{bytes[at]} << 24) | (std::uint32_t{bytes[at + 1]} << 16) |
         (std::uint32_t{bytes[at + 2]} << 8) | std::uint32_t{bytes[at + 3]};
}

torch::Tensor read_images(const std::string& path) {
  const auto bytes = gunzip_file(path);
  if (bytes.size() < 16 || big_endian_u32(bytes, 0) != kImagesMagic) {
    throw InputError(path, 0, "not an IDX image file (expected magic number 0x00000803)");
  }
  const std::int64_t count = big_endian_u32(bytes, 4);
  const std::int64_t rows = big_endian_u32(bytes, 8);
  const std::int64_t cols = big_endian_u32(bytes, 12);
  if (rows != 28 || cols != 28) {
    throw InputError(
        path, 0,
        "images are " + std::to_string(rows) + "x" + std::to_string(cols) + "; accepted: 28x28");
  }
  if (bytes.size() != static_cast<std::size_t>(16 + count * rows * cols)) {
    throw InputError(path, 0,
                     "holds " + std::to_string(bytes.size() - 16) + " bytes of pixels for " +
                         std::to_string(count) + " images of 28x28");
  }
  auto pixels = torch::from_blob(const_cast<std::uint8_t*>(bytes.data()) + 16,
                                 {count, 1, rows, cols}, torch::kUInt8);
  return pixels.clone();
}

torch::Tensor read_labels(const std::string& path) {
  const auto bytes = gunzip_file(path);
  if (bytes.size() < 8 || big_endian_u32(bytes, 0) != kLabelsMagic) {
    throw InputError(path, 0, "not an IDX label file (expected magic number 0x00000801)");
  }
  const std::int64_t count = big_endian_u32(bytes, 4);
  if (bytes.size() != static_cast<std::size_t>(8 + count)) {
    throw InputError(path, 0,
                     "holds " + std::to_string(bytes.size() - 8) + " labels, its header says " +
                         std::to_string(count));
  }
  auto labels =
      torch::from_blob(const_cast<std::uint8_t*>(bytes.data()) + 8, {count}, torch::kUInt8)
          .to(torch::kInt64);
  if (labels.max().item<std::int64_t>() > 9) {
    throw InputError(path, 0, "holds a label above 9; accepted: 0..9");
  }
  return labels;
}

LabelledImages read_pair(const std::string& dir, const std::string& prefix) {
  const std::string images_path = file_in(dir, prefix + "-images-idx3-ubyte.gz");
  const std::string labels_path = file_in(dir, prefix + "-labels-idx1-ubyte.gz");
  LabelledImages set{read_images(images_path), read_labels(labels_path)};
  if (set.images.size(0) != set.labels.size(0)) {
    throw InputError(labels_path, 0,
                     "holds " + std::to_string(set.labels.size(0)) + " labels for " +
                         std::to_string(set.images.size(0)) + " images in " + images_path);
  }
  return set;
}

}  // namespace

void FashionMnist::require_files(const std::string& dir) {
  for (const char* name : {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                           "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"}) {
    const std::string path = file_in(dir, name);
    if (!std::filesystem::is_regular_file(path)) {
      throw InputError(path, 0,
                       "the Fashion-MNIST file is missing (install Debian's "
                       "dataset-fashion-mnist, or pass --data-dir DIR holding the four "
                       "*-ubyte.gz files)");
    }
  }
}

std::int64_t FashionMnist::count_training_samples(const std::string& dir) {
  require_files(dir);
  const std::string path = file_in(dir, "train-labels-idx1-ubyte.gz");
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) throw InputError(path, 0, "cannot open the data set file");
  std::unique_ptr<gzFile_s, int (*)(gzFile)> closer(file, gzclose);
  std::vector<std::uint8_t> header(8);
  if (gzread(file, header.data(), 8) != 8 || big_endian_u32(header, 0) != kLabelsMagic) {
    throw InputError(path, 0, "not an IDX label file (expected magic number 0x00000801)");
  }
  return big_endian_u32(header, 4);
}

FashionMnist FashionMnist::load(const std::string& dir) {
  require_files(dir);
  return FashionMnist{read_pair(dir, "train"), read_pair(dir, "t10k")};
}

}  // namespace transient::train
