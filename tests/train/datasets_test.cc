// The data sets' readers without processes: NumPy arrays are memory-mapped, not copied.
#include "transient/train/datasets.h"

#include "common/refusal.h"
#include "train/npy_file.h"
#include "transient/core/error.h"
#include "transient/train/fashion_mnist.h"
#include "transient/train/shard_loader.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace transient::train {
namespace {

namespace fs = std::filesystem;
using transient::testing::refusal_of;

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A .npy file of `descr` and `shape` whose data is `bytes` bytes of `fill`.
void write_npy(const std::string& path, const std::string& descr, const std::string& shape,
               std::size_t bytes, char fill) {
  testing::write_npy_file(path, descr, shape, std::string(bytes, fill));
}

// Appends `bytes` to the gzip file at `path` as a gzip member of its own (mode "ab": a file of
// several members, as `cat a.gz b.gz` makes; gunzip reads them as one).
void append_gzip_member(const std::string& path, const std::string& bytes) {
  gzFile file = gzopen(path.c_str(), "ab");
  ASSERT_NE(file, nullptr) << path;
  ASSERT_EQ(gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size())),
            static_cast<int>(bytes.size()));
  ASSERT_EQ(gzclose(file), Z_OK);
}

std::string big_endian(std::uint32_t value) {
  return {static_cast<char>(value >> 24), static_cast<char>(value >> 16),
          static_cast<char>(value >> 8), static_cast<char>(value)};
}

// Fashion-MNIST's four IDX files with `train` and `test` images whose pixels are their index;
// the training images are written as two gzip members.
void write_fashion_mnist(const fs::path& dir, int train, int test) {
  for (const auto& [prefix, count] : {std::pair{"train", train}, std::pair{"t10k", test}}) {
    std::string pixels;
    std::string labels;
    for (int i = 0; i < count; ++i) {
      pixels += std::string(28 * 28, static_cast<char>(i));
      labels += static_cast<char>(i % 10);
    }
    const std::string images_path =
        (dir / (std::string(prefix) + "-images-idx3-ubyte.gz")).string();
    const std::string header =
        big_endian(0x803) + big_endian(count) + big_endian(28) + big_endian(28);
    const std::size_t half = header.size() + pixels.size() / 2;
    const std::string file = header + pixels;
    append_gzip_member(images_path, file.substr(0, half));
    append_gzip_member(images_path, file.substr(half));
    append_gzip_member((dir / (std::string(prefix) + "-labels-idx1-ubyte.gz")).string(),
                       big_endian(0x801) + big_endian(count) + labels);
  }
}

// A fresh folder `name` under the temporary directory holding write_fashion_mnist's set.
fs::path fashion_mnist_in(const std::string& name, int train, int test) {
  const fs::path dir = fs::temp_directory_path() / (name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  write_fashion_mnist(dir, train, test);
  return dir;
}

TEST(Datasets, FashionMnistsGzipFilesAreReadWholeAndABrokenOneIsNamed) {
  const fs::path dir = fashion_mnist_in("transient-fashion", 5, 3);
  const Dataset data = load_dataset("fashion-mnist", dir.string());
  ASSERT_EQ(data.train.images.sizes(), (std::vector<std::int64_t>{5, 1, 28, 28}));
  ASSERT_EQ(data.test.images.size(0), 3);
  for (int i = 0; i < 5; ++i) {  // both members, every pixel where it belongs
    EXPECT_TRUE(data.train.images[i].eq(i).all().item<bool>()) << "image " << i;
    EXPECT_EQ(data.train.labels[i].item<std::int64_t>(), i % 10);
  }
  EXPECT_TRUE(data.test.images[2].eq(2).all().item<bool>());
  EXPECT_EQ(count_samples("fashion-mnist", dir.string(), DataOptions{}).train, 5);
  EXPECT_EQ(count_samples("fashion-mnist", dir.string(), DataOptions{}).test, 3);

  // Cut short, the file is refused by name: no partial data set.
  const fs::path images = dir / "train-images-idx3-ubyte.gz";
  fs::resize_file(images, fs::file_size(images) - 10);
  try {
    load_dataset("fashion-mnist", dir.string());
    ADD_FAILURE() << "a truncated gzip file was read";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find(images.string()), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("not a readable gzip file"), std::string::npos)
        << error.what();
  }
  // So it is by the launcher's count, before any worker starts (which read only the header: every
  // worker failed on the file, and the job with them).
  try {
    count_samples("fashion-mnist", dir.string(), DataOptions{});
    ADD_FAILURE() << "a truncated gzip file was counted";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find(images.string() + ": not a readable gzip file"),
              std::string::npos)
        << error.what();
  }
  fs::remove_all(dir);
}

