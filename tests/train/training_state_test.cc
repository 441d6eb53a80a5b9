// The worker's state and samples without processes or groups: what a member holds goes to a
// checkpoint and comes back bit for bit, is refused whole when it does not fit, and reaches
// another member whole or not at all; a step's shard is its samples in the epoch's order.
#include "transient/train/training_state.h"
#include "transient/train/shard_loader.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "train/image_files.h"
#include "train/npy_file.h"
#include "transient/core/error.h"
#include "transient/train/gradient_buckets.h"

namespace transient::train {
namespace {

namespace fs = std::filesystem;

constexpr std::uint64_t kSeed = 11;

// A ResNet-20 (it has batch-norm buffers) trained with AdamW (its slots include integer step
// counts), seeded as a worker seeds it.
TrainOptions resnet_options() {
  TrainOptions options;
  options.model = "resnet20";
  options.optimizer = "adamw";
  options.global_batch = 4;
  options.seed = kSeed;
  return options;
}

const ImageShape kShape{3, 16, 16, 5};

TrainingState seeded_state(const TrainOptions& options = resnet_options()) {
  torch::manual_seed(options.seed);
  return TrainingState(options, kShape, torch::kCPU);
}

// One step on a random batch: the parameters, the optimiser's slots and the batch-norm
// statistics all move.
void train_step(TrainingState& state) {
  const auto images = torch::randn({4, kShape.channels, kShape.height, kShape.width});
  const auto labels = torch::randint(kShape.classes, {4}, torch::kInt64);
  torch::nn::functional::cross_entropy(state.model().forward(images), labels).backward();
  state.optimizer().step(0.01);
}

void expect_same(const CheckpointState& a, const CheckpointState& b) {
  EXPECT_EQ(a.step, b.step);
  EXPECT_EQ(a.epoch, b.epoch);
  EXPECT_EQ(a.cursor, b.cursor);
  ASSERT_EQ(a.model_state.size(), b.model_state.size());
  for (std::size_t i = 0; i < a.model_state.size(); ++i) {
    EXPECT_EQ(a.model_state[i].first, b.model_state[i].first);
    EXPECT_TRUE(torch::equal(a.model_state[i].second, b.model_state[i].second))
        << a.model_state[i].first;
  }
  ASSERT_EQ(a.optimizer_state.size(), b.optimizer_state.size());
  for (std::size_t s = 0; s < a.optimizer_state.size(); ++s) {
    const auto& [slot, tensors] = a.optimizer_state[s];
    EXPECT_EQ(slot, b.optimizer_state[s].first);
    ASSERT_EQ(tensors.size(), b.optimizer_state[s].second.size());
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      EXPECT_TRUE(torch::equal(tensors[i].second, b.optimizer_state[s].second[i].second))
          << slot << ":" << tensors[i].first;
    }
  }
  EXPECT_TRUE(torch::equal(a.rng_state, b.rng_state));
  EXPECT_EQ(a.loss_scale, b.loss_scale);
}

TEST(TrainingState, ACheckpointOfItComesBackBitForBitIntoAnotherMember) {
  auto trained = seeded_state();
  train_step(trained);
  train_step(trained);
  const auto saved = trained.snapshot(2, 100);
  EXPECT_EQ(saved.cursor, 8);  // two steps of 4 samples into the first epoch
  const auto bytes = serialize_checkpoint(saved);

  auto other = seeded_state();
  EXPECT_FALSE(torch::equal(other.fingerprint(), trained.fingerprint()));
  other.load(deserialize_checkpoint(bytes, "ckpt"), "ckpt");
  expect_same(other.snapshot(2, 100), saved);
  EXPECT_TRUE(torch::equal(other.fingerprint(), trained.fingerprint()));
  // The generator is the checkpoint's: both draw the same next.
  const auto next = torch::rand({3});
  trained.load(deserialize_checkpoint(bytes, "ckpt"), "ckpt");
  EXPECT_TRUE(torch::equal(torch::rand({3}), next));
}

// A user's TorchScript model that uses one layer twice (lin and lin2 are one module, as tied
// weights are one tensor): the layer is one parameter, stepped once by its gradient (the sum of
// both uses). libtorch lists it under each name, and it was stepped once per name: twice the
// update, a momentum buffer per name.
TEST(TrainingState, ALayerUsedTwiceIsOneParameterSteppedOnce) {
  torch::jit::Module fc("__torch__.Fc");
  fc.register_parameter("weight", (torch::randn({5, 3 * 16 * 16}) * 0.01).requires_grad_(), false);
  fc.register_parameter("bias", torch::zeros({5}).requires_grad_(), false);
  fc.define("def forward(self, x):\n  return torch.matmul(x, self.weight.t()) + self.bias\n");
  torch::jit::Module lin("__torch__.Lin");
  lin.register_parameter("weight", torch::randn({5, 5}).requires_grad_(), false);
  lin.register_parameter("bias", torch::randn({5}).requires_grad_(), false);
  lin.define("def forward(self, x):\n  return torch.matmul(x, self.weight.t()) + self.bias\n");
  torch::jit::Module net("__torch__.Net");
  net.register_module("fc", fc);
  net.register_module("lin", lin);
  net.register_module("lin2", lin);
  net.define(
      "def forward(self, x):\n"
      "  return self.lin2.forward(self.lin.forward(self.fc.forward(torch.flatten(x, 1))))\n");
  const std::string path =
      ::testing::TempDir() + "/shared_layer_" + std::to_string(::getpid()) + ".pt";
  net.save(path);

  TrainOptions options;
  options.model = path;
  options.momentum = 0;
  options.global_batch = 4;
  TrainingState state = seeded_state(options);
  EXPECT_EQ(state.parameters().size(), 4u);  // fc.weight, fc.bias, lin.weight, lin.bias
  const auto images = torch::randn({4, kShape.channels, kShape.height, kShape.width});
  const auto labels = torch::randint(kShape.classes, {4}, torch::kInt64);
  torch::nn::functional::cross_entropy(state.model().forward(images), labels).backward();
  const auto& named = state.model().named_parameters();
  const torch::Tensor weight = named["lin.weight"];
  const torch::Tensor before = weight.detach().clone();
  const torch::Tensor gradient = weight.grad().clone();
  state.optimizer().step(0.1);
  EXPECT_TRUE(torch::allclose(before - weight.detach(), 0.1 * gradient, 1e-5, 1e-7))
      << "the update is " << ((before - weight.detach()) / (0.1 * gradient)).mean().item<double>()
      << " times the gradient's";
  // Its checkpoint still holds the layer under both names, as PyTorch's state dict does.
  const CheckpointState saved = state.snapshot(1, 100);
  EXPECT_EQ(saved.model_state.size(), 6u);
  std::remove(path.c_str());
}

TEST(TrainingState, ACheckpointThatDoesNotFitIsRefusedNamingItsFileAndChangesNothing) {
  auto trained = seeded_state();
  train_step(trained);
  const auto saved = trained.snapshot(1, 100);
  auto member = seeded_state();
  const auto before = member.fingerprint();
  auto refused = [&](CheckpointState state, const std::string& words) {
    try {
      member.load(state, "/jobs/j/checkpoints/ckpt-1.pt");
      ADD_FAILURE() << "not refused: " << words;
    } catch (const InputError& error) {
      const std::string what = error.what();
      EXPECT_NE(what.find("/jobs/j/checkpoints/ckpt-1.pt"), std::string::npos) << what;
      EXPECT_NE(what.find(words), std::string::npos) << what;
    }
    EXPECT_TRUE(torch::equal(member.fingerprint(), before)) << words;
  };
  auto other_model = saved;
  other_model.model = "cnn";
  refused(other_model, "checkpoint of another job (model cnn)");
  auto other_optimizer = saved;
  other_optimizer.optimizer = "sgd";
  refused(other_optimizer, "checkpoint of the optimiser sgd, this job's is adamw");
  auto misshapen = saved;
  misshapen.model_state.back().second = torch::zeros({7});
  refused(misshapen, "does not fit the model resnet20");
  auto lacking = saved;
  lacking.optimizer_state[0].second.pop_back();  // the last parameter's entry of a slot
  refused(lacking, "lacks parameter");
}

TEST(TrainingState, AStateBroadcastIsTakenWholeOrNotAtAll) {
  auto source = seeded_state();
  train_step(source);
  std::vector<torch::Tensor> sent;
  source.broadcast([&](torch::Tensor& tensor) { sent.push_back(tensor.clone()); }, false);
  ASSERT_GE(sent.size(), 4u);  // parameters, optimiser slots, buffers, generator

  // Every tensor arrives: the receiver holds the source's state, generator included.
  auto receiver = seeded_state();
  std::size_t next = 0;
  receiver.broadcast([&](torch::Tensor& tensor) { tensor.copy_(sent.at(next++)); }, true);
  EXPECT_EQ(next, sent.size());
  expect_same(receiver.snapshot(1, 100), source.snapshot(1, 100));

  // The source is lost before the last tensor: nothing is taken.
  auto cut_off = seeded_state();
  const auto before = cut_off.snapshot(0, 100);
  next = 0;
  EXPECT_THROW(cut_off.broadcast(
                   [&](torch::Tensor& tensor) {
                     if (next + 1 == sent.size()) throw CollectiveFailure("the source is lost");
                     tensor.copy_(sent.at(next++));
                   },
                   true),
               CollectiveFailure);
  expect_same(cut_off.snapshot(0, 100), before);
}

TEST(TrainingState, ResetGivesTheJobsSeededStartAgain) {
  auto state = seeded_state();
  const auto start = state.snapshot(0, 100);
  train_step(state);
  state.reset();
  const auto again = state.snapshot(0, 100);
  ASSERT_EQ(again.model_state.size(), start.model_state.size());
  for (std::size_t i = 0; i < again.model_state.size(); ++i) {
    EXPECT_TRUE(torch::equal(again.model_state[i].second, start.model_state[i].second))
        << again.model_state[i].first;
  }
  for (const auto& [slot, tensors] : again.optimizer_state) {
    for (const auto& [name, tensor] : tensors) {
      EXPECT_EQ(tensor.abs().sum().item<double>(), 0) << slot << ":" << name;
    }
  }
}

TEST(TrainingState, Fp16SkipsAnOverflowedStepAndHalvesTheScale) {
  auto options = resnet_options();
  options.precision = Precision::kFp16;
  auto state = seeded_state(options);
  const double scale = state.loss_scale();
  for (const auto& parameter : state.parameters()) {
    parameter.mutable_grad() = torch::full_like(parameter, scale);
  }
  EXPECT_TRUE(state.unscale_gradients());
  EXPECT_EQ(state.parameters().back().grad()[0].item<float>(), 1.0f);  // unscaled
  EXPECT_EQ(state.loss_scale(), scale);
  state.parameters().back().mutable_grad()[0].fill_(std::numeric_limits<float>::infinity());
  EXPECT_FALSE(state.unscale_gradients());
  EXPECT_EQ(state.loss_scale(), scale * kLossScaleBackoff);
  EXPECT_EQ(state.snapshot(0, 100).loss_scale, scale * kLossScaleBackoff);
}

// A NumPy data set of `count` 1x8x8 byte images whose pixels are their index and whose labels
// are the index modulo 3 (the last tenth held out as the test set).
fs::path numbered_images(int count) {
  const fs::path dir =
      fs::temp_directory_path() / ("transient-shards-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string pixels;
  std::string labels;
  for (int i = 0; i < count; ++i) {
    pixels += std::string(64, static_cast<char>(i));
    labels += static_cast<char>(i % 3);
  }
  testing::write_npy_file((dir / "images.npy").string(), "|u1",
                          "(" + std::to_string(count) + ", 8, 8)", pixels);
  testing::write_npy_file((dir / "labels.npy").string(), "|u1", "(" + std::to_string(count) + ",)",
                          labels);
  return dir;
}

TEST(ShardLoader, AStepsPartsAreTheirSamplesInTheEpochsOrderNormalised) {
  // 17 to train on; the last of each class (17, 18 and 19) to test.
  const fs::path dir = numbered_images(20);
  JobConfig job;
  job.options.dataset = "npy";
  job.options.data_dir = dir.string();
  job.options.seed = kSeed;
  job.train_samples = 15;  // the job trains on the first 15 only
  ShardLoader samples(job, torch::kCPU);
  EXPECT_EQ(samples.shape().classes, 3);
  EXPECT_EQ(samples.test_samples(), 3);
  EXPECT_FALSE(samples.decodes_ahead());  // in memory: nothing to decode

  const auto order = epoch_permutation(15, kSeed, 1);
  ASSERT_EQ(order.size(), 15u);
  const auto batch = samples.train_batch(0, 1, {Shard{2, 3}, Shard{10, 2}});
  std::vector<std::int64_t> expected{order[2], order[3], order[4], order[10], order[11]};
  ASSERT_EQ(batch.labels.size(0), 5);
  ASSERT_EQ(batch.images.sizes(), (std::vector<std::int64_t>{5, 1, 8, 8}));
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const auto at = static_cast<std::int64_t>(i);
    EXPECT_EQ(batch.labels[at].item<std::int64_t>(), expected[i] % 3);
    // Bytes centred on 0.5 with deviation 0.5, every pixel of the image alike.
    const float pixel = (static_cast<float>(expected[i]) / 255.0f - 0.5f) / 0.5f;
    EXPECT_NEAR(batch.images[at].min().item<float>(), pixel, 1e-6) << expected[i];
    EXPECT_NEAR(batch.images[at].max().item<float>(), pixel, 1e-6) << expected[i];
  }
  // Another epoch, another order; a prefetch changes nothing for a data set in memory.
  samples.prefetch(0, 2, Shard{0, 15});
  const auto whole = samples.train_batch(0, 2, {Shard{0, 15}});
  const auto order2 = epoch_permutation(15, kSeed, 2);
  EXPECT_NE(order2, order);
  for (std::int64_t i = 0; i < 15; ++i) {
    EXPECT_EQ(whole.labels[i].item<std::int64_t>(), order2[static_cast<std::size_t>(i)] % 3);
  }

  // The test set: the last of each class, in their order in the file (the last tenth of the file
  // was held out: with labels sorted by class, one class only).
  const auto test = samples.test_batch(0, 3);
  EXPECT_EQ(test.labels[0].item<std::int64_t>(), 17 % 3);
  EXPECT_EQ(test.labels[1].item<std::int64_t>(), 18 % 3);
  EXPECT_EQ(test.labels[2].item<std::int64_t>(), 19 % 3);
  EXPECT_NEAR(test.images[2].max().item<float>(), (19.0f / 255.0f - 0.5f) / 0.5f, 1e-6);
  fs::remove_all(dir);
}

// A subset of an npy data set (--train-subset, --test-subset) is its first samples in turn from
// each class, as an image folder's: of a file sorted by class, the first samples were one class
// only, and a quick experiment trained on it and was tested on it.
TEST(ShardLoader, AnNpySubsetTakesItsSamplesInTurnFromEachClass) {
  const fs::path dir =
      fs::temp_directory_path() / ("transient-sorted-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  // 30 images, pixels their index, sorted by class: 0-9 class 0, 10-19 class 1, 20-29 class 2.
  // The last of each class (9, 19, 29) is held out to test.
  std::string pixels;
  std::string labels;
  for (int i = 0; i < 30; ++i) {
    pixels += std::string(64, static_cast<char>(i));
    labels += static_cast<char>(i / 10);
  }
  testing::write_npy_file((dir / "images.npy").string(), "|u1", "(30, 8, 8)", pixels);
  testing::write_npy_file((dir / "labels.npy").string(), "|u1", "(30,)", labels);
  JobConfig job;
  job.options.dataset = "npy";
  job.options.data_dir = dir.string();
  job.options.seed = kSeed;
  job.options.test_subset = 2;
  job.train_samples = 7;
  ShardLoader samples(job, torch::kCPU);
  ASSERT_EQ(samples.test_samples(), 2);
  // The whole epoch in the order of its permutation: the samples are 0, 10, 20, 1, 11, 21, 2.
  const std::vector<std::int64_t> subset{0, 10, 20, 1, 11, 21, 2};
  const auto order = epoch_permutation(7, kSeed, 0);
  const auto whole = samples.train_batch(0, 0, {Shard{0, 7}});
  ASSERT_EQ(whole.labels.size(0), 7);
  for (std::int64_t i = 0; i < 7; ++i) {
    const std::int64_t sample =
        subset[static_cast<std::size_t>(order[static_cast<std::size_t>(i)])];
    EXPECT_EQ(whole.labels[i].item<std::int64_t>(), sample / 10);
    EXPECT_NEAR(whole.images[i].max().item<float>(),
                (static_cast<float>(sample) / 255.0f - 0.5f) / 0.5f, 1e-6)
        << sample;
  }
  const auto test = samples.test_batch(0, 2);
  EXPECT_EQ(test.labels[0].item<std::int64_t>(), 0);
  EXPECT_EQ(test.labels[1].item<std::int64_t>(), 1);
  EXPECT_NEAR(test.images[1].max().item<float>(), (19.0f / 255.0f - 0.5f) / 0.5f, 1e-6);
  fs::remove_all(dir);
}

// A worker's copy of the data set that is not the job's is refused naming its folder, before
// anything is read from it: one with fewer samples failed with libtorch's "start (0) + length
// (15) exceeds dimension size" (an image folder indexed past its list: a crash), one with a class
// fewer trained a model of another shape.
TEST(ShardLoader, AWorkersDataSetThatIsNotTheJobsIsRefused) {
  const fs::path dir = numbered_images(20);  // 17 to train on, 3 to test; 3 classes of 1x8x8
  JobConfig job;
  job.options.dataset = "npy";
  job.options.data_dir = dir.string();
  job.train_samples = 15;
  job.data = DataFacts{17, 1, 8, 8, 3};
  EXPECT_NO_THROW(ShardLoader(job, torch::kCPU));
  auto refusal = [&](const DataFacts& theirs) {
    job.data = theirs;
    try {
      ShardLoader samples(job, torch::kCPU);
      return std::string("accepted");
    } catch (const InputError& error) {
      return std::string(error.what());
    }
  };
  EXPECT_EQ(refusal(DataFacts{27, 1, 8, 8, 3}),
            dir.string() +
                ": this worker's data set differs from the job's (17 training samples here, 27 in "
                "the job); every worker needs the same data (its folder: --data-dir)");
  EXPECT_EQ(refusal(DataFacts{17, 1, 8, 8, 4}),
            dir.string() +
                ": this worker's data set differs from the job's (1x8x8 images of 3 classes here, "
                "1x8x8 images of 4 classes in the job); every worker needs the same data (its "
                "folder: --data-dir)");
  // A test set of another size was split among the members by each one's own count: samples
  // evaluated twice or never, and an accuracy that was no one's (review).
  EXPECT_EQ(refusal(DataFacts{17, 1, 8, 8, 3, 3}), "accepted");
  EXPECT_EQ(refusal(DataFacts{17, 1, 8, 8, 3, 5}),
            dir.string() +
                ": this worker's data set differs from the job's (3 test samples here, 5 in the "
                "job); every worker needs the same data (its folder: --data-dir)");
  EXPECT_EQ(refusal(DataFacts{}), "accepted");  // a coordinator that does not say
  // A test set of its own that differs is named as --val-data's (it was said to be the training
  // folder's, --data-dir).
  const fs::path val = dir / "val";
  fs::create_directories(val);
  testing::write_npy_file((val / "images.npy").string(), "|u1", "(4, 8, 8)", std::string(256, 'x'));
  testing::write_npy_file((val / "labels.npy").string(), "|u1", "(4,)", std::string("\0\1\2\0", 4));
  job.options.val_data = val.string();
  EXPECT_EQ(refusal(DataFacts{20, 1, 8, 8, 3, 4}), "accepted");
  EXPECT_EQ(refusal(DataFacts{20, 1, 8, 8, 3, 5}),
            val.string() +
                ": this worker's data set differs from the job's (4 test samples here, 5 in the "
                "job); every worker needs the same data (its folder: --val-data)");
  fs::remove_all(dir);
}

// An image folder's batches come from its loader threads, the next step's decoded ahead: a batch
// is the samples asked for whether the guess was right or not (another generation, other
// parts), and an image that does not decode is left out and named.
TEST(ShardLoader, AnImageFoldersBatchIsTheSamplesAskedForWhateverWasDecodedAhead) {
  const fs::path dir =
      fs::temp_directory_path() / ("transient-shard-images-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  // Classes a, b, c of four 8x8 pictures each; the last of each class is held out for testing,
  // so the training samples are in turn from each class (image_folder.h's interleaved()): a's at
  // 0, 3, 6, b's at 1, 4, 7 and c's at 2, 5, 8.
  for (const std::string label : {"a", "b", "c"}) {
    fs::create_directories(dir / label);
    for (int i = 0; i < 4; ++i) {
      testing::write_png((dir / label / ("p" + std::to_string(i) + ".png")).string(),
                         torch::full({8, 8, 3}, 40 * i, torch::kUInt8));
    }
  }
  // b's first training file (sample 1) does not decode.
  std::ofstream((dir / "b" / "p0.png").string()) << "not a PNG";
  JobConfig job;
  job.options.dataset = "image-folder";
  job.options.data_dir = dir.string();
  job.options.image_size = 8;
  job.options.augment = Augment::kNone;
  job.options.seed = kSeed;
  job.train_samples = 9;
  ShardLoader samples(job, torch::kCPU);
  EXPECT_EQ(samples.shape().classes, 3);
  EXPECT_EQ(samples.test_samples(), 3);
  EXPECT_TRUE(samples.decodes_ahead());
  const auto order = epoch_permutation(9, kSeed, 0);
  // The labels of the samples `parts` of epoch 0, the undecodable one left out.
  auto expected = [&](const std::vector<Shard>& parts) {
    std::vector<std::int64_t> labels;
    for (const auto& part : parts) {
      for (std::int64_t i = part.begin; i < part.begin + part.count; ++i) {
        const auto sample = order[static_cast<std::size_t>(i)];
        if (sample != 1) labels.push_back(sample % 3);
      }
    }
    return labels;
  };
  auto labels_of = [](const ImageBatch& batch) {
    const auto labels = batch.labels.contiguous();
    return std::vector<std::int64_t>(labels.data_ptr<std::int64_t>(),
                                     labels.data_ptr<std::int64_t>() + labels.numel());
  };
  const std::vector<std::vector<Shard>> asks{
      {Shard{0, 4}}, {Shard{4, 5}}, {Shard{0, 2}, Shard{6, 3}}};
  samples.prefetch(0, 0, Shard{0, 4});
  EXPECT_EQ(labels_of(samples.train_batch(0, 0, asks[0])), expected(asks[0]));  // the guess
  samples.prefetch(0, 0, Shard{4, 5});
  EXPECT_EQ(labels_of(samples.train_batch(1, 0, asks[1])), expected(asks[1]));  // generation 1
  samples.prefetch(1, 0, Shard{0, 2});
  EXPECT_EQ(labels_of(samples.train_batch(1, 0, asks[2])), expected(asks[2]));  // two parts
  // The whole epoch: the undecodable file is named once per batch it is in, and left out.
  const auto whole = samples.train_batch(1, 0, {Shard{0, 9}});
  EXPECT_EQ(whole.labels.size(0), 8);
  ASSERT_EQ(whole.skipped.size(), 1u);
  EXPECT_EQ(whole.skipped[0].first, (dir / "b" / "p0.png").string());
  EXPECT_EQ(whole.images.sizes(), (std::vector<std::int64_t>{8, 3, 8, 8}));
  // The test set: each class's last picture, in class order.
  EXPECT_EQ(labels_of(samples.test_batch(0, 3)), (std::vector<std::int64_t>{0, 1, 2}));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace transient::train
