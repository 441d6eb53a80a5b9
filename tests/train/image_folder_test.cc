// Image folders without processes: the layout, both decoders, corrupt files, the transforms'
// reproducibility and the loader threads.
#include "transient/train/image_folder.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <numeric>
#include <string>

#include "common/refusal.h"
#include "train/image_files.h"
#include "transient/core/error.h"
#include "transient/train/datasets.h"

namespace transient::train {
namespace {

namespace fs = std::filesystem;
using testing::write_image_folder;
using testing::write_jpeg;
using testing::write_png;
using transient::testing::refusal_of;

class ImageFolderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("transient-images-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

TEST_F(ImageFolderTest, ClassesAreSortedSubFoldersAndOtherFilesAreIgnored) {
  write_image_folder(path("set"), 3, 4, 16, 1);
  std::ofstream(path("set/class-01/notes.txt")) << "not an image";
  const auto folder = scan_image_folder(path("set"));
  EXPECT_EQ(folder.classes, (std::vector<std::string>{"class-00", "class-01", "class-02"}));
  ASSERT_EQ(folder.files.size(), 12u);
  EXPECT_EQ(folder.files[0].path, path("set/class-00/0.png"));
  EXPECT_EQ(folder.files[1].path, path("set/class-00/1.jpg"));
  EXPECT_EQ(folder.files[4].label, 1);
  // The last tenth of each class, at least one of each, is held out.
  const auto [kept, held] = hold_out(folder, 1);
  EXPECT_EQ(kept.files.size(), 9u);
  ASSERT_EQ(held.files.size(), 3u);
  EXPECT_EQ(held.files[2].path, path("set/class-02/3.png"));
}

// As torchvision's ImageFolder: the images in a class folder's own sub-folders are the class's
// (they were left out), folder by folder in the sorted order of their paths ("a-b" before "a/x":
// '-' sorts before '/'), each folder's images by name. A class whose images are all below
// sub-folders is a class. A folder reached again through a link is walked once.
TEST_F(ImageFolderTest, ImagesInAClassesSubFoldersAreItsInTorchvisionsOrder) {
  const auto image = torch::zeros({4, 4, 3}, torch::kUInt8);
  for (const std::string name : {"cat/b.png", "cat/a.png", "cat/a/2.png", "cat/a/x/1.png",
                                 "cat/a-b/3.png", "dog/only/4.png", "dog/only/deeper/5.png"}) {
    fs::create_directories(fs::path(path("set/" + name)).parent_path());
    write_png(path("set/" + name), image);
  }
  std::ofstream(path("set/cat/a/notes.txt")) << "not an image";
  fs::create_directory_symlink("../..", path("set/cat/a/x/up"));  // back to cat/a: a loop
  fs::create_directory_symlink("a", path("set/cat/link"));        // cat/a again
  std::string dir = path("set");
  EXPECT_EQ(detect_dataset(dir), "image-folder");
  const auto folder = scan_image_folder(path("set"));
  EXPECT_EQ(folder.classes, (std::vector<std::string>{"cat", "dog"}));
  std::vector<std::pair<std::string, std::int64_t>> files;
  for (const auto& file : folder.files) {
    files.emplace_back(fs::relative(file.path, path("set")).string(), file.label);
  }
  const std::vector<std::pair<std::string, std::int64_t>> expected = {{"cat/a.png", 0},
                                                                      {"cat/b.png", 0},
                                                                      {"cat/a/2.png", 0},
                                                                      {"cat/a-b/3.png", 0},
                                                                      {"cat/a/x/1.png", 0},
                                                                      {"dog/only/4.png", 1},
                                                                      {"dog/only/deeper/5.png", 1}};
  EXPECT_EQ(files, expected);
}

TEST_F(ImageFolderTest, ABadLayoutIsOneErrorNamingTheFolder) {
  EXPECT_THROW(scan_image_folder(path("missing")), InputError);
  fs::create_directories(path("flat"));
  write_png(path("flat/a.png"), torch::zeros({4, 4, 3}, torch::kUInt8));
  try {
    scan_image_folder(path("flat"));
    ADD_FAILURE() << "a folder without class sub-folders was taken";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("has no class sub-folders"), std::string::npos);
  }
  fs::create_directories(path("flat/empty-class"));
  fs::create_directories(path("flat/full-class"));
  write_png(path("flat/full-class/a.png"), torch::zeros({4, 4, 3}, torch::kUInt8));
  try {
    scan_image_folder(path("flat"));
    ADD_FAILURE() << "a class without images was taken";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("empty-class"), std::string::npos) << error.what();
  }
}

TEST_F(ImageFolderTest, JpegAndPngDecodeToRgbAndCorruptFilesAreNamedNotThrown) {
  const auto picture = torch::randint(0, 256, {20, 30, 3}, torch::kUInt8);
  write_png(path("rgb.png"), picture);
  write_png(path("grey.png"), picture.narrow(2, 0, 1));
  write_png(path("rgba.png"), torch::cat({picture, torch::full({20, 30, 1}, 7, torch::kUInt8)}, 2));
  write_jpeg(path("photo.jpg"), torch::full({20, 30, 3}, 120, torch::kUInt8), 100);
  std::string why;
  EXPECT_TRUE(torch::equal(*decode_image(path("rgb.png"), &why), picture));
  EXPECT_TRUE(torch::equal(*decode_image(path("rgba.png"), &why), picture));  // alpha dropped
  const auto grey = *decode_image(path("grey.png"), &why);
  EXPECT_EQ(grey.sizes(), (std::vector<std::int64_t>{20, 30, 3}));
  EXPECT_TRUE(torch::equal(grey.select(2, 1), picture.select(2, 0)));
  const auto photo = *decode_image(path("photo.jpg"), &why);
  EXPECT_EQ(photo.sizes(), (std::vector<std::int64_t>{20, 30, 3}));
  EXPECT_LE((photo.to(torch::kInt32) - 120).abs().max().item<int>(), 2);
  // Truncated, garbage, and not an image at all.
  std::ifstream in(path("photo.jpg"), std::ios::binary);
  const std::string bytes{std::istreambuf_iterator<char>(in), {}};
  std::ofstream(path("cut.jpg"), std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  std::ofstream(path("garbage.jpg"), std::ios::binary) << "\xff\xd8\xff\xe0 not really";
  std::ofstream(path("text.png")) << "hello";
  // Extraneous bytes before a marker, a warning of libjpeg's that PIL decodes through (as it does
  // every warning but the data's premature end): the image, not a file skipped.
  const auto dqt = bytes.find("\xff\xdb");
  ASSERT_NE(dqt, std::string::npos);
  std::ofstream(path("extraneous.jpg"), std::ios::binary)
      << bytes.substr(0, dqt) + std::string(2, '\0') + bytes.substr(dqt);
  const auto extraneous = decode_image(path("extraneous.jpg"), &why);
  ASSERT_TRUE(extraneous.has_value()) << why;
  EXPECT_TRUE(torch::equal(*extraneous, photo));
  for (const char* name : {"cut.jpg", "garbage.jpg", "text.png", "absent.png"}) {
    why.clear();
    EXPECT_FALSE(decode_image(path(name), &why).has_value()) << name;
    EXPECT_FALSE(why.empty()) << name;
  }
}

// `bytes` with the width and height of its JPEG frame (SOF0) set to `side`.
std::string with_jpeg_side(std::string bytes, int side) {
  const auto sof = bytes.find("\xff\xc0");
  EXPECT_NE(sof, std::string::npos);
  for (const std::size_t at : {sof + 5, sof + 7}) {  // height, then width, big-endian
    bytes[at] = static_cast<char>(side >> 8);
    bytes[at + 1] = static_cast<char>(side & 0xff);
  }
  return bytes;
}

// A PNG chunk: length, type, data, CRC-32 of type and data.
std::string png_chunk(const std::string& type, const std::string& data) {
  auto big_endian = [](std::uint32_t v) {
    return std::string{static_cast<char>(v >> 24), static_cast<char>(v >> 16),
                       static_cast<char>(v >> 8), static_cast<char>(v)};
  };
  const std::string typed = type + data;
  const auto crc = static_cast<std::uint32_t>(
      crc32(0, reinterpret_cast<const Bytef*>(typed.data()), static_cast<uInt>(typed.size())));
  return big_endian(static_cast<std::uint32_t>(data.size())) + typed + big_endian(crc);
}

// A few bytes that declare a terapixel (a decompression bomb) are refused by their size, before
// its memory is taken: the worker failed the job with an allocation error of 3.24 TB before.
// A PNG of one row of `width` pixels: IHDR of `depth` and `colour`, `extra` chunks, the row's
// `samples` (big-endian bytes as the file holds them) after its filter byte 0.
std::string one_row_png(int width, int depth, int colour, const std::string& samples,
                        const std::string& extra = "") {
  const std::string ihdr{'\0', '\0', '\0', static_cast<char>(width), '\0',
                         '\0', '\0', '\1', static_cast<char>(depth), static_cast<char>(colour),
                         '\0', '\0', '\0'};
  const std::string raw = std::string(1, '\0') + samples;
  std::string packed(compressBound(static_cast<uLong>(raw.size())), '\0');
  uLongf size = static_cast<uLongf>(packed.size());
  compress(reinterpret_cast<Bytef*>(packed.data()), &size,
           reinterpret_cast<const Bytef*>(raw.data()), static_cast<uLong>(raw.size()));
  packed.resize(size);
  return "\x89PNG\r\n\x1a\n" + png_chunk("IHDR", ihdr) + extra + png_chunk("IDAT", packed) +
         png_chunk("IEND", "");
}

// 16-bit samples and a gAMA chunk decode to the bytes PIL's convert("RGB") gives (torchvision's
// default loader): the high byte, no gamma. libpng's simplified API took 16-bit samples for
// linear light and a gAMA chunk's gamma, and converted both to sRGB (a mean of 0.618 where PIL
// gives 0.390): a model evaluated in PyTorch saw other inputs than it was trained on.
TEST_F(ImageFolderTest, SixteenBitAndGammaPngsDecodeAsPillowGivesThem) {
  // (100, 50, 200) and (0, 255, 1) with low bytes that a rounding would carry.
  const std::string rgb16{"\x64\x80\x32\x01\xc8\xff\x00\xff\xff\x80\x01\x7f", 12};
  std::ofstream(path("rgb16.png"), std::ios::binary) << one_row_png(2, 16, 2, rgb16);
  std::string why;
  const auto wide = decode_image(path("rgb16.png"), &why);
  ASSERT_TRUE(wide.has_value()) << why;
  EXPECT_TRUE(
      torch::equal(*wide, torch::tensor({100, 50, 200, 0, 255, 1}, torch::kUInt8).view({1, 2, 3})))
      << *wide;
  // gAMA of 1.0 (100000): the samples as written.
  const std::string gamma = png_chunk("gAMA", std::string{"\x00\x01\x86\xa0", 4});
  std::ofstream(path("gamma.png"), std::ios::binary)
      << one_row_png(2, 8, 2, std::string{"\x64\x32\xc8\x00\xff\x01", 6}, gamma);
  const auto corrected = decode_image(path("gamma.png"), &why);
  ASSERT_TRUE(corrected.has_value()) << why;
  EXPECT_TRUE(torch::equal(*corrected,
                           torch::tensor({100, 50, 200, 0, 255, 1}, torch::kUInt8).view({1, 2, 3})))
      << *corrected;
  // 16-bit grey: its high byte on every channel (PIL clips such samples to 255, a white image).
  std::ofstream(path("grey16.png"), std::ios::binary)
      << one_row_png(1, 16, 0, std::string{"\x64\x80", 2});
  const auto grey = decode_image(path("grey16.png"), &why);
  ASSERT_TRUE(grey.has_value()) << why;
  EXPECT_TRUE(torch::equal(*grey, torch::full({1, 1, 3}, 100, torch::kUInt8))) << *grey;
  // A palette with a transparent entry: its colours (PIL's convert("RGB") drops transparency).
  const std::string palette = png_chunk("PLTE", std::string{"\x0a\x14\x1e\xc8\x64\x32", 6}) +
                              png_chunk("tRNS", std::string{"\x00", 1});
  std::ofstream(path("palette.png"), std::ios::binary)
      << one_row_png(2, 8, 3, std::string{"\x00\x01", 2}, palette);
  const auto coloured = decode_image(path("palette.png"), &why);
  ASSERT_TRUE(coloured.has_value()) << why;
  EXPECT_TRUE(torch::equal(
      *coloured, torch::tensor({10, 20, 30, 200, 100, 50}, torch::kUInt8).view({1, 2, 3})))
      << *coloured;
}

// A CMYK JPEG (ImageNet's training set holds a few) decodes to the RGB that PIL's
// convert("RGB") gives, where it was left out as an image that does not decode. The expected
// pixels are PIL 13.0's of this file (YCCK, as libjpeg-turbo writes CMYK): two 8x8 blocks of one
// colour each.
TEST_F(ImageFolderTest, ACmykJpegDecodesAsPillowGivesIt) {
  auto cmyk = torch::empty({8, 16, 4}, torch::kUInt8);
  cmyk.narrow(1, 0, 8).copy_(torch::tensor({255, 128, 0, 200}, torch::kUInt8));
  cmyk.narrow(1, 8, 8).copy_(torch::tensor({30, 220, 170, 90}, torch::kUInt8));
  write_jpeg(path("cmyk.jpg"), cmyk, 100);
  std::string why;
  const auto rgb = decode_image(path("cmyk.jpg"), &why);
  ASSERT_TRUE(rgb.has_value()) << why;
  ASSERT_EQ(rgb->sizes(), (std::vector<std::int64_t>{8, 16, 3}));
  auto expected = torch::empty({8, 16, 3}, torch::kUInt8);
  expected.narrow(1, 0, 8).copy_(torch::tensor({200, 100, 0}, torch::kUInt8));
  expected.narrow(1, 8, 8).copy_(torch::tensor({10, 78, 60}, torch::kUInt8));
  EXPECT_TRUE(torch::equal(*rgb, expected)) << *rgb;
}

TEST_F(ImageFolderTest, AnImageOfMorePixelsThanPillowAcceptsIsRefusedByItsHeader) {
  std::string why;
  const std::string ihdr{"\x00\x0d\xbb\xa0\x00\x0d\xbb\xa0\x08\x02\x00\x00\x00",
                         13};  // 900000^2 RGB
  std::ofstream(path("bomb.png"), std::ios::binary)
      << "\x89PNG\r\n\x1a\n" + png_chunk("IHDR", ihdr) + png_chunk("IDAT", "") +
             png_chunk("IEND", "");
  EXPECT_FALSE(decode_image(path("bomb.png"), &why).has_value());
  EXPECT_EQ(why,
            "a PNG image of 900000x900000 pixels; accepted: at most 89478485 pixels (Pillow's "
            "decompression-bomb limit)");
  write_jpeg(path("small.jpg"), torch::full({20, 30, 3}, 120, torch::kUInt8), 100);
  std::ifstream in(path("small.jpg"), std::ios::binary);
  const std::string small{std::istreambuf_iterator<char>(in), {}};
  std::ofstream(path("bomb.jpg"), std::ios::binary) << with_jpeg_side(small, 65000);
  why.clear();
  EXPECT_FALSE(decode_image(path("bomb.jpg"), &why).has_value());
  EXPECT_NE(why.find("a JPEG image of 65000x65000 pixels"), std::string::npos) << why;
  // At the bound's side (9459 x 9459 is under it) the header alone is not refused: its data of
  // 20 x 30 pixels ends at its end-of-image marker, the rest grey, as PIL decodes it.
  std::ofstream(path("large.jpg"), std::ios::binary) << with_jpeg_side(small, 9459);
  why.clear();
  const auto large = decode_image(path("large.jpg"), &why);
  ASSERT_TRUE(large.has_value()) << why;
  EXPECT_EQ(large->sizes(), (std::vector<std::int64_t>{9459, 9459, 3}));
}

TEST_F(ImageFolderTest, TrainingTransformsDependOnSeedEpochAndIndexOnly) {
  const auto image = torch::randint(0, 256, {40, 48, 3}, torch::kUInt8);
  for (const auto augment : {Augment::kCrop, Augment::kResizedCrop}) {
    ImageTransform transform;
    transform.size = 32;
    transform.augment = augment;
    const auto a = transform_image(image, transform, true, 3, 17);
    EXPECT_EQ(a.sizes(), (std::vector<std::int64_t>{3, 32, 32}));
    EXPECT_TRUE(torch::equal(a, transform_image(image, transform, true, 3, 17)));
    // Another epoch or sample draws another crop (with 8x8 or more choices, these differ).
    EXPECT_FALSE(torch::equal(a, transform_image(image, transform, true, 4, 17)) &&
                 torch::equal(a, transform_image(image, transform, true, 5, 17)));
    transform.seed = 2;
    EXPECT_FALSE(torch::equal(a, transform_image(image, transform, true, 3, 17)) &&
                 torch::equal(a, transform_image(image, transform, true, 3, 18)));
  }
  // The test transform: the shorter side scaled to S, the centre; no randomness.
  ImageTransform transform;
  transform.size = 16;
  transform.mean = {0, 0, 0};
  transform.stdev = {1, 1, 1};
  const auto flat = torch::full({16, 16, 3}, 51, torch::kUInt8);
  EXPECT_TRUE(torch::allclose(transform_image(flat, transform, false, 0, 0),
                              torch::full({3, 16, 16}, 0.2)));
  EXPECT_TRUE(torch::equal(transform_image(image, transform, false, 1, 2),
                           transform_image(image, transform, false, 9, 3)));
}

TEST_F(ImageFolderTest, TheLoaderLeavesACorruptImageOutAndNamesIt) {
  write_image_folder(path("set"), 2, 10, 24, 2);
  std::ofstream(path("set/class-01/5.jpg"), std::ios::binary) << "\xff\xd8\xff\xe0 broken";
  const auto folder = scan_image_folder(path("set"));
  ImageTransform transform;
  transform.size = 24;
  ImageLoader threads(transform, 3);
  ImageLoader one(transform, 1);
  std::vector<std::int64_t> all(folder.files.size());
  std::iota(all.begin(), all.end(), 0);
  const auto batch = threads.load(folder, all, 2, true).get();
  EXPECT_EQ(batch.images.size(0), 19);
  EXPECT_EQ(batch.labels.size(0), 19);
  EXPECT_EQ(batch.labels.sum().item<std::int64_t>(), 9);  // class 1 lost one sample
  ASSERT_EQ(batch.skipped.size(), 1u);
  EXPECT_EQ(batch.skipped[0].first, path("set/class-01/5.jpg"));
  // However many threads decode it, a batch is the same.
  EXPECT_TRUE(torch::equal(batch.images, one.load(folder, all, 2, true).get().images));
  EXPECT_EQ(threads.load(folder, {}, 0, true).get().images.size(0), 0);
}

TEST_F(ImageFolderTest, DataSetFoundByWhatTheFolderHolds) {
  write_image_folder(path("photos/train"), 12, 3, 20, 3);
  write_image_folder(path("photos/val"), 12, 1, 20, 4);
  std::string dir = path("photos");
  EXPECT_EQ(detect_dataset(dir), "image-folder");
  const auto shape = dataset_shape("image-folder", dir);
  EXPECT_EQ(shape.classes, 12);  // more than ten classes
  EXPECT_EQ(shape.height, 20);   // the first image's side
  EXPECT_EQ(count_samples("image-folder", dir).train, 36);
  EXPECT_EQ(count_samples("image-folder", dir).test, 12);
  const auto data = load_dataset("image-folder", dir, DataOptions{16, "", {}, {}});
  EXPECT_EQ(data.train_size(), 36);
  EXPECT_EQ(data.test_size(), 12);  // photos/val
  EXPECT_EQ(data.transform.size, 16);
  // --val-data: a validation folder of its own, whose classes must be the training set's.
  write_image_folder(path("other-val"), 12, 2, 20, 5);
  EXPECT_EQ(
      load_dataset("image-folder", dir, DataOptions{0, path("other-val"), {}, {}}).test_size(), 24);
  write_image_folder(path("fewer"), 3, 2, 20, 6);
  EXPECT_THROW(load_dataset("image-folder", dir, DataOptions{0, path("fewer"), {}, {}}),
               InputError);
  // As many classes, but not the same: the refusal names them (it said "12 sub-folders" and
  // "(12)" before).
  write_image_folder(path("renamed"), 12, 1, 20, 8);
  fs::rename(path("renamed/class-03"), path("renamed/class-3"));
  try {
    load_dataset("image-folder", dir, DataOptions{0, path("renamed"), {}, {}});
    ADD_FAILURE() << "a validation folder of other classes was taken";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what())
                  .find("its classes are not those of " + path("photos/train") +
                        ": only here class-3; only there class-03"),
              std::string::npos)
        << error.what();
  }
  // Without one, the last tenth of each class (at least one) is held out.
  write_image_folder(path("flat"), 4, 10, 20, 7);
  const auto flat = load_dataset("image-folder", path("flat"));
  EXPECT_EQ(flat.train_size(), 36);
  EXPECT_EQ(flat.test_size(), 4);
  fs::create_directories(path("cifar/cifar-10-batches-bin"));
  std::ofstream(path("cifar/cifar-10-batches-bin/data_batch_1.bin")) << "x";
  dir = path("cifar");
  EXPECT_EQ(detect_dataset(dir), "cifar10");
  EXPECT_EQ(dir, path("cifar/cifar-10-batches-bin"));
  fs::create_directories(path("nothing"));
  dir = path("nothing");
  EXPECT_THROW(detect_dataset(dir), InputError);
}

