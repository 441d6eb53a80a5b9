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

}  // namespace
}  // namespace transient::train
