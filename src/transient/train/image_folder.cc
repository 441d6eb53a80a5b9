#include "transient/train/image_folder.h"

#include <omp.h>
#include <png.h>
#include <sys/stat.h>
#include <turbojpeg.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <string_view>

#include <c10/util/ParallelGuard.h>

#include "transient/core/error.h"
#include "transient/core/text.h"

namespace transient::train {
namespace {

namespace fs = std::filesystem;
namespace F = torch::nn::functional;

// The images of class folder `dir` in torchvision's ImageFolder order, as paths relative to it:
// those in every folder below it too (os.walk, links followed), the folders in the sorted order of
// their paths and each one's images sorted by name. A folder reached again (through a link) is
// walked once, where os.walk goes round a loop until the path grows too long.
std::vector<std::string> images_under(const fs::path& dir) {
  std::vector<std::string> images;
  std::set<std::pair<dev_t, ino_t>> walked;
  std::set<std::string> pending{""};  // relative paths, taken in sorted order
  while (!pending.empty()) {
    const std::string folder = *pending.begin();
    pending.erase(pending.begin());
    const fs::path path = folder.empty() ? dir : dir / folder;
    struct stat info {};
    if (::stat(path.c_str(), &info) != 0 || !walked.insert({info.st_dev, info.st_ino}).second) {
      continue;
    }
    std::vector<std::string> names;
    std::error_code error;
    for (const auto& entry : fs::directory_iterator(path, error)) {
      const std::string name = entry.path().filename().string();
      const std::string relative = folder.empty() ? name : folder + "/" + name;
      std::error_code unreadable;  // a link that loops is neither
      if (entry.is_directory(unreadable)) {
        pending.insert(relative);
      } else if (entry.is_regular_file(unreadable) && is_image_file_name(name)) {
        names.push_back(relative);
      }
    }
    std::sort(names.begin(), names.end());
    images.insert(images.end(), names.begin(), names.end());
  }
  return images;
}

// Whether an image of `width` x `height` may be decoded; else `why` says it is too large. A few
// kilobytes can declare a terapixel (a decompression bomb): the size is checked before its
// memory is taken.
bool decodable_size(std::int64_t width, std::int64_t height, const char* kind, std::string* why) {
  if (width * height <= kMaxImagePixels) return true;
  *why = std::string(kind) + " image of " + std::to_string(width) + "x" + std::to_string(height) +
         " pixels; accepted: at most " + std::to_string(kMaxImagePixels) +
         " pixels (Pillow's decompression-bomb limit)";
  return false;
}

// Whether TurboJPEG's last call on `handle` (which returned -1) only warned about something PIL
// decodes anyway: PIL ignores libjpeg's warnings (extraneous bytes before a marker, a corrupt
// data segment), except where the data ends before the image does, which it refuses as a
// truncated file. Such images were skipped here, where PIL's loader trains on them. The data has
// ended where no end-of-image marker follows the last scan's (libjpeg's warning of it may be
// followed by others, and TurboJPEG keeps only the last).
bool decoded_as_pil_would(tjhandle handle, const std::vector<unsigned char>& bytes) {
  if (tjGetErrorCode(handle) != TJERR_WARNING) return false;
  const std::string_view data(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  const auto scan = data.rfind("\xff\xda");
  return scan != std::string_view::npos && data.find("\xff\xd9", scan) != std::string_view::npos;
}

// A CMYK (or YCCK) JPEG as PIL's convert("RGB") gives it: PIL takes the samples as Adobe's
// inverted ones ("CMYK;I"), and Pillow's cmyk2rgb makes each of R, G, B (255 - K) - C (255 - K) /
// 255, rounded as its MULDIV255 rounds, where C (M, Y) and K are those inverted samples. So
// (255 - K) is K's sample as stored, and C is 255 - C's.
std::optional<torch::Tensor> cmyk_jpeg_as_rgb(tjhandle handle,
                                              const std::vector<unsigned char>& bytes, int width,
                                              int height, std::string* why) {
  const auto pixels = static_cast<std::size_t>(width) * static_cast<std::size_t>(height);
  std::vector<unsigned char> samples(pixels * 4);
  if (tjDecompress2(handle, bytes.data(), static_cast<unsigned long>(bytes.size()), samples.data(),
                    width, 0, height, TJPF_CMYK, 0) != 0 &&
      !decoded_as_pil_would(handle, bytes)) {
    *why = std::string("CMYK JPEG image does not decode (") + tjGetErrorStr2(handle) + ")";
    return std::nullopt;
  }
  auto image = torch::empty({height, width, 3}, torch::kUInt8);
  auto* rgb = image.data_ptr<std::uint8_t>();
  for (std::size_t i = 0; i < pixels; ++i) {
    const int not_k = samples[4 * i + 3];
    for (std::size_t c = 0; c < 3; ++c) {
      const int ink = 255 - samples[4 * i + c];
      const int product = ink * not_k + 128;
      rgb[3 * i + c] = static_cast<std::uint8_t>(not_k - (((product >> 8) + product) >> 8));
    }
  }
  return image;
}

std::optional<torch::Tensor> decode_jpeg(const std::vector<unsigned char>& bytes,
                                         std::string* why) {
  std::unique_ptr<void, int (*)(tjhandle)> handle(tjInitDecompress(), tjDestroy);
  int width = 0;
  int height = 0;
  int subsampling = 0;
  int colorspace = 0;
  auto* data = const_cast<unsigned char*>(bytes.data());
  const auto size = static_cast<unsigned long>(bytes.size());
  if (!handle || (tjDecompressHeader3(handle.get(), data, size, &width, &height, &subsampling,
                                      &colorspace) != 0 &&
                  !decoded_as_pil_would(handle.get(), bytes))) {
    *why = std::string("not a JPEG image that decodes (") + tjGetErrorStr2(handle.get()) + ")";
    return std::nullopt;
  }
  if (width <= 0 || height <= 0) {
    *why = "not a JPEG image that decodes (no image size in its header)";
    return std::nullopt;
  }
  if (!decodable_size(width, height, "a JPEG", why)) return std::nullopt;
  if (colorspace == TJCS_CMYK || colorspace == TJCS_YCCK)
    return cmyk_jpeg_as_rgb(handle.get(), bytes, width, height, why);
  auto image = torch::empty({height, width, 3}, torch::kUInt8);
  if (tjDecompress2(handle.get(), data, size, image.data_ptr<std::uint8_t>(), width, 0, height,
                    TJPF_RGB, 0) != 0 &&
      !decoded_as_pil_would(handle.get(), bytes)) {
    *why = std::string("JPEG image does not decode (") + tjGetErrorStr2(handle.get()) + ")";
    return std::nullopt;
  }
  return image;
}

// libpng's reading from memory, its errors as text: it reports them by longjmp, so nothing with
// a destructor lives in read_png_rows() between its setjmp and the reads.
struct PngSource {
  const unsigned char* data;
  std::size_t size;
  std::size_t at = 0;
  char error[200] = "";
};

void png_read_from(png_structp png, png_bytep out, png_size_t count) {
  auto* source = static_cast<PngSource*>(png_get_io_ptr(png));
  if (source->size - source->at < count) png_error(png, "the file ends inside the image");
  std::memcpy(out, source->data + source->at, count);
  source->at += count;
}

void png_fail(png_structp png, png_const_charp message) {
  auto* source = static_cast<PngSource*>(png_get_error_ptr(png));
  std::snprintf(source->error, sizeof(source->error), "%s", message);
  png_longjmp(png, 1);
}

void png_ignore_warning(png_structp, png_const_charp) {}

// Reads the image of `source` into rows of 8-bit RGB, as PIL's Image.convert("RGB") gives them
// (torchvision's default loader): 16-bit samples by their high byte, a palette and grey as RGB,
// alpha dropped, and no gamma correction (libpng's simplified API converts 16-bit samples, taken
// as linear light, and a gAMA chunk's gamma to sRGB: 0.618 where PIL gives 0.390). `allocate`
// is called with the size once the header is read and returns the rows' memory (nullptr: stop,
// with `why` set). Returns false with `source.error` set if the PNG does not decode.
template <typename Allocate>
bool read_png_rows(PngSource& source, Allocate allocate) {
  png_structp png =
      png_create_read_struct(PNG_LIBPNG_VER_STRING, &source, png_fail, png_ignore_warning);
  if (png == nullptr) {
    std::snprintf(source.error, sizeof(source.error), "out of memory");
    return false;
  }
  png_infop info = png_create_info_struct(png);
  std::vector<png_bytep>* rows = new std::vector<png_bytep>();  // freed on either path below
  if (info == nullptr || setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, info ? &info : nullptr, nullptr);
    delete rows;
    if (source.error[0] == '\0') std::snprintf(source.error, sizeof(source.error), "out of memory");
    return false;
  }
  png_set_read_fn(png, &source, png_read_from);
  png_read_info(png, info);
  const png_uint_32 width = png_get_image_width(png, info);
  const png_uint_32 height = png_get_image_height(png, info);
  const int depth = png_get_bit_depth(png, info);
  const int colour = png_get_color_type(png, info);
  if (depth == 16) png_set_strip_16(png);
  if (colour == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (colour == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  // A palette's transparency (tRNS) comes out as alpha: dropped too.
  if ((colour & PNG_COLOR_MASK_ALPHA) != 0 ||
      (colour == PNG_COLOR_TYPE_PALETTE && png_get_valid(png, info, PNG_INFO_tRNS) != 0)) {
    png_set_strip_alpha(png);
  }
  if (colour == PNG_COLOR_TYPE_GRAY || colour == PNG_COLOR_TYPE_GRAY_ALPHA) {
    png_set_gray_to_rgb(png);
  }
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  if (png_get_rowbytes(png, info) != static_cast<png_size_t>(width) * 3) {
    png_error(png, "its pixels do not come out as 8-bit RGB");
  }
  unsigned char* pixels = allocate(width, height);
  if (pixels == nullptr) png_error(png, "");
  rows->resize(height);
  for (png_uint_32 y = 0; y < height; ++y)
    (*rows)[y] = pixels + static_cast<std::size_t>(y) * width * 3;
  png_read_image(png, rows->data());
  png_read_end(png, nullptr);
  png_destroy_read_struct(&png, &info, nullptr);
  delete rows;
  return true;
}

std::optional<torch::Tensor> decode_png(const std::vector<unsigned char>& bytes, std::string* why) {
  PngSource source{bytes.data(), bytes.size()};
  torch::Tensor image;
  std::string too_large;
  const bool read = read_png_rows(source, [&](png_uint_32 width, png_uint_32 height) {
    if (width == 0 || height == 0) return static_cast<unsigned char*>(nullptr);
    if (!decodable_size(width, height, "a PNG", &too_large)) {
      return static_cast<unsigned char*>(nullptr);
    }
    image = torch::empty({static_cast<std::int64_t>(height), static_cast<std::int64_t>(width), 3},
                         torch::kUInt8);
    return image.data_ptr<std::uint8_t>();
  });
  if (!too_large.empty()) {
    *why = too_large;
    return std::nullopt;
  }
  if (!read) {
    *why = std::string(image.defined() ? "PNG image does not decode ("
                                       : "not a PNG image that decodes (") +
           (source.error[0] != '\0' ? source.error : "no image size in its header") + ")";
    return std::nullopt;
  }
  return image;
}

// The randomness of one training sample: a generator seeded from (seed, epoch, index) alone.
std::mt19937_64 sample_generator(std::uint64_t seed, std::int64_t epoch, std::int64_t index) {
  auto mix = [](std::uint64_t x) {  // splitmix64's finaliser
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
  };
  return std::mt19937_64(
      mix(mix(mix(seed) ^ static_cast<std::uint64_t>(epoch)) ^ static_cast<std::uint64_t>(index)));
}

// [3, H, W] bytes to [3, height, width], bilinear with antialiasing (torchvision's Resize). On
// bytes laid out channels-last (as decoded) libtorch takes its vectorised path for images: many
// times faster than on floats.
torch::Tensor resize(const torch::Tensor& chw, std::int64_t height, std::int64_t width) {
  if (chw.size(1) == height && chw.size(2) == width) return chw;
  const auto image = chw.unsqueeze(0).contiguous(torch::MemoryFormat::ChannelsLast);
  return F::interpolate(image, F::InterpolateFuncOptions()
                                   .size(std::vector<std::int64_t>{height, width})
                                   .mode(torch::kBilinear)
                                   .align_corners(false)
                                   .antialias(true))
      .squeeze(0);
}

// [3, H, W] with its shorter side scaled to `size` and the centre cropped to size x size.
torch::Tensor square(const torch::Tensor& chw, std::int64_t size) {
  const std::int64_t h = chw.size(1);
  const std::int64_t w = chw.size(2);
  if (h == size && w == size) return chw;
  const std::int64_t new_h = h <= w ? size : static_cast<std::int64_t>(size * h / w);
  const std::int64_t new_w = h <= w ? static_cast<std::int64_t>(size * w / h) : size;
  if (new_h * new_w > kMaxImagePixels) {
    // A sliver (1 x 1,000,000 pixels) scaled whole would take gigabytes: only its centre square,
    // the part the crop keeps, is scaled.
    const std::int64_t side = std::min(h, w);
    return resize(chw.narrow(1, (h - side) / 2, side).narrow(2, (w - side) / 2, side), size, size);
  }
  const auto scaled = resize(chw, new_h, new_w);
  // Python's round(), as torchvision's center_crop: halves to even (std::nearbyint in the default
  // rounding mode); std::lround took halves away from zero, a pixel off for an odd excess.
  const auto top = static_cast<std::int64_t>(std::nearbyint((new_h - size) / 2.0));
  const auto left = static_cast<std::int64_t>(std::nearbyint((new_w - size) / 2.0));
  return scaled.narrow(1, top, size).narrow(2, left, size);
}

// torchvision's RandomResizedCrop(size, scale=(0.08, 1), ratio=(3/4, 4/3)) on [3, H, W].
torch::Tensor random_resized_crop(const torch::Tensor& chw, std::int64_t size,
                                  std::mt19937_64& random) {
  const std::int64_t h = chw.size(1);
  const std::int64_t w = chw.size(2);
  const double area = static_cast<double>(h * w);
  std::uniform_real_distribution<double> scale(0.08, 1.0);
  std::uniform_real_distribution<double> log_ratio(std::log(3.0 / 4.0), std::log(4.0 / 3.0));
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target = area * scale(random);
    const double ratio = std::exp(log_ratio(random));
    const auto cw = static_cast<std::int64_t>(std::nearbyint(std::sqrt(target * ratio)));
    const auto ch = static_cast<std::int64_t>(std::nearbyint(std::sqrt(target / ratio)));
    if (cw > 0 && cw <= w && ch > 0 && ch <= h) {
      const auto top = std::uniform_int_distribution<std::int64_t>(0, h - ch)(random);
      const auto left = std::uniform_int_distribution<std::int64_t>(0, w - cw)(random);
      return resize(chw.narrow(1, top, ch).narrow(2, left, cw), size, size);
    }
  }
  // Fallback, as torchvision's: the centre, at the nearest allowed aspect ratio.
  const double in_ratio = static_cast<double>(w) / static_cast<double>(h);
  std::int64_t cw = w;
  std::int64_t ch = h;
  if (in_ratio < 3.0 / 4.0) {
    ch = static_cast<std::int64_t>(std::nearbyint(static_cast<double>(w) / (3.0 / 4.0)));
  } else if (in_ratio > 4.0 / 3.0) {
    cw = static_cast<std::int64_t>(std::nearbyint(static_cast<double>(h) * (4.0 / 3.0)));
  }
  return resize(chw.narrow(1, (h - ch) / 2, ch).narrow(2, (w - cw) / 2, cw), size, size);
}

}  // namespace

bool is_image_file_name(const std::string& name) {
  const std::string extension = lowercase(fs::path(name).extension().string());
  return extension == ".jpg" || extension == ".jpeg" || extension == ".png";
}

bool looks_like_image_folder(const std::string& dir) {
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(dir, error)) {
    std::error_code unreadable;  // a link that loops is no folder
    if (entry.is_directory(unreadable) && !images_under(entry.path()).empty()) return true;
  }
  return false;
}

ImageFolder scan_image_folder(const std::string& root) {
  std::error_code unreadable;  // a link that loops is no folder
  if (!fs::is_directory(root, unreadable)) {
    throw InputError(root, 0, "no such folder; accepted: a folder of class sub-folders of images");
  }
  ImageFolder folder;
  folder.root = root;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(root, error)) {
    if (entry.is_directory(unreadable)) folder.classes.push_back(entry.path().filename().string());
  }
  if (error) throw InputError(root, 0, "cannot list the folder: " + error.message());
  std::sort(folder.classes.begin(), folder.classes.end());
  if (folder.classes.size() < 2) {
    // One class would train to a loss of 0 and report 100%: nothing to learn.
    throw InputError(
        root, 0,
        (folder.classes.empty() ? std::string("has no class sub-folders")
                                : "has one class sub-folder (" + folder.classes.front() + ")") +
            "; accepted: ROOT/<class>/<image>.jpg|.jpeg|.png with at least 2 "
            "classes");
  }
  for (std::size_t label = 0; label < folder.classes.size(); ++label) {
    const fs::path dir = fs::path(root) / folder.classes[label];
    const auto names = images_under(dir);
    if (names.empty()) {
      throw InputError(dir.string(), 0,
                       "class folder without a JPEG or PNG file, in it or in its sub-folders");
    }
    for (const auto& name : names) {
      folder.files.push_back({(dir / name).string(), static_cast<std::int64_t>(label)});
    }
  }
  return folder;
}

