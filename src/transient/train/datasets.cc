#include "transient/train/datasets.h"

#include <cstring>
#include <filesystem>
#include <fstream>

#include "transient/core/error.h"

namespace transient::train {
namespace {

namespace fs = std::filesystem;

constexpr std::int64_t kCifarSide = 32;
constexpr std::int64_t kCifarPixels = 3 * kCifarSide * kCifarSide;
constexpr std::int64_t kCifarRecord = 1 + kCifarPixels;  // a label byte, then the three planes
constexpr const char* kCifarLayout =
    "CIFAR-10's binary version: data_batch_1.bin (and data_batch_2.bin ...) and test_batch.bin, "
    "records of a label byte and 3072 pixel bytes";

std::string cifar_file(const std::string& dir, const std::string& name) {
  return (fs::path(dir) / name).string();
}

// The training files: data_batch_1.bin and those that follow it in number.
std::vector<std::string> cifar_training_files(const std::string& dir) {
  std::vector<std::string> files;
  for (int i = 1;; ++i) {
    const std::string path = cifar_file(dir, "data_batch_" + std::to_string(i) + ".bin");
    if (!fs::is_regular_file(path)) break;
    files.push_back(path);
  }
  if (files.empty()) {
    throw InputError(cifar_file(dir, "data_batch_1.bin"), 0,
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
std::int64_t check_cifar_file(const std::string& path) {
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

}  // namespace

std::string dataset_names() { return "fashion-mnist, cifar10"; }

ImageShape dataset_shape(const std::string& name) {
  if (name == "fashion-mnist") return ImageShape{1, 28, 28};
  if (name == "cifar10") return ImageShape{3, kCifarSide, kCifarSide};
  throw InputError("--dataset: unknown data set \"" + name + "\"; accepted: " + dataset_names());
}

Dataset load_dataset(const std::string& name, const std::string& dir) {
  Dataset data;
  data.shape = dataset_shape(name);
  if (name == "cifar10") {
    data.train = read_cifar(cifar_training_files(dir));
    data.test = read_cifar({cifar_file(dir, "test_batch.bin")});
    // The usual figures of CIFAR-10's training set.
    data.mean = {0.4914, 0.4822, 0.4465};
    data.stdev = {0.2470, 0.2435, 0.2616};
    return data;
  }
  const auto fashion = FashionMnist::load(dir);
  data.train = fashion.train;
  data.test = fashion.test;
  data.mean = {kFashionMnistMean};
  data.stdev = {kFashionMnistStd};
  return data;
}

std::int64_t count_training_samples(const std::string& name, const std::string& dir) {
  dataset_shape(name);  // the name is one we know
  if (name == "cifar10") {
    std::int64_t total = 0;
    for (const auto& path : cifar_training_files(dir)) total += check_cifar_file(path);
    check_cifar_file(cifar_file(dir, "test_batch.bin"));
    return total;
  }
  return FashionMnist::count_training_samples(dir);
}

torch::Tensor normalise(const Dataset& data, const torch::Tensor& images) {
  const auto channels = static_cast<std::int64_t>(data.mean.size());
  auto mean = torch::tensor(data.mean, torch::kFloat32).view({1, channels, 1, 1});
  auto stdev = torch::tensor(data.stdev, torch::kFloat32).view({1, channels, 1, 1});
  return images.to(torch::kFloat32).div_(255.0).sub_(mean).div_(stdev);
}

}  // namespace transient::train
