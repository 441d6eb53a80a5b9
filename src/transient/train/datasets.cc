#include "transient/train/datasets.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <tuple>

#include "transient/core/error.h"
#include "transient/core/text.h"
#include "transient/train/npy_header.h"

namespace transient::train {
namespace {

namespace fs = std::filesystem;

constexpr std::int64_t kCifarSide = 32;
constexpr std::int64_t kCifarPixels = 3 * kCifarSide * kCifarSide;
constexpr std::int64_t kCifarRecord = 1 + kCifarPixels;  // a label byte, then the three planes
constexpr const char* kCifarLayout =
    "CIFAR-10's binary version: data_batch_1.bin (and data_batch_2.bin ...) and test_batch.bin, "
    "records of a label byte and 3072 pixel bytes";

std::string file_in(const std::string& dir, const std::string& name) {
  return (fs::path(dir) / name).string();
}

// The training files: data_batch_1.bin and those that follow it in number.
std::vector<std::string> cifar_training_files(const std::string& dir) {
  std::vector<std::string> files;
  for (int i = 1;; ++i) {
    const std::string path = file_in(dir, "data_batch_" + std::to_string(i) + ".bin");
    if (!fs::is_regular_file(path)) break;
    files.push_back(path);
  }
  if (files.empty()) {
    throw InputError(file_in(dir, "data_batch_1.bin"), 0,
                     std::string("missing; --data-dir must hold ") + kCifarLayout);
  }
  return files;
}

// The records in `path`, from its size; throws InputError unless it is a whole number of them.
std::int64_t cifar_records(const std::string& path) {
  std::error_code error;
  const auto bytes = fs::file_size(path, error);
  if (error) {
    throw InputError(path, 0,
                     std::string("missing or unreadable; --data-dir must hold ") + kCifarLayout);
  }
  const auto size = static_cast<std::int64_t>(bytes);
  if (size == 0 || size % kCifarRecord != 0) {
    throw InputError(path, 0,
                     std::to_string(size) + " bytes is not a whole number of " +
                         std::to_string(kCifarRecord) + "-byte CIFAR-10 records");
  }
  return size / kCifarRecord;
}

// Throws InputError naming `path` and the record if a label is outside 0..kClasses-1.
void check_cifar_label(std::uint8_t value, const std::string& path, std::int64_t record) {
  if (value >= kClasses) {
    throw InputError(path, 0,
                     "record " + std::to_string(record) + " has label " + std::to_string(value) +
                         "; accepted: 0.." + std::to_string(kClasses - 1));
  }
}

// The records of `path`, with every label checked (the label bytes only are read).
std::int64_t check_file_in(const std::string& path) {
  const std::int64_t count = cifar_records(path);
  std::ifstream in(path, std::ios::binary);
  for (std::int64_t r = 0; r < count; ++r) {
    char value = 0;
    if (!in.seekg(r * kCifarRecord) || !in.get(value)) {
      throw InputError(path, 0, "could not be read to its end (record " + std::to_string(r) + ")");
    }
    check_cifar_label(static_cast<std::uint8_t>(value), path, r);
  }
  return count;
}

LabelledImages read_cifar(const std::vector<std::string>& files) {
  std::int64_t total = 0;
  for (const auto& path : files) total += cifar_records(path);
  auto images = torch::empty({total, 3, kCifarSide, kCifarSide}, torch::kUInt8);
  auto labels = torch::empty({total}, torch::kInt64);
  auto* pixels = images.data_ptr<std::uint8_t>();
  auto* label = labels.data_ptr<std::int64_t>();
  std::vector<char> record(static_cast<std::size_t>(kCifarRecord));
  std::int64_t at = 0;
  for (const auto& path : files) {
    std::ifstream in(path, std::ios::binary);
    const std::int64_t count = cifar_records(path);
    for (std::int64_t r = 0; r < count; ++r, ++at) {
      if (!in.read(record.data(), kCifarRecord)) {
        throw InputError(path, 0,
                         "could not be read to its end (record " + std::to_string(r) + ")");
      }
      const auto value = static_cast<std::uint8_t>(record[0]);
      check_cifar_label(value, path, r);
      label[at] = value;
      std::memcpy(pixels + at * kCifarPixels, record.data() + 1, kCifarPixels);
    }
  }
  return {images, labels};
}

// --- NumPy arrays ----------------------------------------------------------------------------

// A shape as the refusals show it: "[1, 28, 28]".
std::string dims_text(c10::IntArrayRef dims) {
  std::vector<std::string> parts;
  for (const auto d : dims) parts.push_back(std::to_string(d));
  return "[" + join(parts) + "]";
}

constexpr const char* kNpyLayout =
    "images.npy (uint8 or float32: [N, H, W], [N, C, H, W] or [N, H, W, C], C 1 or 3) and "
    "labels.npy (integers from 0, [N]), optionally test_images.npy and test_labels.npy";

// The file mapped read-only into memory for as long as a tensor over it lives.
torch::Tensor map_npy(const std::string& path, const NpyHeader& h, torch::ScalarType type) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw InputError(path, 0, std::string("cannot be opened: ") + std::strerror(errno));
  const auto size = static_cast<std::size_t>(fs::file_size(path));
  void* base = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (base == MAP_FAILED) {
    throw InputError(path, 0, std::string("cannot be mapped: ") + std::strerror(errno));
  }
  return torch::from_blob(
      static_cast<char*>(base) + h.data_offset, h.shape,
      [base, size](void*) { ::munmap(base, size); }, torch::TensorOptions().dtype(type));
}

// Images [N, C, H, W] (a view of the mapped file) from images.npy-like `path`.
torch::Tensor npy_images(const std::string& path) {
  const NpyHeader h = read_npy_header(path, kNpyLayout);
  torch::ScalarType type;
  if (h.kind == 'u' && h.item_bytes == 1) {
    type = torch::kUInt8;
  } else if (h.kind == 'f' && h.item_bytes == 4) {
    type = torch::kFloat32;
  } else {
    throw InputError(path, 0,
                     std::string("element type ") + h.kind + std::to_string(h.item_bytes * 8) +
                         "; accepted: uint8 or float32");
  }
  const auto& s = h.shape;
  const bool channels_first = s.size() == 4 && (s[1] == 1 || s[1] == 3);
  const bool channels_last = s.size() == 4 && !channels_first && (s[3] == 1 || s[3] == 3);
  if (!(s.size() == 3 || channels_first || channels_last) || h.elements == 0) {
    throw InputError(path, 0,
                     "shape " + dims_text(s) + "; accepted: [N, H, W], [N, C, H, W] or " +
                         "[N, H, W, C] with C 1 or 3, none of them 0");
  }
  const std::int64_t height = s.size() == 3 || channels_first ? s[s.size() - 2] : s[1];
  const std::int64_t width = s.size() == 3 || channels_first ? s[s.size() - 1] : s[2];
  if (height < kMinImageSide || width < kMinImageSide) {
    throw InputError(path, 0,
                     "images of " + std::to_string(height) + "x" + std::to_string(width) +
                         " pixels; accepted: at least " + std::to_string(kMinImageSide) + "x" +
                         std::to_string(kMinImageSide) +
                         " (the models' convolutions and pooling "
                         "need them)");
  }
  auto images = map_npy(path, h, type);
  if (type == torch::kFloat32) {
    // A NaN or an infinity among the pixels made the loss NaN at its step: reported as a
    // divergence, with the advice to lower --lr, and rolled back to up to three times. Checked in
    // slices of samples, so that no copy of a large file's size is made.
    constexpr std::int64_t kSlice = 4096;
    for (std::int64_t first = 0; first < images.size(0); first += kSlice) {
      const auto slice = images.narrow(0, first, std::min(kSlice, images.size(0) - first));
      const auto bad = torch::nonzero(torch::isfinite(slice).logical_not().flatten(1).any(1));
      if (bad.size(0) > 0) {
        throw InputError(path, 0,
                         "sample " + std::to_string(first + bad[0][0].item<std::int64_t>()) +
                             " holds NaN or an infinity; accepted: finite pixel values");
      }
    }
  }
  if (s.size() == 3) return images.unsqueeze(1);
  return channels_last ? images.permute({0, 3, 1, 2}) : images;
}

// Labels int64 [N] from labels.npy-like `path`, checked to be 0..classes-1; `whose` says where
// that bound comes from in the refusal ("" for the most a data set may have).
torch::Tensor npy_labels(const std::string& path, std::int64_t count, std::int64_t classes,
                         const std::string& whose = "") {
  const NpyHeader h = read_npy_header(path, kNpyLayout);
  if ((h.kind != 'i' && h.kind != 'u') || h.shape.size() != 1) {
    throw InputError(path, 0, "labels must be integers of shape [N]");
  }
  if (h.shape[0] != count) {
    throw InputError(
        path, 0,
        "holds " + std::to_string(h.shape[0]) + " labels for " + std::to_string(count) + " images");
  }
  if (h.item_bytes != 1 && h.item_bytes != 2 && h.item_bytes != 4 && h.item_bytes != 8) {
    throw InputError(path, 0, "labels must be integers of 1, 2, 4 or 8 bytes, signed or not");
  }
  // Unsigned ones too (NumPy's uint16 to uint64 were refused, where the README says integers).
  const bool is_signed = h.kind == 'i';
  const auto type = h.item_bytes == 1   ? (is_signed ? torch::kInt8 : torch::kUInt8)
                    : h.item_bytes == 2 ? (is_signed ? torch::kInt16 : torch::kUInt16)
                    : h.item_bytes == 4 ? (is_signed ? torch::kInt32 : torch::kUInt32)
                                        : (is_signed ? torch::kInt64 : torch::kUInt64);
  auto labels = map_npy(path, h, type).to(torch::kInt64);
  const auto bad = torch::nonzero(labels.lt(0).logical_or(labels.ge(classes)));
  if (bad.size(0) > 0) {
    const auto at = bad[0][0].item<std::int64_t>();
    throw InputError(path, 0,
                     "label " + std::to_string(labels[at].item<std::int64_t>()) + " at index " +
                         std::to_string(at) + "; accepted: 0.." + std::to_string(classes - 1) +
                         (whose.empty() ? "" : " (" + whose + ")"));
  }
  return labels;
}

// The classes of an npy data set: its training labels' largest + 1 (at least 2).
std::int64_t npy_classes(const torch::Tensor& labels, const std::string& path) {
  const std::int64_t classes = labels.numel() > 0 ? labels.max().item<std::int64_t>() + 1 : 0;
  if (classes < 2) {
    throw InputError(path, 0,
                     "its labels name " + counted(classes, "class", "classes") +
                         "; accepted: labels of at least 2 classes, 0 and up");
  }
  return classes;
}

// The samples of `labels` (of `classes`) to train on and to hold out as the test set, each in
// file order: the last tenth of each class is held out (at least one of a class of two or more),
// as for an image folder. The last tenth of the file was: with labels sorted by class (as many
// data sets ship) exactly the last class, which the model never trained on (0% accuracy).
std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>> held_out_by_class(
    const torch::Tensor& labels, std::int64_t classes, const std::string& images_path) {
  const std::int64_t n = labels.size(0);
  const auto label = labels.accessor<std::int64_t, 1>();
  std::vector<std::int64_t> per_class(static_cast<std::size_t>(classes), 0);
  for (std::int64_t i = 0; i < n; ++i) ++per_class[static_cast<std::size_t>(label[i])];
  std::vector<std::int64_t> to_hold(per_class.size());
  for (std::size_t c = 0; c < per_class.size(); ++c) {
    to_hold[c] = per_class[c] / 10;
    if (to_hold[c] == 0 && per_class[c] >= 2) to_hold[c] = 1;
  }
  std::vector<std::int64_t> kept, held;
  std::vector<std::int64_t> seen(per_class.size(), 0);
  for (std::int64_t i = 0; i < n; ++i) {
    const auto c = static_cast<std::size_t>(label[i]);
    (++seen[c] > per_class[c] - to_hold[c] ? held : kept).push_back(i);
  }
  if (held.empty()) {
    throw InputError(images_path, 0,
                     "holds " + std::to_string(n) +
                         " samples: too few to hold a tenth of each class out as the test set "
                         "(give test_images.npy and test_labels.npy)");
  }
  return {kept, held};
}

// The training and test sets of an npy directory (the test set held out if it has none).
std::pair<LabelledImages, LabelledImages> npy_sets(const std::string& dir,
                                                   const std::string& val_dir) {
  const std::string images_path = file_in(dir, "images.npy");
  auto images = npy_images(images_path);
  const std::string labels_path = file_in(dir, "labels.npy");
  auto labels = npy_labels(labels_path, images.size(0), kMaxClasses);
  const std::int64_t classes = npy_classes(labels, labels_path);
  std::string test_images = file_in(dir, "test_images.npy");
  std::string test_labels = file_in(dir, "test_labels.npy");
  if (!val_dir.empty()) {
    test_images = file_in(val_dir, "images.npy");
    test_labels = file_in(val_dir, "labels.npy");
  }
  if (!val_dir.empty() || fs::exists(test_images) || fs::exists(test_labels)) {
    auto test = npy_images(test_images);
    if (test.sizes().slice(1) != images.sizes().slice(1)) {
      throw InputError(test_images, 0,
                       "its images are " + dims_text(test.sizes().slice(1)) +
                           " (C, H, W) where those of " + images_path + " are " +
                           dims_text(images.sizes().slice(1)));
    }
    if (test.scalar_type() != images.scalar_type()) {
      // Each set is scaled as the training images' type says (bytes / 255): floats scaled as
      // bytes, or bytes as floats, would be evaluated on other numbers than those trained on.
      auto type_name = [](const torch::Tensor& t) {
        return t.scalar_type() == torch::kUInt8 ? "uint8" : "float32";
      };
      throw InputError(test_images, 0,
                       std::string("its element type is ") + type_name(test) + " where that of " +
                           images_path + " is " + type_name(images) + "; accepted: the same type");
    }
    return {
        {images, labels},
        {test, npy_labels(test_labels, test.size(0), classes, "the classes of " + labels_path)}};
  }
  // The training images stay mapped (rows say which); the test set, a tenth, is copied.
  const auto [kept, held] = held_out_by_class(labels, classes, images_path);
  const auto kept_at = torch::tensor(kept, torch::kInt64);
  const auto held_at = torch::tensor(held, torch::kInt64);
  return {{images, labels.index_select(0, kept_at), kept_at},
          {images.index_select(0, held_at), labels.index_select(0, held_at)}};
}

// The training and validation folders of an image-folder data set in `dir`, as scanned (class by
// class).
std::pair<ImageFolder, ImageFolder> class_major_image_folders(const std::string& dir,
                                                              const DataOptions& options) {
  std::error_code unreadable;  // a link that loops is no folder
  const bool split = fs::is_directory(fs::path(dir) / "train", unreadable);
  auto train = scan_image_folder(split ? file_in(dir, "train") : dir);
  std::string val = options.val_dir;
  for (const char* name : {"val", "test"}) {
    if (val.empty() && split && fs::is_directory(fs::path(dir) / name, unreadable)) {
      val = file_in(dir, name);
    }
  }
  if (val.empty()) return hold_out(train, 1);
  auto test = scan_image_folder(val);
  if (test.classes != train.classes) {
    // Each side's classes the other lacks, by name (the first few): sorted, as scanned.
    auto missing_from = [](const std::vector<std::string>& from,
                           const std::vector<std::string>& in) {
      std::vector<std::string> out;
      std::set_difference(in.begin(), in.end(), from.begin(), from.end(), std::back_inserter(out));
      if (out.size() > 5) {
        out.resize(5);
        out.back() = "...";
      }
      return out.empty() ? std::string("none") : join(out);
    };
    throw InputError(val, 0,
                     "its classes are not those of " + train.root + ": only here " +
                         missing_from(train.classes, test.classes) + "; only there " +
                         missing_from(test.classes, train.classes));
  }
  return {train, test};
}

// The training and validation folders of an image-folder data set in `dir`, their files
// interleaved by class.
std::pair<ImageFolder, ImageFolder> image_folders(const std::string& dir,
                                                  const DataOptions& options) {
  auto [train, test] = class_major_image_folders(dir, options);
  return {interleaved(train), interleaved(test)};
}

// S: the option, or the shorter side of the first training image that decodes (one that does
// not is skipped as anywhere else: the data set was refused for it without --strict).
std::int64_t image_size(const ImageFolder& train, const DataOptions& options) {
  if (options.image_size > 0) return options.image_size;
  std::string first_why;
  std::optional<torch::Tensor> image;
  std::string first;
  for (const auto& file : train.files) {
    std::string why;
    image = decode_image(file.path, &why);
    if (image) {
      first = file.path;
      break;
    }
    if (first_why.empty()) first_why = file.path + ": " + why;
  }
  if (!image) {
    throw InputError("--data: no training image decodes (" + first_why +
                     "); accepted: JPEG and PNG images");
  }
  const std::int64_t side = std::min(image->size(0), image->size(1));
  if (side < kMinImageSide || side > kMaxImageSide) {
    throw InputError(first, 0,
                     "its shorter side is " + std::to_string(side) +
                         " pixels, the size every image is made without --image-size; accepted: " +
                         std::to_string(kMinImageSide) + ".." + std::to_string(kMaxImageSide) +
                         ", or --image-size S");
  }
  return side;
}

}  // namespace

