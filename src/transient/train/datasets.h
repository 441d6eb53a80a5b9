// The data sets the trainer reads, by name (`--dataset`), from a directory (`--data-dir`):
// - fashion-mnist: the gzipped IDX files of Debian's dataset-fashion-mnist (fashion_mnist.h),
//   28x28 grey images;
// - cifar10: CIFAR-10's binary version (the folder cifar-10-batches-bin: data_batch_1.bin, ...,
//   test_batch.bin; each record is a label byte and 3072 bytes of 32x32 pixels, the red plane,
//   then green, then blue), 32x32 colour images. The training set is data_batch_1.bin and the
//   batches that follow it in number (data_batch_2.bin, ...) as far as they exist;
// - npy: NumPy arrays, images.npy (uint8 or float32; [N, H, W], [N, C, H, W] or [N, H, W, C] with
//   C 1 or 3) and labels.npy (integers from 0, [N]; the classes are the largest + 1, from 2 to
//   kMaxClasses, and the test labels must be among them), memory-mapped: the images are never
//   read whole into memory. The test set is test_images.npy and test_labels.npy if both are there,
//   else the last tenth of the samples (held out from training). Bytes are scaled to [0, 1] and
//   centred on 0.5 (deviation 0.5); float32 images are taken as they are.
// - image-folder: JPEG and PNG files, one sub-folder per class (image_folder.h), made S x S
//   (--image-size; the first training image's shorter side by default), any number of classes.
//   The training set is DIR/train if there is one (validation then DIR/val or DIR/test), else
//   DIR itself; without a validation folder the last tenth of each class is held out. The files
//   are decoded and augmented by loader threads as batches are drawn; the per-channel mean and
//   deviation are those of up to 256 training images spread over the set.
// `--val-data DIR` gives a validation set of the same kind of its own.
// Images stay bytes in memory and are normalised per batch with the data set's per-channel mean
// and standard deviation (normalise()).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "transient/train/fashion_mnist.h"
#include "transient/train/image_folder.h"
#include "transient/train/models.h"

namespace transient::train {

struct DataOptions {
  std::int64_t image_size = 0;  // image folders: S (0 = the first training image's shorter side)
  std::string val_dir;          // a validation set of its own ("" = the data set's, or held out)
  // Image folders: the per-channel mean and deviation, as image_statistics() gave them to the
  // launcher (empty: load_dataset takes them from the images itself).
  std::vector<double> mean;
  std::vector<double> stdev;
  // Fashion-MNIST: read only the first N training and test samples (0 = all): --train-subset
  // and --test-subset, which use no more.
  std::int64_t train_limit = 0;
  std::int64_t test_limit = 0;
};

struct Dataset {
  LabelledImages train;  // uint8 [N, C, H, W], labels int64 [N] in 0..shape.classes-1
  LabelledImages test;
  ImageShape shape;           // of one image
  double divisor = 255;       // images / divisor are in [0, 1] (1: float images as they are)
  std::vector<double> mean;   // per channel, of the training images in [0, 1]
  std::vector<double> stdev;  // per channel
  // Image folders: the files (train and test above stay empty), decoded as batches are drawn.
  std::shared_ptr<const ImageFolder> train_files;
  std::shared_ptr<const ImageFolder> test_files;
  ImageTransform transform;  // its seed is the job's, set by the worker
  bool from_files() const { return train_files != nullptr; }
  std::int64_t train_size() const;
  std::int64_t test_size() const;
};

// The names `--dataset` accepts, for messages: "fashion-mnist, cifar10, npy, image-folder".
std::string dataset_names();

// The data set in `dir`, by what it holds: images.npy (npy), data_batch_1.bin (cifar10; also in
// a sub-folder cifar-10-batches-bin, which is then the one returned in `dir`),
// train-images-idx3-ubyte.gz (fashion-mnist), or class sub-folders of images, directly or under
// train/ (image-folder). Throws InputError naming `dir` and what is accepted otherwise.
std::string detect_dataset(std::string& dir);

// Whether data set `name` has no files of its own in a default place (it needs --data-dir).
bool needs_data_dir(const std::string& name);

// The shape of one image of data set `name` in `dir` (read from the files' headers where the name
// does not say it). Throws InputError for an unknown name or a file it cannot read.
ImageShape dataset_shape(const std::string& name, const std::string& dir,
                         const DataOptions& options = {});

// Reads data set `name` from `dir`. Throws InputError naming the file and what is wrong: missing,
// unreadable, a size that is not a whole number of records, a label outside the data set's classes.
Dataset load_dataset(const std::string& name, const std::string& dir,
                     const DataOptions& options = {});

// How many samples a data set holds, whole (before --train-subset and --test-subset).
struct SampleCounts {
  std::int64_t train = 0;
  std::int64_t test = 0;
};

// The number of training and test samples, from the files' headers or sizes (cheap; CIFAR-10's
// labels are read and checked too, so that a bad one is refused before any worker starts);
// throws InputError as load_dataset does.
SampleCounts count_samples(const std::string& name, const std::string& dir,
                           const DataOptions& options = {});

// An image-folder data set's per-channel mean and deviation: those of up to 256 training images
// spread over the set, made S x S (image_folder.h's channel_statistics).
std::pair<std::vector<double>, std::vector<double>> image_statistics(const std::string& dir,
                                                                     const DataOptions& options);

// Decodes every image of an image-folder data set with `threads` threads; throws InputError
// naming the first file that does not decode (--strict).
void check_every_image(const std::string& dir, const DataOptions& options, int threads);

// Images [N, C, H, W] to float32, scaled to [0, 1] (bytes) and with the data set's per-channel
// mean and deviation removed.
torch::Tensor normalise(const Dataset& data, const torch::Tensor& images);

}  // namespace transient::train
