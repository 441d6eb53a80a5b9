#include "transient/train/models.h"

#include <gtest/gtest.h>

#include "transient/core/error.h"

namespace transient::train {
namespace {

std::int64_t parameter_count(torch::nn::Module& module) {
  std::int64_t count = 0;
  for (const auto& p : module.parameters()) count += p.numel();
  return count;
}

TEST(Models, CnnIsExactlyThePeersModel) {
  auto model = make_model("cnn", ImageShape{1, 28, 28});
  const auto parameters = model->named_parameters();
  EXPECT_EQ(parameters["conv1.weight"].sizes(), (std::vector<std::int64_t>{32, 1, 3, 3}));
  EXPECT_EQ(parameters["conv2.weight"].sizes(), (std::vector<std::int64_t>{64, 32, 3, 3}));
  EXPECT_EQ(parameters["fc1.weight"].sizes(), (std::vector<std::int64_t>{128, 3136}));
  EXPECT_EQ(parameters["fc2.weight"].sizes(), (std::vector<std::int64_t>{10, 128}));
  EXPECT_EQ(parameter_count(*model), 421642);
  EXPECT_EQ(model->forward(torch::zeros({3, 1, 28, 28})).sizes(),
            (std::vector<std::int64_t>{3, 10}));
}

TEST(Models, MlpHasOneHiddenLayerOf256) {
  auto model = make_model("mlp", ImageShape{1, 28, 28});
  EXPECT_EQ(parameter_count(*model), 784 * 256 + 256 + 256 * 10 + 10);
}

TEST(Models, ResNetsRunOn28x28x1And32x32x3) {
  for (const char* name : {"resnet20", "resnet32"}) {
    auto gray = make_model(name, ImageShape{1, 28, 28});
    EXPECT_EQ(gray->forward(torch::randn({2, 1, 28, 28})).sizes(),
              (std::vector<std::int64_t>{2, 10}));
    auto colour = make_model(name, ImageShape{3, 32, 32});
    EXPECT_EQ(colour->forward(torch::randn({2, 3, 32, 32})).sizes(),
              (std::vector<std::int64_t>{2, 10}));
    EXPECT_FALSE(colour->named_buffers().is_empty());  // batch-norm statistics
  }
  // 3 stages x 3 blocks x 2 convolutions + the first convolution + the classifier = 20 layers.
  auto resnet20 = make_model("resnet20", ImageShape{3, 32, 32});
  std::int64_t weighted_layers = 0;
  for (const auto& item : resnet20->named_parameters()) {
    const auto& name = item.key();
    if (name.find("shortcut") == std::string::npos && item.value().dim() >= 2) ++weighted_layers;
  }
  EXPECT_EQ(weighted_layers, 20);
}

TEST(Models, UnknownNameListsTheValidOnes) {
  try {
    make_model("vgg", ImageShape{});
    FAIL() << "an unknown model was accepted";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("cnn, mlp, resnet20, resnet32"), std::string::npos)
        << error.what();
  }
}

// --memory-format auto lays out the ResNets channels-last (they train faster so on CPUs) and
// leaves the cnn contiguous (it does not); channels-last, the values, shapes, scores and
// gradients are those of the contiguous model, up to floating-point order.
TEST(Models, ChannelsLastResNetsComputeWhatContiguousOnesDo) {
  const ImageShape shape{3, 16, 16};
  EXPECT_TRUE(channels_last(*make_model("resnet20", shape), MemoryFormat::kAuto));
  EXPECT_FALSE(channels_last(*make_model("resnet20", shape), MemoryFormat::kContiguous));
  EXPECT_FALSE(channels_last(*make_model("cnn", shape), MemoryFormat::kAuto));
  EXPECT_TRUE(channels_last(*make_model("cnn", shape), MemoryFormat::kChannelsLast));

  torch::manual_seed(7);
  auto contiguous = make_model("resnet20", shape);
  torch::manual_seed(7);
  auto laid_out = make_model("resnet20", shape);
  to_channels_last(*laid_out);
  const auto before = contiguous->named_parameters();
  int four_d = 0;
  for (const auto& item : laid_out->named_parameters()) {
    const auto& p = item.value();
    EXPECT_TRUE(torch::equal(p, before[item.key()])) << item.key();
    if (p.dim() == 4) {
      ++four_d;
      EXPECT_TRUE(p.is_contiguous(torch::MemoryFormat::ChannelsLast)) << item.key();
      if (p.size(2) > 1) {  // a 1x1 is both
        EXPECT_FALSE(p.is_contiguous()) << item.key();
      }
    } else {
      EXPECT_TRUE(p.is_contiguous()) << item.key();
    }
  }
  EXPECT_EQ(four_d, 19 + 2);  // 19 3x3 convolutions and 2 shortcut 1x1 convolutions

  torch::manual_seed(8);
  const auto images = torch::randn({4, 3, 16, 16});
  const auto labels = torch::tensor({1, 2, 3, 4}, torch::kInt64);
  for (auto* model : {contiguous.get(), laid_out.get()}) {
    torch::nn::functional::cross_entropy(model->forward(images), labels).backward();
  }
  EXPECT_TRUE(torch::allclose(laid_out->forward(images), contiguous->forward(images), 1e-4, 1e-5));
  for (const auto& item : laid_out->named_parameters()) {
    EXPECT_TRUE(torch::allclose(item.value().grad(), before[item.key()].grad(), 1e-4, 1e-6))
        << item.key();
  }
}

}  // namespace
}  // namespace transient::train