std::int64_t Dataset::train_size() const {
  return train_files ? static_cast<std::int64_t>(train_files->files.size()) : train.labels.size(0);
}

std::int64_t Dataset::test_size() const {
  return test_files ? static_cast<std::int64_t>(test_files->files.size()) : test.labels.size(0);
}

std::string dataset_names() { return "fashion-mnist, cifar10, npy, image-folder"; }

std::string detect_dataset(std::string& dir) {
  // The error_code forms throughout: a link that loops is neither a folder nor a file here.
  std::error_code unreadable;
  auto exists = [&](const fs::path& path) { return fs::exists(path, unreadable); };
  if (!fs::is_directory(dir, unreadable)) {
    throw InputError(dir, 0,
                     std::string("--data: ") + (exists(dir) ? "not a folder" : "no such folder") +
                         "; accepted: the data set's folder (the one holding images.npy, the "
                         "CIFAR-10 batches, the Fashion-MNIST files or the class sub-folders)");
  }
  if (exists(fs::path(dir) / "images.npy")) return "npy";
  if (exists(fs::path(dir) / "data_batch_1.bin")) return "cifar10";
  if (exists(fs::path(dir) / "cifar-10-batches-bin" / "data_batch_1.bin")) {
    dir = file_in(dir, "cifar-10-batches-bin");
    return "cifar10";
  }
  if (exists(fs::path(dir) / "train-images-idx3-ubyte.gz")) return "fashion-mnist";
  if (looks_like_image_folder(dir) || looks_like_image_folder(file_in(dir, "train"))) {
    return "image-folder";
  }
  throw InputError(dir, 0,
                   "--data: no data set found; accepted: a folder with images.npy and labels.npy, "
                   "CIFAR-10's data_batch_1.bin ..., Fashion-MNIST's train-images-idx3-ubyte.gz "
                   "..., or class sub-folders of JPEG/PNG images (directly or under train/)");
}