// A worker whose copy of Fashion-MNIST holds fewer samples than the job's --train-subset is
// refused naming its folder (review): read only as far as the subset, its size was not compared,
// and it was admitted and failed the whole job at the first sample it lacked.
TEST(Datasets, AFashionMnistCopyShorterThanTheJobsSubsetIsRefused) {
  const fs::path dir = fashion_mnist_in("transient-fashion-short", 5, 3);
  JobConfig job;
  job.options.dataset = "fashion-mnist";
  job.options.data_dir = dir.string();
  job.options.train_subset = 4;
  job.train_samples = 4;
  job.data = DataFacts{60000, 1, 28, 28, 10};  // the coordinator's own copy, counted whole
  EXPECT_NO_THROW(ShardLoader(job, torch::kCPU));
  job.options.train_subset = 8;
  job.train_samples = 8;
  try {
    ShardLoader samples(job, torch::kCPU);
    ADD_FAILURE() << "a copy of 5 samples was taken for a job of 8";
  } catch (const InputError& error) {
    EXPECT_EQ(std::string(error.what()),
              dir.string() +
                  ": this worker's data set differs from the job's (5 training samples here, "
                  "fewer than the 8 the job trains on (--train-subset)); every worker needs the "
                  "same data (its folder: --data-dir)");
  }
  // So is one holding fewer test samples than the job's --test-subset (read as far as it).
  job.options.train_subset = 4;
  job.train_samples = 4;
  job.data.test_samples = 10000;
  job.options.test_subset = 3;
  EXPECT_NO_THROW(ShardLoader(job, torch::kCPU));
  job.options.test_subset = 6;
  try {
    ShardLoader samples(job, torch::kCPU);
    ADD_FAILURE() << "a copy of 3 test samples was taken for a job evaluating on 6";
  } catch (const InputError& error) {
    EXPECT_EQ(std::string(error.what()),
              dir.string() +
                  ": this worker's data set differs from the job's (3 test samples here, fewer "
                  "than the 6 the job evaluates on (--test-subset)); every worker needs the same "
                  "data (its folder: --data-dir)");
  }
  fs::remove_all(dir);
}