std::vector<std::int64_t> in_turn_by_class(const std::vector<std::int64_t>& labels,
                                           std::size_t count) {
  std::vector<std::vector<std::int64_t>> by_class;
  for (std::size_t i = 0; i < labels.size(); ++i) {
    const auto c = static_cast<std::size_t>(labels[i]);
    if (c >= by_class.size()) by_class.resize(c + 1);
    by_class[c].push_back(static_cast<std::int64_t>(i));
  }
  std::vector<std::int64_t> taken;
  taken.reserve(std::min(count, labels.size()));
  for (std::size_t turn = 0; taken.size() < std::min(count, labels.size()); ++turn) {
    for (const auto& samples : by_class) {
      if (turn < samples.size() && taken.size() < count) taken.push_back(samples[turn]);
    }
  }
  return taken;
}

ImageFolder interleaved(const ImageFolder& folder) {
  std::vector<std::int64_t> labels;
  labels.reserve(folder.files.size());
  for (const auto& file : folder.files) labels.push_back(file.label);
  ImageFolder out{folder.root, folder.classes, {}};
  out.files.reserve(folder.files.size());
  for (const std::int64_t i : in_turn_by_class(labels, labels.size())) {
    out.files.push_back(folder.files[static_cast<std::size_t>(i)]);
  }
  return out;
}

