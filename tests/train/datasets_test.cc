// The data sets' readers without processes: NumPy arrays are memory-mapped, not copied.
#include "transient/train/datasets.h"

#include "transient/core/error.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace transient::train {
namespace {

namespace fs = std::filesystem;

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A .npy file (format 1.0) of `descr` and `shape` whose data is `bytes` bytes of `fill`.
void write_npy(const std::string& path, const std::string& descr, const std::string& shape,
               std::size_t bytes, char fill) {
  std::string header =
      "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  out.write("\x93NUMPY\x01\x00", 8);
  out.put(static_cast<char>(header.size() & 0xff));
  out.put(static_cast<char>(header.size() >> 8));
  out << header << std::string(bytes, fill);
}

TEST(Datasets, NumPyImagesAreMappedNotCopiedAndATenthIsHeldOut) {
  const fs::path dir = fs::temp_directory_path() / ("transient-npy-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  write_npy((dir / "images.npy").string(), "|u1", "(100, 28, 28)", 100 * 28 * 28, '\x10');
  write_npy((dir / "labels.npy").string(), "|u1", "(100,)", 100, '\x03');
  const std::string images = (dir / "images.npy").string();
  {
    const Dataset data = load_dataset("npy", dir.string());
    EXPECT_NE(read_all("/proc/self/maps").find(images), std::string::npos)
        << "images.npy is not mapped";
    EXPECT_EQ(data.train.images.sizes(), (std::vector<std::int64_t>{90, 1, 28, 28}));
    EXPECT_EQ(data.test.images.size(0), 10);
    EXPECT_EQ(data.train.labels[89].item<std::int64_t>(), 3);
    EXPECT_EQ(data.shape.channels, 1);
    // 16 of 255, centred on 0.5 with deviation 0.5; the mapped images are left as they are.
    EXPECT_NEAR(normalise(data, data.train.images.narrow(0, 0, 1))[0][0][0][0].item<float>(),
                (16.0 / 255 - 0.5) / 0.5, 1e-6);
    EXPECT_EQ(data.test.images[0][0][0][0].item<std::uint8_t>(), 16);
  }
  EXPECT_EQ(read_all("/proc/self/maps").find(images), std::string::npos)
      << "images.npy stayed mapped after its tensors were gone";
  // --val-data DIR: images.npy and labels.npy of DIR are the test set, nothing is held out.
  const fs::path val = dir / "val";
  fs::create_directories(val);
  write_npy((val / "images.npy").string(), "|u1", "(7, 28, 28)", 7 * 28 * 28, '\x20');
  write_npy((val / "labels.npy").string(), "|u1", "(7,)", 7, '\x01');
  {
    const Dataset data = load_dataset("npy", dir.string(), DataOptions{0, val.string(), {}, {}});
    EXPECT_EQ(data.train.images.size(0), 100);
    EXPECT_EQ(data.test.images.size(0), 7);
    EXPECT_EQ(data.test.labels[0].item<std::int64_t>(), 1);
  }
  // The data sets that have a test set of their own refuse one.
  EXPECT_THROW(dataset_shape("cifar10", dir.string(), DataOptions{0, val.string(), {}, {}}),
               InputError);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace transient::train