bool needs_data_dir(const std::string& name) { return name != "fashion-mnist"; }

ImageShape dataset_shape(const std::string& name, const std::string& dir,
                         const DataOptions& options) {
  if (!options.val_dir.empty() && name != "npy" && name != "image-folder") {
    throw InputError("--val-data: accepted with npy and image-folder data sets only (" + name +
                     " has its own test set)");
  }
  if (name == "fashion-mnist") return ImageShape{1, 28, 28};
  if (name == "cifar10") return ImageShape{3, kCifarSide, kCifarSide};
  if (name == "npy") {
    const auto images = npy_images(file_in(dir, "images.npy"));
    const std::string labels_path = file_in(dir, "labels.npy");
    const auto labels = npy_labels(labels_path, images.size(0), kMaxClasses);
    return ImageShape{images.size(1), images.size(2), images.size(3),
                      npy_classes(labels, labels_path)};
  }
  if (name == "image-folder") {
    const auto [train, test] = image_folders(dir, options);
    const auto size = image_size(train, options);
    return ImageShape{3, size, size, static_cast<std::int64_t>(train.classes.size())};
  }
  throw InputError("--dataset: unknown data set \"" + name + "\"; accepted: " + dataset_names());
}

Dataset load_dataset(const std::string& name, const std::string& dir, const DataOptions& options) {
  Dataset data;
  data.shape = dataset_shape(name, dir, options);
  if (name == "image-folder") {
    auto [train, test] = image_folders(dir, options);
    if (options.mean.size() == 3 && options.stdev.size() == 3) {
      data.mean = options.mean;
      data.stdev = options.stdev;
    } else {
      std::tie(data.mean, data.stdev) = channel_statistics(train, data.shape.height, 256);
    }
    data.transform.size = data.shape.height;
    data.transform.mean = data.mean;
    data.transform.stdev = data.stdev;
    data.train_files = std::make_shared<const ImageFolder>(std::move(train));
    data.test_files = std::make_shared<const ImageFolder>(std::move(test));
    return data;
  }
  if (name == "npy") {
    std::tie(data.train, data.test) = npy_sets(dir, options.val_dir);
    const bool bytes = data.train.images.scalar_type() == torch::kUInt8;
    data.divisor = bytes ? 255 : 1;
    data.mean.assign(static_cast<std::size_t>(data.shape.channels), bytes ? 0.5 : 0.0);
    data.stdev.assign(static_cast<std::size_t>(data.shape.channels), bytes ? 0.5 : 1.0);
    return data;
  }
  if (name == "cifar10") {
    data.train = read_cifar(cifar_training_files(dir));
    data.test = read_cifar({file_in(dir, "test_batch.bin")});
    // The usual figures of CIFAR-10's training set.
    data.mean = {0.4914, 0.4822, 0.4465};
    data.stdev = {0.2470, 0.2435, 0.2616};
    return data;
  }
  const auto fashion = FashionMnist::load(dir, options.train_limit, options.test_limit);
  data.train = fashion.train;
  data.test = fashion.test;
  data.mean = {kFashionMnistMean};
  data.stdev = {kFashionMnistStd};
  return data;
}