std::pair<ImageFolder, ImageFolder> hold_out(const ImageFolder& folder, int tenths) {
  ImageFolder kept{folder.root, folder.classes, {}};
  ImageFolder held{folder.root, folder.classes, {}};
  std::size_t begin = 0;
  while (begin < folder.files.size()) {
    std::size_t end = begin;
    while (end < folder.files.size() && folder.files[end].label == folder.files[begin].label) ++end;
    const std::size_t count = end - begin;
    std::size_t out = count * static_cast<std::size_t>(tenths) / 10;
    if (out == 0 && count >= 2) out = 1;
    kept.files.insert(kept.files.end(), folder.files.begin() + static_cast<std::ptrdiff_t>(begin),
                      folder.files.begin() + static_cast<std::ptrdiff_t>(end - out));
    held.files.insert(held.files.end(),
                      folder.files.begin() + static_cast<std::ptrdiff_t>(end - out),
                      folder.files.begin() + static_cast<std::ptrdiff_t>(end));
    begin = end;
  }
  if (held.files.empty()) {
    throw InputError(folder.root, 0,
                     "too few images to hold a tenth of each class out for validation; give "
                     "--val-data FOLDER");
  }
  return {kept, held};
}

std::optional<torch::Tensor> decode_image(const std::string& path, std::string* why) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *why = "cannot be read";
    return std::nullopt;
  }
  const std::vector<unsigned char> bytes{std::istreambuf_iterator<char>(in), {}};
  if (bytes.size() >= 3 && bytes[0] == 0xFF && bytes[1] == 0xD8 && bytes[2] == 0xFF) {
    return decode_jpeg(bytes, why);
  }
  if (bytes.size() >= 8 && png_sig_cmp(bytes.data(), 0, 8) == 0) return decode_png(bytes, why);
  *why = "neither a JPEG nor a PNG image";
  return std::nullopt;
}