// A folder of one class trained to a loss of 0 and reported 100%; a link that loops (as a class
// or as an image) was an internal failure ("Too many levels of symbolic links"); an image whose
// shorter side is outside 8..4096 set the images' size unchecked (3x3: an internal failure in
// the model) where --image-size is refused there.
TEST_F(ImageFolderTest, OneClassALoopingLinkAndAFirstImageOfAnOddSizeAreRefusedOrLeftOut) {
  write_image_folder(path("one"), 1, 3, 16, 1);
  const std::string one = refusal_of([&] { scan_image_folder(path("one")); });
  EXPECT_NE(one.find(path("one") + ": has one class sub-folder (class-00); accepted: "),
            std::string::npos)
      << one;
  EXPECT_NE(one.find("with at least 2 classes"), std::string::npos) << one;

  write_image_folder(path("loops"), 2, 3, 16, 2);
  fs::create_directory_symlink("loop", path("loops/loop"));
  fs::create_symlink("zz.png", path("loops/class-00/zz.png"));
  std::string dir = path("loops");
  EXPECT_EQ(detect_dataset(dir), "image-folder");
  const auto folder = scan_image_folder(path("loops"));
  EXPECT_EQ(folder.classes, (std::vector<std::string>{"class-00", "class-01"}));
  EXPECT_EQ(folder.files.size(), 6u);

  // The first training image does not decode: the size is the next one's (the data set was
  // refused for it without --strict, where such an image is skipped), and with none that
  // decodes, the data set is refused saying so.
  write_image_folder(path("first-bad"), 2, 3, 16, 4);
  const auto first_file = scan_image_folder(path("first-bad")).files.front().path;
  std::ofstream(first_file, std::ios::binary | std::ios::trunc) << "junk";
  dir = path("first-bad");
  EXPECT_EQ(dataset_shape("image-folder", dir).height, 16);
  for (const auto& file : scan_image_folder(path("first-bad")).files) {
    std::ofstream(file.path, std::ios::binary | std::ios::trunc) << "junk";
  }
  const std::string none = refusal_of([&] { dataset_shape("image-folder", dir); });
  EXPECT_NE(none.find("--data: no training image decodes (" + first_file +
                      ": neither a JPEG nor a PNG image); accepted: JPEG and PNG images"),
            std::string::npos)
      << none;

  write_image_folder(path("tiny"), 2, 3, 3, 3);
  dir = path("tiny");
  const std::string tiny = refusal_of([&] { dataset_shape("image-folder", dir); });
  EXPECT_NE(tiny.find(": its shorter side is 3 pixels, the size every image is made without "
                      "--image-size; accepted: 8..4096, or --image-size S"),
            std::string::npos)
      << tiny;
  EXPECT_EQ(dataset_shape("image-folder", dir, DataOptions{8, "", {}, {}}).height, 8);
}

