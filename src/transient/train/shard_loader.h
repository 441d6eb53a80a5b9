// The samples a worker trains and evaluates on, as batches on its training device: the job's data
// set (its first train_samples training samples and its first --test-subset test samples), each
// epoch's order of the training samples (the job's seed's permutation), and the samples of a
// step's shard in that order. Images are normalised (a data set in memory: on a GPU after the
// copy, a quarter of the bytes); to a GPU they go from pinned memory without waiting. Image
// folders are decoded by loader threads, the next step's shard while this one computes.
//
// Owned by the worker's training thread; not thread-safe. The constructor throws InputError for
// a data set it cannot read (naming the file); images that do not decode are left out of their
// batch and named in it.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <deque>
#include <future>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "transient/train/datasets.h"
#include "transient/train/image_folder.h"
#include "transient/train/protocol.h"
#include "transient/train/sharding.h"

namespace transient::train {

class ShardLoader {
 public:
  // Reads `job`'s data set from its --data-dir, for training on `device`.
  ShardLoader(const JobConfig& job, torch::Device device);

  const ImageShape& shape() const { return data_.shape; }
  std::int64_t test_samples() const { return test_samples_; }

  // The samples `parts` of `epoch` (ranges of its order, one after the other) for a step of
  // generation `generation`: the batch prefetch() began if it is that one, else loaded now.
  ImageBatch train_batch(std::int64_t generation, std::int64_t epoch,
                         const std::vector<Shard>& parts);

  // Whether batches are decoded (an image folder), so that decoding the next one ahead helps.
  bool decodes_ahead() const { return loader_ != nullptr; }

  // Image folders: starts decoding the samples `shard` of `epoch`, which the next train_batch of
  // `generation` will likely ask for (a guess dropped when it does not). Nothing for a data set
  // in memory.
  void prefetch(std::int64_t generation, std::int64_t epoch, const Shard& shard);

  // Test samples [begin, begin + count), not augmented.
  ImageBatch test_batch(std::int64_t begin, std::int64_t count);

 private:
  // Throws InputError naming this worker's data folder if its data set is not the one the job
  // was launched with (job.data): another count of training samples, image shape or classes.
  void check_against_the_jobs(const JobConfig& job) const;
  // `set` cut to its first `count` samples (an npy data set's in turn from each class).
  static void keep_first(LabelledImages& set, std::int64_t count, const std::string& dataset);
  // The order of the samples in `epoch`: this one's, or the next one's for a prefetch (the two
  // last asked for are kept).
  const std::vector<std::int64_t>& permutation(std::int64_t epoch);
  // The samples of ranges of `epoch`'s permutation, one range after the other.
  std::vector<std::int64_t> sample_indices(std::int64_t epoch, const std::vector<Shard>& parts);
  // `batch` on the training device, its images normalised unless the loader did (`raw` false).
  ImageBatch on_device(ImageBatch batch, bool raw) const;

  std::int64_t train_samples_;
  std::uint64_t seed_;
  torch::Device device_;
  Dataset data_;
  std::int64_t test_samples_ = 0;  // evaluated: the test set, or its first --test-subset
  torch::Tensor mean_;             // on a GPU: the data set's per-channel mean and deviation
  torch::Tensor stdev_;
  std::deque<std::pair<std::int64_t, std::vector<std::int64_t>>> permutations_;  // by epoch
  // Image folders: the loader threads, and the next step's batch decoded ahead.
  std::unique_ptr<ImageLoader> loader_;
  struct Prefetched {
    std::int64_t generation = -1;
    std::int64_t epoch = -1;
    Shard shard;
    std::shared_future<ImageBatch> batch;
  };
  std::optional<Prefetched> prefetched_;
};

}  // namespace transient::train