torch::Tensor transform_image(const torch::Tensor& image, const ImageTransform& transform,
                              bool train, std::int64_t epoch, std::int64_t index) {
  const std::int64_t size = transform.size;
  const auto chw = image.permute({2, 0, 1});  // bytes until the end
  torch::Tensor out;
  if (train && transform.augment == Augment::kResizedCrop) {
    auto random = sample_generator(transform.seed, epoch, index);
    out = random_resized_crop(chw, size, random);
    if (std::uniform_real_distribution<double>(0, 1)(random) < 0.5) out = out.flip({2});
  } else {
    out = square(chw, size);
    if (train && transform.augment == Augment::kCrop) {
      auto random = sample_generator(transform.seed, epoch, index);
      const std::int64_t pad = size / 8;
      const auto top = std::uniform_int_distribution<std::int64_t>(0, 2 * pad)(random);
      const auto left = std::uniform_int_distribution<std::int64_t>(0, 2 * pad)(random);
      out = F::pad(out, F::PadFuncOptions({pad, pad, pad, pad}))
                .narrow(1, top, size)
                .narrow(2, left, size);
      if (std::uniform_real_distribution<double>(0, 1)(random) < 0.5) out = out.flip({2});
    }
  }
  const auto mean = torch::tensor(transform.mean, torch::kFloat32).view({3, 1, 1});
  const auto stdev = torch::tensor(transform.stdev, torch::kFloat32).view({3, 1, 1});
  return out.to(torch::kFloat32).div_(255.0).sub_(mean).div_(stdev);
}