// An image a pixel high and a million wide (3 MB of pixels, under the decompression-bomb bound)
// made S x S was scaled whole before its centre was cropped: 64 x 64,000,000 pixels, 12 GB. Now
// only the centre square is scaled. Run under an address-space limit of 1 GiB more than this
// process holds, which the whole scaling cannot fit in.
TEST_F(ImageFolderTest, ASliverOfAnImageIsMadeSquareWithoutScalingItWhole) {
  const auto sliver = torch::full({1, 1000000, 3}, 200, torch::kUInt8);
  ImageTransform transform;
  transform.size = 64;
  transform.mean = {0, 0, 0};
  transform.stdev = {1, 1, 1};
  std::ifstream status("/proc/self/status");
  std::string line;
  std::uint64_t held_kb = 0;
  while (std::getline(status, line)) {
    if (line.rfind("VmSize:", 0) == 0) held_kb = std::stoull(line.substr(7));
  }
  ASSERT_GT(held_kb, 0u);
  rlimit before{};
  ASSERT_EQ(::getrlimit(RLIMIT_AS, &before), 0);
  rlimit bounded = before;
  bounded.rlim_cur = std::min<rlim_t>(before.rlim_max, (held_kb + (1u << 20)) * 1024);
  ASSERT_EQ(::setrlimit(RLIMIT_AS, &bounded), 0);
  torch::Tensor square;
  std::string failure;
  try {
    square = transform_image(sliver, transform, false, 0, 0);
  } catch (const std::exception& error) {
    failure = error.what();
  }
  ASSERT_EQ(::setrlimit(RLIMIT_AS, &before), 0);
  ASSERT_EQ(failure, "") << "made square, the sliver took more than 1 GiB";
  EXPECT_EQ(square.sizes(), (std::vector<std::int64_t>{3, 64, 64}));
  EXPECT_TRUE(torch::allclose(square, torch::full({3, 64, 64}, 200.0 / 255)));
}