// --train-subset and --test-subset: only the first samples are read, the images' file
// decompressed no further than they need (across the two gzip members here), and a subset larger
// than the test set is the whole of it. A file that is not gzip, or ends within the prefix, is
// still refused by name.
TEST(Datasets, FashionMnistSubsetsReadOnlyTheirFirstSamples) {
  const fs::path dir = fashion_mnist_in("transient-fashion-prefix", 5, 3);
  DataOptions subsets;
  subsets.train_limit = 4;  // past the first member's two and a half images
  subsets.test_limit = 10;  // more than the three there are
  const Dataset data = load_dataset("fashion-mnist", dir.string(), subsets);
  ASSERT_EQ(data.train.images.sizes(), (std::vector<std::int64_t>{4, 1, 28, 28}));
  ASSERT_EQ(data.train.labels.size(0), 4);
  for (int i = 0; i < 4; ++i) {
    EXPECT_TRUE(data.train.images[i].eq(i).all().item<bool>()) << "image " << i;
    EXPECT_EQ(data.train.labels[i].item<std::int64_t>(), i % 10);
  }
  EXPECT_EQ(data.test.images.size(0), 3);
  EXPECT_EQ(data.test.labels.size(0), 3);

  const fs::path images = dir / "train-images-idx3-ubyte.gz";
  auto refused = [&](const DataOptions& options, const std::string& why) {
    try {
      load_dataset("fashion-mnist", dir.string(), options);
      ADD_FAILURE() << "read: " << why;
    } catch (const InputError& error) {
      EXPECT_NE(std::string(error.what()).find(images.string()), std::string::npos) << error.what();
      EXPECT_NE(std::string(error.what()).find(why), std::string::npos) << error.what();
    }
  };
  // A header of five images over the pixels of three: it ends within the four asked for.
  fs::remove(images);
  std::string three;
  for (int i = 0; i < 3; ++i) three += std::string(28 * 28, static_cast<char>(i));
  append_gzip_member(images.string(),
                     big_endian(0x803) + big_endian(5) + big_endian(28) + big_endian(28) + three);
  refused(subsets, "holds 2352 bytes of pixels for 4 images");
  // Not gzip at all.
  std::ofstream(images, std::ios::binary | std::ios::trunc) << std::string(4000, 'x');
  refused(subsets, "not a readable gzip file");
  fs::remove_all(dir);
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
    // The file's images stay whole, 90 of their rows the training samples.
    EXPECT_EQ(data.train.images.sizes(), (std::vector<std::int64_t>{100, 1, 28, 28}));
    EXPECT_EQ(data.train_size(), 90);
    EXPECT_EQ(data.train.rows.size(0), 90);
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
  // Labels sorted by class, as many data sets ship: the last tenth of each class is held out
  // (the last tenth of the file was, the last class only, never trained on: 0% accuracy).
  {
    std::string sorted;
    for (int label = 0; label < 5; ++label) sorted += std::string(20, static_cast<char>(label));
    testing::write_npy_file((dir / "labels.npy").string(), "|u1", "(100,)", sorted);
    const Dataset data = load_dataset("npy", dir.string());
    ASSERT_EQ(data.test.labels.size(0), 10);
    for (int i = 0; i < 10; ++i) EXPECT_EQ(data.test.labels[i].item<std::int64_t>(), i / 2);
    EXPECT_EQ(data.train_size(), 90);
    EXPECT_EQ(data.train.rows[17].item<std::int64_t>(), 17);  // class 0's first 18 ...
    EXPECT_EQ(data.train.rows[18].item<std::int64_t>(), 20);  // ... then class 1's
  }
  // Labels of NumPy's other unsigned types (uint16 to uint64 were refused as not integers of the
  // kinds accepted), little-endian as NumPy writes them.
  for (const auto& [descr, bytes] :
       {std::pair{"<u2", 2}, std::pair{"<u4", 4}, std::pair{"<u8", 8}}) {
    std::string wide;
    for (int i = 0; i < 100; ++i) {
      wide += static_cast<char>(i % 5);
      wide += std::string(static_cast<std::size_t>(bytes - 1), '\0');
    }
    testing::write_npy_file((dir / "labels.npy").string(), descr, "(100,)", wide);
    const Dataset data = load_dataset("npy", dir.string());
    EXPECT_EQ(data.shape.classes, 5) << descr;
    EXPECT_EQ(data.train.labels[7].item<std::int64_t>(), 2) << descr;
  }
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
  // Test images of another shape are refused with both shapes said.
  const fs::path other = dir / "other";
  fs::create_directories(other);
  write_npy((other / "images.npy").string(), "|u1", "(7, 28, 27)", 7 * 28 * 27, '\x20');
  write_npy((other / "labels.npy").string(), "|u1", "(7,)", 7, '\x01');
  try {
    load_dataset("npy", dir.string(), DataOptions{0, other.string(), {}, {}});
    ADD_FAILURE() << "test images of another shape were taken";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what())
                  .find("its images are [1, 28, 27] (C, H, W) where those of " + images +
                        " are [1, 28, 28]"),
              std::string::npos)
        << error.what();
  }
  // --data names the folder, not a file in it.
  std::string file = images;
  try {
    detect_dataset(file);
    ADD_FAILURE() << "a file was taken for the data set's folder";
  } catch (const InputError& error) {
    EXPECT_NE(
        std::string(error.what()).find("--data: not a folder; accepted: the data set's folder"),
        std::string::npos)
        << error.what();
  }
  fs::remove_all(dir);
}

