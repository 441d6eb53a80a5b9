#include "transient/train/fashion_mnist.h"

#include <libdeflate.h>
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <new>

#include "transient/core/atomic_file.h"
#include "transient/core/error.h"

namespace transient::train {
namespace {

constexpr std::uint32_t kImagesMagic = 0x00000803;  // unsigned byte, 3 dimensions
constexpr std::uint32_t kLabelsMagic = 0x00000801;  // unsigned byte, 1 dimension

std::string file_in(const std::string& dir, const std::string& name) {
  return (std::filesystem::path(dir) / name).string();
}

// A file's bytes decompressed, in memory left uninitialised until written (no pass of zeros over
// the training images' 47 MB); the images' tensor takes the buffer over.
struct Unpacked {
  std::unique_ptr<std::uint8_t[]> data;
  std::size_t size = 0;

  std::uint32_t big_endian_u32(std::size_t at) const {
    return (std::uint32_t{data[at]} << 24) | (std::uint32_t{data[at + 1]} << 16) |
           (std::uint32_t{data[at + 2]} << 8) | std::uint32_t{data[at + 3]};
  }
};

// A gzip member's trailer's last field, ISIZE: the length it decompresses to modulo 2^32 (4
// bytes at `at`, little-endian).
std::uint32_t isize(const std::uint8_t* at) {
  return std::uint32_t{at[0]} | std::uint32_t{at[1]} << 8 | std::uint32_t{at[2]} << 16 |
         std::uint32_t{at[3]} << 24;
}

// The whole file decompressed by libdeflate (about 3x zlib's speed: every worker that starts,
// a replacement included, reads the training set), each gzip member in turn as gunzip reads
// them. The output is sized from the last member's trailer (its length modulo 2^32: exact for a
// file of one member under 4 GiB, no more than deflate's 1032:1 can make) and doubled while a
// member does not fit.
Unpacked gunzip_file(const std::string& path) {
  const std::string file = read_file(path);
  const auto* packed = reinterpret_cast<const std::uint8_t*>(file.data());
  if (file.size() < 18) throw InputError(path, 0, "not a readable gzip file");
  const std::size_t trailer_size = isize(packed + file.size() - 4);
  std::size_t capacity = std::clamp<std::size_t>(trailer_size, 1, file.size() * 1032);
  std::unique_ptr<libdeflate_decompressor, void (*)(libdeflate_decompressor*)> decompressor(
      libdeflate_alloc_decompressor(), libdeflate_free_decompressor);
  if (!decompressor) throw std::bad_alloc();
  Unpacked out{std::unique_ptr<std::uint8_t[]>(new std::uint8_t[capacity]), 0};
  std::size_t read = 0;
  while (read < file.size()) {
    std::size_t member_in = 0;
    std::size_t member_out = 0;
    const auto result = libdeflate_gzip_decompress_ex(decompressor.get(), packed + read,
                                                      file.size() - read, out.data.get() + out.size,
                                                      capacity - out.size, &member_in, &member_out);
    if (result == LIBDEFLATE_INSUFFICIENT_SPACE) {
      capacity *= 2;
      std::unique_ptr<std::uint8_t[]> larger(new std::uint8_t[capacity]);
      std::copy_n(out.data.get(), out.size, larger.get());
      out.data = std::move(larger);
      continue;
    }
    if (result != LIBDEFLATE_SUCCESS) throw InputError(path, 0, "not a readable gzip file");
    read += member_in;
    out.size += member_out;
  }
  return out;
}

// The length modulo 2^32 that the gzip file's last member says it decompresses to (its trailer's
// last 4 bytes, little-endian); 0 for a file too short to have one.
std::uint32_t gzip_trailer_size(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in || in.tellg() < 18) return 0;
  in.seekg(-4, std::ios::end);
  std::uint8_t tail[4] = {};
  in.read(reinterpret_cast<char*>(tail), 4);
  return isize(tail);
}

// The first `size` bytes of the file decompressed (fewer if it holds fewer), by zlib's stream
// reader, which stops there: the first 2000 of the 60,000 training images are 3% of the work.
// What lies beyond is not read, so neither its integrity nor the gzip trailer's checksum is
// checked; a file that is not gzip at all is refused.
Unpacked gunzip_prefix(const std::string& path, std::size_t size) {
  std::unique_ptr<gzFile_s, int (*)(gzFile)> file(gzopen(path.c_str(), "rb"), gzclose);
  if (!file) throw InputError(path, 0, "cannot be opened");
  gzbuffer(file.get(), 1 << 17);
  Unpacked out{std::unique_ptr<std::uint8_t[]>(new std::uint8_t[std::max<std::size_t>(size, 1)]),
               0};
  while (out.size < size) {
    const auto chunk = static_cast<unsigned>(std::min<std::size_t>(size - out.size, 1u << 30));
    const int read = gzread(file.get(), out.data.get() + out.size, chunk);
    if (read < 0 || gzdirect(file.get())) throw InputError(path, 0, "not a readable gzip file");
    if (read == 0) break;  // the file ends sooner
    out.size += static_cast<std::size_t>(read);
  }
  return out;
}

// The number of images the header of an IDX image file (`bytes` of `path`, decompressed, from its
// start) says it holds; throws InputError naming the file unless it is one of at least one
// 28x28 image.
std::int64_t images_in_header(const Unpacked& bytes, const std::string& path) {
  if (bytes.size < 16 || bytes.big_endian_u32(0) != kImagesMagic) {
    throw InputError(path, 0, "not an IDX image file (expected magic number 0x00000803)");
  }
  const std::int64_t rows = bytes.big_endian_u32(8);
  const std::int64_t cols = bytes.big_endian_u32(12);
  if (rows != 28 || cols != 28) {
    throw InputError(
        path, 0,
        "images are " + std::to_string(rows) + "x" + std::to_string(cols) + "; accepted: 28x28");
  }
  const std::int64_t count = bytes.big_endian_u32(4);
  if (count == 0) throw InputError(path, 0, "holds no images; accepted: at least one");
  return count;
}

// The images of an IDX file, all of them or at most the first `limit` (> 0); `count` gets the
// number its header says it holds.
torch::Tensor read_images(const std::string& path, std::int64_t limit, std::int64_t& count) {
  constexpr std::int64_t kPixels = 28 * 28;
  auto bytes = limit > 0 ? gunzip_prefix(path, static_cast<std::size_t>(16 + limit * kPixels))
                         : gunzip_file(path);
  count = images_in_header(bytes, path);
  const std::int64_t rows = 28;
  const std::int64_t cols = 28;
  const std::int64_t images = limit > 0 ? std::min(limit, count) : count;
  if (bytes.size != static_cast<std::size_t>(16 + images * kPixels)) {
    throw InputError(path, 0,
                     "holds " + std::to_string(bytes.size - 16) + " bytes of pixels for " +
                         std::to_string(images) + " images of 28x28");
  }
  std::uint8_t* buffer = bytes.data.get();
  auto pixels = torch::from_blob(
      buffer + 16, {images, 1, rows, cols}, [buffer](void*) { delete[] buffer; }, torch::kUInt8);
  bytes.data.release();  // the tensor owns it now
  return pixels;
}

torch::Tensor read_labels(const std::string& path) {
  const auto bytes = gunzip_file(path);
  if (bytes.size < 8 || bytes.big_endian_u32(0) != kLabelsMagic) {
    throw InputError(path, 0, "not an IDX label file (expected magic number 0x00000801)");
  }
  const std::int64_t count = bytes.big_endian_u32(4);
  if (count == 0) throw InputError(path, 0, "holds no labels; accepted: at least one");
  if (bytes.size != static_cast<std::size_t>(8 + count)) {
    throw InputError(path, 0,
                     "holds " + std::to_string(bytes.size - 8) + " labels, its header says " +
                         std::to_string(count));
  }
  auto labels = torch::from_blob(bytes.data.get() + 8, {count}, torch::kUInt8).to(torch::kInt64);
  if (labels.max().item<std::int64_t>() > 9) {
    throw InputError(path, 0, "holds a label above 9; accepted: 0..9");
  }
  return labels;
}

// Throws InputError naming `labels_path` unless it holds a label for each of `images` images.
void require_a_label_each(const std::string& labels_path, std::int64_t labels, std::int64_t images,
                          const std::string& images_path) {
  if (images != labels) {
    throw InputError(labels_path, 0,
                     "holds " + std::to_string(labels) + " labels for " + std::to_string(images) +
                         " images in " + images_path);
  }
}

// The images and labels of `prefix` (train, t10k): all of them, or at most the first `limit`
// (> 0).
LabelledImages read_pair(const std::string& dir, const std::string& prefix, std::int64_t limit) {
  const std::string images_path = file_in(dir, prefix + "-images-idx3-ubyte.gz");
  const std::string labels_path = file_in(dir, prefix + "-labels-idx1-ubyte.gz");
  std::int64_t images = 0;  // as the images' header says
  LabelledImages set{read_images(images_path, limit, images), read_labels(labels_path)};
  require_a_label_each(labels_path, set.labels.size(0), images, images_path);
  if (limit > 0) set.labels = set.labels.narrow(0, 0, set.images.size(0));
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

std::pair<std::int64_t, std::int64_t> FashionMnist::count_samples(const std::string& dir) {
  require_files(dir);
  // Before any worker starts: the labels (tens of kilobytes) whole, the images' headers (their
  // pixels, tens of megabytes, are the workers' to read and check), for both sets, and the
  // images' length as the gzip trailer says it: a file cut short passed, and every worker failed
  // on it. Where the trailer disagrees (a cut, or a file of several gzip members), the file is
  // read whole.
  std::pair<std::int64_t, std::int64_t> counts;
  for (const std::string prefix : {"train", "t10k"}) {
    const std::string images_path = file_in(dir, prefix + "-images-idx3-ubyte.gz");
    const std::string labels_path = file_in(dir, prefix + "-labels-idx1-ubyte.gz");
    const std::int64_t images = images_in_header(gunzip_prefix(images_path, 16), images_path);
    const auto expected = static_cast<std::size_t>(16 + images * 28 * 28);
    if (gzip_trailer_size(images_path) != static_cast<std::uint32_t>(expected)) {
      const auto whole = gunzip_file(images_path);
      if (whole.size != expected) {
        throw InputError(images_path, 0,
                         "holds " + std::to_string(whole.size - 16) + " bytes of pixels for " +
                             std::to_string(images) + " images of 28x28");
      }
    }
    require_a_label_each(labels_path, read_labels(labels_path).size(0), images, images_path);
    (prefix == "train" ? counts.first : counts.second) = images;
  }
  return counts;
}

FashionMnist FashionMnist::load(const std::string& dir, std::int64_t train_limit,
                                std::int64_t test_limit) {
  require_files(dir);
  return FashionMnist{read_pair(dir, "train", train_limit), read_pair(dir, "t10k", test_limit)};
}

}  // namespace transient::train