SampleCounts count_samples(const std::string& name, const std::string& dir,
                           const DataOptions& options) {
  dataset_shape(name, dir, options);  // the name is one we know, its files readable
  if (name == "npy") {
    const auto [train, test] = npy_sets(dir, options.val_dir);
    return {train.labels.size(0), test.labels.size(0)};
  }
  if (name == "image-folder") {
    const auto [train, test] = image_folders(dir, options);
    return {static_cast<std::int64_t>(train.files.size()),
            static_cast<std::int64_t>(test.files.size())};
  }
  if (name == "cifar10") {
    SampleCounts counts;
    for (const auto& path : cifar_training_files(dir)) counts.train += check_file_in(path);
    counts.test = check_file_in(file_in(dir, "test_batch.bin"));
    return counts;
  }
  const auto [train, test] = FashionMnist::count_samples(dir);
  return {train, test};
}

std::pair<std::vector<double>, std::vector<double>> image_statistics(const std::string& dir,
                                                                     const DataOptions& options) {
  const auto train = image_folders(dir, options).first;
  return channel_statistics(train, image_size(train, options), 256);
}

void check_every_image(const std::string& dir, const DataOptions& options, int threads) {
  const auto [train, test] = image_folders(dir, options);
  ImageTransform transform;
  transform.size = 8;  // decoding is the check; the transform only has to run
  transform.augment = Augment::kNone;
  ImageLoader loader(transform, threads);
  for (const auto* folder : {&train, &test}) {
    const auto n = static_cast<std::int64_t>(folder->files.size());
    for (std::int64_t begin = 0; begin < n; begin += 1024) {
      std::vector<std::int64_t> indices;
      for (std::int64_t i = begin; i < std::min(n, begin + 1024); ++i) indices.push_back(i);
      const auto batch = loader.load(*folder, std::move(indices), 0, false).get();
      if (!batch.skipped.empty()) {
        const auto& [path, why] = batch.skipped.front();
        throw InputError(path, 0, why + " (--strict refuses a data set with it)");
      }
    }
  }
}

torch::Tensor normalise(const Dataset& data, const torch::Tensor& images) {
  const auto channels = static_cast<std::int64_t>(data.mean.size());
  auto mean = torch::tensor(data.mean, torch::kFloat32).view({1, channels, 1, 1});
  auto stdev = torch::tensor(data.stdev, torch::kFloat32).view({1, channels, 1, 1});
  // Out of place first: float images come as they are, and may be views of a read-only mapping.
  return images.to(torch::kFloat32).div(data.divisor).sub_(mean).div_(stdev);
}

}  // namespace transient::train