std::pair<std::vector<double>, std::vector<double>> channel_statistics(const ImageFolder& folder,
                                                                       std::int64_t size,
                                                                       int samples) {
  const auto n = static_cast<std::int64_t>(folder.files.size());
  const std::int64_t take = std::min<std::int64_t>(n, samples);
  auto sum = torch::zeros({3}, torch::kFloat64);
  auto squares = torch::zeros({3}, torch::kFloat64);
  double pixels = 0;
  for (std::int64_t i = 0; i < take; ++i) {
    const auto& file = folder.files[static_cast<std::size_t>(i * n / take)];
    std::string why;
    const auto image = decode_image(file.path, &why);
    if (!image) continue;  // skipped here as in training, where it is reported
    const auto chw = square(image->permute({2, 0, 1}), size).to(torch::kFloat64).div(255.0);
    sum += chw.sum({1, 2});
    squares += chw.pow(2).sum({1, 2});
    pixels += static_cast<double>(size * size);
  }
  if (pixels == 0) {
    throw InputError(folder.root, 0, "none of the images looked at decodes as JPEG or PNG");
  }
  const auto mean = sum / pixels;
  const auto stdev = (squares / pixels - mean.pow(2)).clamp_min(1e-12).sqrt();
  std::vector<double> m(3);
  std::vector<double> s(3);
  for (int c = 0; c < 3; ++c) {
    m[static_cast<std::size_t>(c)] = mean[c].item<double>();
    s[static_cast<std::size_t>(c)] = std::max(stdev[c].item<double>(), 1e-3);
  }
  return {m, s};
}

