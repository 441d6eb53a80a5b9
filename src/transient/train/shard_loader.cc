#include "transient/train/shard_loader.h"

#include <numeric>
#include <string>

#include "transient/core/error.h"

namespace transient::train {

ShardLoader::ShardLoader(const JobConfig& job, torch::Device device)
    : train_samples_(job.train_samples), seed_(job.options.seed), device_(device) {
  const TrainOptions& options = job.options;
  data_ = load_dataset(options.dataset, options.data_dir,
                       DataOptions{options.image_size, options.val_data, options.image_mean,
                                   options.image_std, options.train_subset, options.test_subset});
  check_against_the_jobs(job);
  if (data_.from_files()) {
    data_.transform.seed = options.seed;
    data_.transform.augment = options.augment;
    loader_ = std::make_unique<ImageLoader>(data_.transform, options.loader_threads);
  } else {
    keep_first(data_.train, train_samples_, options.dataset);
  }
  if (options.test_subset > 0 && options.test_subset < data_.test_size()) {
    test_samples_ = options.test_subset;
  } else {
    test_samples_ = data_.test_size();
  }
  if (!data_.from_files()) keep_first(data_.test, test_samples_, options.dataset);
  if (device_.is_cuda()) {
    const auto channels = static_cast<std::int64_t>(data_.mean.size());
    mean_ = torch::tensor(data_.mean, torch::kFloat32).view({1, channels, 1, 1}).to(device_);
    stdev_ = torch::tensor(data_.stdev, torch::kFloat32).view({1, channels, 1, 1}).to(device_);
  }
}

void ShardLoader::keep_first(LabelledImages& set, std::int64_t count, const std::string& dataset) {
  if (count >= set.labels.size(0)) return;
  // An npy subset is its first samples in turn from each class (image_folder.h); Fashion-MNIST's
  // and CIFAR-10's files are in no order of class, and Fashion-MNIST's workers read no more than
  // the first samples.
  if (dataset == "npy") {
    const auto labels = set.labels.contiguous();
    const std::vector<std::int64_t> label_list(labels.data_ptr<std::int64_t>(),
                                               labels.data_ptr<std::int64_t>() + labels.numel());
    const auto taken =
        torch::tensor(in_turn_by_class(label_list, static_cast<std::size_t>(count)), torch::kInt64);
    if (set.rows.defined()) {
      set.rows = set.rows.index_select(0, taken);
    } else {
      set.images = set.images.index_select(0, taken);
    }
    set.labels = set.labels.index_select(0, taken);
    return;
  }
  if (set.rows.defined()) {
    set.rows = set.rows.narrow(0, 0, count);
  } else {
    set.images = set.images.narrow(0, 0, count);
  }
  set.labels = set.labels.narrow(0, 0, count);
}

void ShardLoader::check_against_the_jobs(const JobConfig& job) const {
  const DataFacts& theirs = job.data;
  if (theirs.train_samples <= 0) return;  // a coordinator that does not say
  const ImageShape& mine = data_.shape;
  auto shape_text = [](std::int64_t c, std::int64_t h, std::int64_t w, std::int64_t classes) {
    return std::to_string(c) + "x" + std::to_string(h) + "x" + std::to_string(w) + " images of " +
           std::to_string(classes) + " classes";
  };
  std::string differs;
  if (mine.channels != theirs.channels || mine.height != theirs.height ||
      mine.width != theirs.width || mine.classes != theirs.classes) {
    differs = shape_text(mine.channels, mine.height, mine.width, mine.classes) + " here, " +
              shape_text(theirs.channels, theirs.height, theirs.width, theirs.classes) +
              " in the job";
  }
  // Fashion-MNIST read with --train-subset holds only the subset (its files are Debian's).
  const bool counted = !(job.options.dataset == "fashion-mnist" && job.options.train_subset > 0);
  if (differs.empty() && counted && data_.train_size() != theirs.train_samples) {
    differs = std::to_string(data_.train_size()) + " training samples here, " +
              std::to_string(theirs.train_samples) + " in the job";
  }
  // Read only as far as the subset, a copy must still hold all of it: one of fewer samples was
  // admitted and failed the whole job at the first sample it lacked ("index out of range").
  if (differs.empty() && !counted && data_.train_size() < job.train_samples) {
    differs = std::to_string(data_.train_size()) + " training samples here, fewer than the " +
              std::to_string(job.train_samples) + " the job trains on (--train-subset)";
  }
  // The test set is split among the members by its size: a copy of another size evaluated some
  // samples twice and others never, and the accuracy reported was no one's. Fashion-MNIST read
  // with --test-subset holds only the subset, and must hold all of it.
  const std::int64_t test_wanted = job.options.test_subset > 0 && theirs.test_samples > 0
                                       ? std::min(job.options.test_subset, theirs.test_samples)
                                       : theirs.test_samples;
  const bool test_counted =
      !(job.options.dataset == "fashion-mnist" && job.options.test_subset > 0);
  const bool test_differs =
      differs.empty() && theirs.test_samples > 0 &&
      (test_counted ? data_.test_size() != theirs.test_samples : data_.test_size() < test_wanted);
  if (test_differs) {
    differs = std::to_string(data_.test_size()) + " test samples here, " +
              (test_counted ? std::to_string(theirs.test_samples) + " in the job"
                            : "fewer than the " + std::to_string(test_wanted) +
                                  " the job evaluates on (--test-subset)");
  }
  if (differs.empty()) return;
  // A test set of its own (--val-data) that differs is that folder's, not the training set's.
  const bool in_validation = test_differs && !job.options.val_data.empty();
  throw InputError(in_validation ? job.options.val_data : job.options.data_dir, 0,
                   "this worker's data set differs from the job's (" + differs +
                       "); every worker needs the same data (its folder: " +
                       (in_validation ? "--val-data" : "--data-dir") + ")");
}

ImageBatch ShardLoader::train_batch(std::int64_t generation, std::int64_t epoch,
                                    const std::vector<Shard>& parts) {
  if (loader_) {
    std::optional<Prefetched> ahead;
    ahead.swap(prefetched_);
    if (ahead && ahead->generation == generation && ahead->epoch == epoch && parts.size() == 1 &&
        ahead->shard.begin == parts[0].begin && ahead->shard.count == parts[0].count) {
      return on_device(ahead->batch.get(), false);
    }
    if (ahead) ahead->batch.wait();  // its threads are done with it before it is dropped
    return on_device(
        loader_->load(*data_.train_files, sample_indices(epoch, parts), epoch, true).get(), false);
  }
  ImageBatch batch;
  auto index = torch::tensor(sample_indices(epoch, parts), torch::kInt64);
  const auto rows = data_.train.rows.defined() ? data_.train.rows.index_select(0, index) : index;
  if (device_.is_cuda()) {  // gathered straight into pinned memory, whence it is copied
    auto sizes = data_.train.images.sizes().vec();
    sizes[0] = index.size(0);
    batch.images = torch::empty(sizes, data_.train.images.options().pinned_memory(true));
    torch::index_select_out(batch.images, data_.train.images, 0, rows);
  } else {
    batch.images = data_.train.images.index_select(0, rows);
  }
  batch.labels = data_.train.labels.index_select(0, index);
  return on_device(std::move(batch), true);
}

void ShardLoader::prefetch(std::int64_t generation, std::int64_t epoch, const Shard& shard) {
  if (!loader_) return;
  prefetched_ =
      Prefetched{generation, epoch, shard,
                 loader_->load(*data_.train_files, sample_indices(epoch, {shard}), epoch, true)};
}

ImageBatch ShardLoader::test_batch(std::int64_t begin, std::int64_t count) {
  if (loader_) {
    std::vector<std::int64_t> indices(static_cast<std::size_t>(count));
    std::iota(indices.begin(), indices.end(), begin);
    return on_device(loader_->load(*data_.test_files, std::move(indices), 0, false).get(), false);
  }
  ImageBatch batch;
  batch.images = data_.test.images.narrow(0, begin, count);
  batch.labels = data_.test.labels.narrow(0, begin, count);
  return on_device(std::move(batch), true);
}

const std::vector<std::int64_t>& ShardLoader::permutation(std::int64_t epoch) {
  for (const auto& [kept, order] : permutations_) {
    if (kept == epoch) return order;
  }
  if (permutations_.size() == 2) permutations_.pop_front();
  permutations_.emplace_back(epoch, epoch_permutation(train_samples_, seed_, epoch));
  return permutations_.back().second;
}

std::vector<std::int64_t> ShardLoader::sample_indices(std::int64_t epoch,
                                                      const std::vector<Shard>& parts) {
  const auto& order = permutation(epoch);
  std::vector<std::int64_t> indices;
  for (const auto& part : parts) {
    indices.insert(indices.end(), order.begin() + part.begin,
                   order.begin() + part.begin + part.count);
  }
  return indices;
}

ImageBatch ShardLoader::on_device(ImageBatch batch, bool raw) const {
  if (device_.is_cpu()) {
    if (raw) batch.images = normalise(data_, batch.images);
    return batch;
  }
  batch.images = batch.images.pin_memory().to(device_, /*non_blocking=*/true);
  batch.labels = batch.labels.pin_memory().to(device_, /*non_blocking=*/true);
  if (raw) {
    batch.images = batch.images.to(torch::kFloat32).div_(data_.divisor).sub_(mean_).div_(stdev_);
  }
  return batch;
}

}  // namespace transient::train
