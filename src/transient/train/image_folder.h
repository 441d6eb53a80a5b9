// Image folders: the layout torchvision calls ImageFolder (ROOT/<class>/<image>, the classes in
// the order of their names, the images of a class in the order of theirs), JPEG files decoded by
// libjpeg-turbo (TurboJPEG) and PNG files by libpng, every image as RGB (grey and palette images
// converted, an alpha channel dropped), as torchvision's default loader gives them.
//
// Samples are transformed one by one, reproducibly: training samples with the randomness of
// (seed, epoch, sample index) only, whichever worker or thread takes them, so that a run is the
// same run whatever the revocations; test samples without any.
// - every image first becomes S x S: its shorter side scaled to S (bilinear, antialiased, as
//   torchvision's Resize) and the centre cropped (CenterCrop); an image already S x S is taken
//   as it is;
// - training, augment "crop": padded by S/8 pixels of zeros on each side, a random S x S crop of
//   that, flipped left-right with probability 1/2 (CIFAR's usual augmentation);
//   "resized-crop": a random part of the original image of 8%..100% of its area and aspect ratio
//   3/4..4/3 scaled to S x S, flipped with probability 1/2 (torchvision's RandomResizedCrop);
//   "none": the S x S image;
// - then scaled to [0, 1] and normalised per channel with the data set's mean and deviation.
//
// A file that does not decode (a corrupt or truncated image) is skipped where it is met: the
// loader returns the batch without it and names it.
#pragma once

#include <torch/torch.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "transient/train/option_names.h"

namespace transient::train {

struct ImageFile {
  std::string path;
  std::int64_t label = 0;  // index of its class
};

struct ImageFolder {
  std::string root;
  std::vector<std::string> classes;  // sub-folder names, sorted
  // As scanned: class by class, each class's files sorted by name; a data set's training and
  // test folders take them in turn from each class (interleaved()).
  std::vector<ImageFile> files;
};

// Whether `name` ends in .jpg, .jpeg or .png (any case).
bool is_image_file_name(const std::string& name);

// Whether `dir` holds at least one sub-folder with an image file in it.
bool looks_like_image_folder(const std::string& dir);

// Scans `root`. Throws InputError naming it when it is missing, has no class sub-folders, or
// a class has no JPEG or PNG file; files of other kinds are ignored.
ImageFolder scan_image_folder(const std::string& root);

// `folder` split in two, class by class: the last `tenths`/10 of each class's files (at least
// one when a class has two or more) go to the second. Throws InputError naming the folder if the
// second part would be empty.
std::pair<ImageFolder, ImageFolder> hold_out(const ImageFolder& folder, int tenths);

// `folder`'s files in turn from each class (the first of each class, then the second, ...; a
// class's files in their order), so that the first N (--train-subset, --test-subset) hold every
// class as the whole does, where the scan's order (class by class) held the first classes only.
ImageFolder interleaved(const ImageFolder& folder);

// The indices of the first `count` of `labels` (each >= 0) taken in turn from each class, lowest
// label first, each class's in their order: interleaved()'s order, and an npy data set's
// --train-subset and --test-subset (an npy file is often sorted by class).
std::vector<std::int64_t> in_turn_by_class(const std::vector<std::int64_t>& labels,
                                           std::size_t count);

// The most pixels an image may have: Pillow's MAX_IMAGE_PIXELS (about 9459 x 9459), above which
// it warns of a decompression bomb.
inline constexpr std::int64_t kMaxImagePixels = 89478485;

// The sides images are trained at (--image-size, or an image folder's first image's shorter
// side), and the least side of any data set's images: the models' convolutions and pooling need
// a few pixels.
inline constexpr std::int64_t kMinImageSide = 8;
inline constexpr std::int64_t kMaxImageSide = 4096;

// The decoded image [H, W, 3] uint8, or nullopt with `why` set if the file is not a JPEG or PNG
// image that decodes, or has more than kMaxImagePixels pixels.
std::optional<torch::Tensor> decode_image(const std::string& path, std::string* why);

struct ImageTransform {
  std::int64_t size = 32;  // S
  Augment augment = Augment::kCrop;
  std::vector<double> mean{0.5, 0.5, 0.5};
  std::vector<double> stdev{0.25, 0.25, 0.25};
  std::uint64_t seed = 1;
};

// `image` [H, W, 3] uint8 as a float sample [3, S, S]: the test transform, or the training one
// with the randomness of (transform.seed, epoch, index).
torch::Tensor transform_image(const torch::Tensor& image, const ImageTransform& transform,
                              bool train, std::int64_t epoch, std::int64_t index);

// The per-channel mean and deviation of up to `samples` images of `folder` (evenly spread),
// made S x S, in [0, 1] (those that do not decode left out). Throws InputError naming the folder
// if none decodes.
std::pair<std::vector<double>, std::vector<double>> channel_statistics(const ImageFolder& folder,
                                                                       std::int64_t size,
                                                                       int samples);

// A batch of samples, transformed.
struct ImageBatch {
  torch::Tensor images;                                      // float [n, 3, S, S]
  torch::Tensor labels;                                      // int64 [n]
  std::vector<std::pair<std::string, std::string>> skipped;  // path and why of each not decoded
};

// Loader threads that decode and transform batches while the caller trains: load() returns at
// once with a future of the batch, its samples shared among the threads.
class ImageLoader {
 public:
  ImageLoader(ImageTransform transform, int threads);
  ~ImageLoader();
  ImageLoader(const ImageLoader&) = delete;
  ImageLoader& operator=(const ImageLoader&) = delete;

  // Samples `indices` (into `folder`'s files, which must outlive the batch) of `epoch`,
  // transformed for training or testing.
  std::shared_future<ImageBatch> load(const ImageFolder& folder, std::vector<std::int64_t> indices,
                                      std::int64_t epoch, bool train);

 private:
  void run();

  ImageTransform transform_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace transient::train