ImageLoader::ImageLoader(ImageTransform transform, int threads) : transform_(std::move(transform)) {
  for (int t = 0; t < std::max(1, threads); ++t) threads_.emplace_back([this] { run(); });
}

ImageLoader::~ImageLoader() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& thread : threads_) thread.join();
}

void ImageLoader::run() {
  // libtorch's operations on one sample run in the loader thread itself (as inside a parallel
  // region), not on the intra-op pool that the training uses; and an OpenMP region entered from
  // here gets a team of one: libgomp gives every thread that opens one a team of its own, whose
  // idle members spin (4 of every 5 CPU seconds of a 160-pixel image went to them).
  c10::ParallelGuard serial(true);
  omp_set_num_threads(1);
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty()) return;
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

std::shared_future<ImageBatch> ImageLoader::load(const ImageFolder& folder,
                                                 std::vector<std::int64_t> indices,
                                                 std::int64_t epoch, bool train) {
  struct Pending {
    std::vector<std::int64_t> indices;
    torch::Tensor images;
    std::vector<char> ok;
    std::vector<std::string> why;
    std::atomic<int> parts_left{0};
    std::atomic<bool> failed{false};
    std::promise<ImageBatch> promise;
  };
  auto pending = std::make_shared<Pending>();
  const auto n = static_cast<std::int64_t>(indices.size());
  pending->indices = std::move(indices);
  pending->images = torch::empty({n, 3, transform_.size, transform_.size}, torch::kFloat32);
  pending->ok.assign(static_cast<std::size_t>(n), 0);
  pending->why.resize(static_cast<std::size_t>(n));
  auto future = pending->promise.get_future().share();
  if (n == 0) {
    pending->promise.set_value({pending->images, torch::empty({0}, torch::kInt64), {}});
    return future;
  }
  const auto parts =
      static_cast<int>(std::min<std::int64_t>(n, static_cast<std::int64_t>(threads_.size())));
  pending->parts_left = parts;
  auto finish = [&folder, pending] {
    std::vector<std::int64_t> kept;
    std::vector<std::int64_t> labels;
    ImageBatch batch;
    for (std::size_t i = 0; i < pending->ok.size(); ++i) {
      const auto index = pending->indices[i];
      if (pending->ok[i]) {
        kept.push_back(static_cast<std::int64_t>(i));
        labels.push_back(folder.files[static_cast<std::size_t>(index)].label);
      } else {
        batch.skipped.emplace_back(folder.files[static_cast<std::size_t>(index)].path,
                                   pending->why[i]);
      }
    }
    batch.labels = torch::tensor(labels, torch::kInt64);
    batch.images = kept.size() == pending->ok.size()
                       ? pending->images
                       : pending->images.index_select(0, torch::tensor(kept, torch::kInt64));
    pending->promise.set_value(std::move(batch));
  };
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (int p = 0; p < parts; ++p) {
      const std::int64_t begin = n * p / parts;
      const std::int64_t end = n * (p + 1) / parts;
      tasks_.emplace_back([this, &folder, pending, begin, end, epoch, train, finish] {
        try {
          torch::NoGradGuard no_grad;
          for (std::int64_t i = begin; i < end; ++i) {
            const auto index = pending->indices[static_cast<std::size_t>(i)];
            const auto& file = folder.files[static_cast<std::size_t>(index)];
            auto& why = pending->why[static_cast<std::size_t>(i)];
            const auto image = decode_image(file.path, &why);
            if (!image) continue;
            pending->images[i].copy_(transform_image(*image, transform_, train, epoch, index));
            pending->ok[static_cast<std::size_t>(i)] = 1;
          }
        } catch (...) {
          if (!pending->failed.exchange(true)) {
            pending->promise.set_exception(std::current_exception());
          }
        }
        if (pending->parts_left.fetch_sub(1) == 1 && !pending->failed) finish();
      });
    }
  }
  wake_.notify_all();
  return future;
}

}  // namespace transient::train