// A test set of another element type than the training images (floats beside bytes) was taken
// and scaled as the training images are (bytes / 255): evaluated on other numbers than those
// trained on, it scored chance with exit 0. Images too small for the models' convolutions were
// an internal failure in the first step; an images.npy that is a FIFO held the launch forever.
TEST(Datasets, NumPyTestImagesOfAnotherTypeTooSmallImagesAndAFifoAreRefused) {
  const fs::path dir =
      fs::temp_directory_path() / ("transient-npy-refused-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  write_npy((dir / "images.npy").string(), "|u1", "(20, 28, 28)", 20 * 28 * 28, '\x10');
  write_npy((dir / "labels.npy").string(), "|u1", "(20,)", 20, '\x01');
  const std::string test_images = (dir / "test_images.npy").string();
  write_npy(test_images, "<f4", "(5, 28, 28)", 5 * 28 * 28 * 4, '\0');
  write_npy((dir / "test_labels.npy").string(), "|u1", "(5,)", 5, '\x01');
  const std::string typed = refusal_of([&] { load_dataset("npy", dir.string()); });
  EXPECT_NE(typed.find(test_images + ": its element type is float32 where that of " +
                       (dir / "images.npy").string() + " is uint8; accepted: the same type"),
            std::string::npos)
      << typed;

  const fs::path tiny = dir / "tiny";
  fs::create_directories(tiny);
  write_npy((tiny / "images.npy").string(), "|u1", "(40, 3, 3)", 40 * 3 * 3, '\x10');
  write_npy((tiny / "labels.npy").string(), "|u1", "(40,)", 40, '\x01');
  const std::string small = refusal_of([&] { dataset_shape("npy", tiny.string()); });
  EXPECT_NE(
      small.find((tiny / "images.npy").string() + ": images of 3x3 pixels; accepted: at least 8x8"),
      std::string::npos)
      << small;

  // A NaN or an infinity among float pixels is refused naming the sample: it made that step's
  // loss NaN, reported as a divergence with the advice to lower --lr (and rolled back to).
  const fs::path non_finite = dir / "non-finite";
  fs::create_directories(non_finite);
  write_npy((non_finite / "labels.npy").string(), "|u1", "(20,)", 20, '\x01');
  for (const auto& [bits, sample] : {std::pair{std::string("\x00\x00\xc0\x7f", 4), 3},
                                     std::pair{std::string("\x00\x00\x80\xff", 4), 17}}) {
    std::string pixels(20 * 8 * 8 * 4, '\0');
    pixels.replace(static_cast<std::size_t>(sample * 8 * 8 * 4 + 12), 4, bits);
    testing::write_npy_file((non_finite / "images.npy").string(), "<f4", "(20, 8, 8)", pixels);
    const std::string refused = refusal_of([&] { load_dataset("npy", non_finite.string()); });
    EXPECT_NE(
        refused.find((non_finite / "images.npy").string() + ": sample " + std::to_string(sample) +
                     " holds NaN or an infinity; accepted: finite pixel values"),
        std::string::npos)
        << refused;
  }

  // A FIFO with a writer and a header's first bytes in it: opened as a file it would be read
  // (and without a writer waited on forever).
  const fs::path fifo = dir / "fifo";
  fs::create_directories(fifo);
  ASSERT_EQ(::mkfifo((fifo / "images.npy").c_str(), 0644), 0);
  const int writer = ::open((fifo / "images.npy").c_str(), O_RDWR | O_NONBLOCK);
  ASSERT_GE(writer, 0);
  ASSERT_EQ(::write(writer, "\x93NUMPY", 6), 6);
  const std::string piped = refusal_of([&] { dataset_shape("npy", fifo.string()); });
  ::close(writer);
  EXPECT_NE(piped.find((fifo / "images.npy").string() + ": not a regular file"), std::string::npos)
      << piped;
  fs::remove_all(dir);
}

// Fashion-MNIST's files are checked before any worker starts, as far as is cheap: images of
// another size, a label file of another count than its images, no images at all. The launcher
// read only the training labels' count, and each of these failed in the workers after the job
// directory was written (no images: an internal failure).
TEST(Datasets, FashionMnistsFilesAreCheckedBeforeTheWorkersStart) {
  const fs::path dir = fashion_mnist_in("transient-fashion-checked", 5, 3);
  EXPECT_EQ(FashionMnist::count_samples(dir.string()),
            std::make_pair(std::int64_t{5}, std::int64_t{3}));
  const std::string images = (dir / "train-images-idx3-ubyte.gz").string();
  const std::string test_labels = (dir / "t10k-labels-idx1-ubyte.gz").string();
  auto refused = [&] { return refusal_of([&] { FashionMnist::count_samples(dir.string()); }); };

  fs::remove(images);
  append_gzip_member(images, big_endian(0x803) + big_endian(5) + big_endian(27) + big_endian(28) +
                                 std::string(5 * 27 * 28, '\0'));
  EXPECT_NE(refused().find(images + ": images are 27x28; accepted: 28x28"), std::string::npos)
      << refused();

  fs::remove(images);
  append_gzip_member(images, big_endian(0x803) + big_endian(0) + big_endian(28) + big_endian(28));
  EXPECT_NE(refused().find(images + ": holds no images"), std::string::npos) << refused();

  fs::remove(images);
  append_gzip_member(images, big_endian(0x803) + big_endian(5) + big_endian(28) + big_endian(28) +
                                 std::string(5 * 28 * 28, '\0'));
  fs::remove(test_labels);
  append_gzip_member(test_labels, big_endian(0x801) + big_endian(2) + std::string(2, '\1'));
  EXPECT_NE(refused().find(test_labels + ": holds 2 labels for 3 images in "), std::string::npos)
      << refused();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace transient::train