// The centre crop's offset is Python's round() of half the excess, as torchvision's center_crop
// takes it: a 17-row image made 16 x 16 starts at row 0 (round(0.5) == 0; it started at row 1).
TEST_F(ImageFolderTest, TheCentreCropIsWhereTorchvisionsIs) {
  auto rows = torch::arange(17, torch::kUInt8).view({17, 1, 1}).expand({17, 16, 3}).contiguous();
  ImageTransform transform;
  transform.size = 16;
  transform.mean = {0, 0, 0};
  transform.stdev = {1, 1, 1};
  const auto square = transform_image(rows, transform, false, 0, 0);
  ASSERT_EQ(square.sizes(), (std::vector<std::int64_t>{3, 16, 16}));
  EXPECT_NEAR(square[0][0][0].item<float>(), 0.0, 1e-6);
  EXPECT_NEAR(square[0][15][0].item<float>(), 15.0 / 255, 1e-6);
}

// --train-subset N and --test-subset N take a data set's first N images: in the scan's order,
// class by class, that was the first classes only (training on one class of three, evaluating on
// the first). A data set's folders hold their files in turn from each class.
TEST_F(ImageFolderTest, ADataSetsFirstImagesHoldEveryClass) {
  write_image_folder(path("three/train"), 3, 6, 16, 1);
  write_image_folder(path("three/val"), 3, 2, 16, 2);
  const auto data = load_dataset("image-folder", path("three"), DataOptions{16, "", {}, {}});
  for (const auto* folder : {data.train_files.get(), data.test_files.get()}) {
    ASSERT_GE(folder->files.size(), 6u);
    std::vector<std::int64_t> first;
    for (std::size_t i = 0; i < 6; ++i) first.push_back(folder->files[i].label);
    EXPECT_EQ(first, (std::vector<std::int64_t>{0, 1, 2, 0, 1, 2})) << folder->root;
  }
  EXPECT_EQ(data.train_files->files[3].path, path("three/train/class-00/1.jpg"));
  EXPECT_EQ(data.train_size(), 18);
}

}  // namespace
}  // namespace transient::train
