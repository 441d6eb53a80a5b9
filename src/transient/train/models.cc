#include "transient/train/models.h"

#include "transient/core/error.h"
#include "transient/train/trainer.h"

namespace transient::train {
namespace {

namespace nn = torch::nn;

class Cnn : public Model {
 public:
  explicit Cnn(const ImageShape& shape)
      : conv1_(register_module("conv1",
                               nn::Conv2d(nn::Conv2dOptions(shape.channels, 32, 3).padding(1)))),
        conv2_(register_module("conv2", nn::Conv2d(nn::Conv2dOptions(32, 64, 3).padding(1)))),
        fc1_(register_module("fc1", nn::Linear(64 * (shape.height / 4) * (shape.width / 4), 128))),
        fc2_(register_module("fc2", nn::Linear(128, 10))) {}

  torch::Tensor forward(torch::Tensor x) override {
    x = torch::max_pool2d(torch::relu(conv1_->forward(x)), 2);
    x = torch::max_pool2d(torch::relu(conv2_->forward(x)), 2);
    x = torch::relu(fc1_->forward(x.flatten(1)));
    return fc2_->forward(x);
  }

 private:
  nn::Conv2d conv1_;
  nn::Conv2d conv2_;
  nn::Linear fc1_;
  nn::Linear fc2_;
};

class Mlp : public Model {
 public:
  explicit Mlp(const ImageShape& shape)
      : fc1_(register_module("fc1", nn::Linear(shape.channels * shape.height * shape.width, 256))),
        fc2_(register_module("fc2", nn::Linear(256, 10))) {}

  torch::Tensor forward(torch::Tensor x) override {
    return fc2_->forward(torch::relu(fc1_->forward(x.flatten(1))));
  }

 private:
  nn::Linear fc1_;
  nn::Linear fc2_;
};

nn::Conv2d conv3x3(std::int64_t in, std::int64_t out, std::int64_t stride) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, 3).stride(stride).padding(1).bias(false));
}

class BasicBlock : public nn::Module {
 public:
  BasicBlock(std::int64_t in, std::int64_t out, std::int64_t stride)
      : conv1_(register_module("conv1", conv3x3(in, out, stride))),
        bn1_(register_module("bn1", nn::BatchNorm2d(out))),
        conv2_(register_module("conv2", conv3x3(out, out, 1))),
        bn2_(register_module("bn2", nn::BatchNorm2d(out))) {
    if (stride != 1 || in != out) {
      shortcut_conv_ = register_module(
          "shortcut_conv", nn::Conv2d(nn::Conv2dOptions(in, out, 1).stride(stride).bias(false)));
      shortcut_bn_ = register_module("shortcut_bn", nn::BatchNorm2d(out));
    }
  }

  torch::Tensor forward(torch::Tensor x) {
    auto y = torch::relu(bn1_->forward(conv1_->forward(x)));
    y = bn2_->forward(conv2_->forward(y));
    auto shortcut = shortcut_conv_ ? shortcut_bn_->forward(shortcut_conv_->forward(x)) : x;
    return torch::relu(y + shortcut);
  }

 private:
  nn::Conv2d conv1_;
  nn::BatchNorm2d bn1_;
  nn::Conv2d conv2_;
  nn::BatchNorm2d bn2_;
  nn::Conv2d shortcut_conv_{nullptr};
  nn::BatchNorm2d shortcut_bn_{nullptr};
};

class ResNet : public Model {
 public:
  ResNet(const ImageShape& shape, int blocks_per_stage)
      : conv_(register_module("conv", conv3x3(shape.channels, 16, 1))),
        bn_(register_module("bn", nn::BatchNorm2d(16))),
        fc_(register_module("fc", nn::Linear(64, 10))) {
    std::int64_t in = 16;
    const std::int64_t widths[] = {16, 32, 64};
    for (int stage = 0; stage < 3; ++stage) {
      for (int b = 0; b < blocks_per_stage; ++b) {
        const std::int64_t stride = (stage > 0 && b == 0) ? 2 : 1;
        blocks_.push_back(
            register_module("stage" + std::to_string(stage + 1) + "_block" + std::to_string(b + 1),
                            std::make_shared<BasicBlock>(in, widths[stage], stride)));
        in = widths[stage];
      }
    }
    for (auto& module : modules(/*include_self=*/false)) {
      if (auto* conv = module->as<nn::Conv2d>()) {
        nn::init::kaiming_normal_(conv->weight, 0.0, torch::kFanOut, torch::kReLU);
      }
    }
  }

  torch::Tensor forward(torch::Tensor x) override {
    x = torch::relu(bn_->forward(conv_->forward(x)));
    for (auto& block : blocks_) x = block->forward(x);
    x = torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1);
    return fc_->forward(x);
  }

 private:
  nn::Conv2d conv_;
  nn::BatchNorm2d bn_;
  nn::Linear fc_;
  std::vector<std::shared_ptr<BasicBlock>> blocks_;
};

std::string valid_names() {
  std::string names;
  for (const auto& spec : model_registry()) names += (names.empty() ? "" : ", ") + spec.name;
  return names;
}

}  // namespace

const std::vector<ModelSpec>& model_registry() {
  static const std::vector<ModelSpec> registry = {
      {"cnn", "2 conv (32, 64 channels) + 2 linear layers, 421k parameters on 28x28",
       [](const ImageShape& s) { return std::make_shared<Cnn>(s); }},
      {"mlp", "one hidden layer of 256 ReLU units, 204k parameters on 28x28",
       [](const ImageShape& s) { return std::make_shared<Mlp>(s); }},
      {"resnet20", "CIFAR-style ResNet-20 with batch norm (3 stages x 3 blocks), 0.27M parameters",
       [](const ImageShape& s) { return std::make_shared<ResNet>(s, 3); }},
      {"resnet32", "CIFAR-style ResNet-32 with batch norm (3 stages x 5 blocks), 0.47M parameters",
       [](const ImageShape& s) { return std::make_shared<ResNet>(s, 5); }},
  };
  return registry;
}

void require_model(const std::string& name) {
  for (const auto& spec : model_registry()) {
    if (spec.name == name) return;
  }
  throw InputError("--model: unknown model \"" + name + "\"; accepted: " + valid_names());
}

std::shared_ptr<Model> make_model(const std::string& name, const ImageShape& shape) {
  for (const auto& spec : model_registry()) {
    if (spec.name == name) return spec.make(shape);
  }
  require_model(name);
  return nullptr;
}

std::vector<std::pair<std::string, std::string>> model_catalog() {
  std::vector<std::pair<std::string, std::string>> catalog;
  for (const auto& spec : model_registry()) catalog.emplace_back(spec.name, spec.description);
  return catalog;
}

}  // namespace transient::train
