// Fashion-MNIST as tensors, read from the gzipped IDX files of Debian's dataset-fashion-mnist
// (train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, t10k-*). Images stay bytes in memory
// (47 MB for the training set, per worker; less for a subset) and are normalised per batch
// (datasets.h).
#pragma once

#include <torch/torch.h>

#include <string>
#include <utility>

namespace transient::train {

struct LabelledImages {
  torch::Tensor images;  // uint8 [N, 1, 28, 28], pixel values as stored
  torch::Tensor labels;  // int64 [N], 0..9
  // When defined, int64 [N]: sample i is images[rows[i]] (an npy file mapped whole, some of
  // whose rows are held out for the test set; its images are not copied).
  torch::Tensor rows;
};

struct FashionMnist {
  LabelledImages train;  // 60000 samples
  LabelledImages test;   // 10000 samples

  // Reads the four files from `dir`: every sample, or at most the first `train_limit` and
  // `test_limit` (> 0; --train-subset, --test-subset), whose images are then decompressed no
  // further than they need (the rest of such a file is not read, and not checked). Throws
  // InputError naming the file if one is missing, unreadable, not gzip, has a wrong magic number
  // or sizes that do not match.
  static FashionMnist load(const std::string& dir, std::int64_t train_limit = 0,
                           std::int64_t test_limit = 0);

  // Throws InputError if the four files are not all in `dir` (cheap: no decompression), so that
  // the launcher can refuse before it starts any worker.
  static void require_files(const std::string& dir);

  // The number of training and test samples, with the four files checked as far as is cheap: the
  // labels files whole (tens of kilobytes), the images files' headers (28x28, at least one image,
  // as many as labels). Throws InputError naming the file that is not so.
  static std::pair<std::int64_t, std::int64_t> count_samples(const std::string& dir);
};

// The training images' mean and standard deviation, in [0, 1].
constexpr double kFashionMnistMean = 0.2860;
constexpr double kFashionMnistStd = 0.3530;

}  // namespace transient::train
