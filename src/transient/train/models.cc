#include "transient/train/models.h"

#include <openssl/evp.h>
#include <torch/csrc/jit/runtime/graph_executor.h>
#include <torch/script.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>

#include "transient/core/error.h"
#include "transient/core/text.h"
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
        fc2_(register_module("fc2", nn::Linear(128, shape.classes))) {}

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
        fc2_(register_module("fc2", nn::Linear(256, shape.classes))) {}

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
        fc_(register_module("fc", nn::Linear(64, shape.classes))) {
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

  bool faster_channels_last() const override { return true; }

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

std::string valid_names() { return model_registry().names(); }

// A TorchScript module (saved from Python with torch.jit.script or torch.jit.trace) as a Model.
// Its parameters and buffers are registered under the module's own names (an empty child module
// per submodule), sharing the module's tensors: the optimizer, the gradient buckets and the
// checkpoints see them as Python names them, and training updates the module in place.
// Parameters that do not require a gradient are registered as buffers (carried, not trained).
class ScriptedModel : public Model {
 public:
  explicit ScriptedModel(torch::jit::Module module) : module_(std::move(module)) {
    mirror(module_, *this);
  }

  torch::Tensor forward(torch::Tensor images) override {
    return module_.forward({images}).toTensor();
  }

  void train(bool on = true) override {
    Model::train(on);
    module_.train(on);
  }

 private:
  static void mirror(const torch::jit::Module& from, nn::Module& to) {
    for (const auto& p : from.named_parameters(/*recurse=*/false)) {
      if (p.value.requires_grad()) {
        to.register_parameter(p.name, p.value);
      } else {
        to.register_buffer(p.name, p.value);
      }
    }
    for (const auto& b : from.named_buffers(/*recurse=*/false)) to.register_buffer(b.name, b.value);
    for (const auto& child : from.named_children()) {
      auto mirrored = std::make_shared<nn::Module>();
      mirror(child.value, *mirrored);
      to.register_module(child.name, mirrored);
    }
  }

  torch::jit::Module module_;
};

// A check that a TorchScript model runs (on the CPU, in eval mode, without gradients) before it
// trains. TorchScript's profiling executor optimises a method for what its first call profiles:
// were the check that first call, the training's calls (on a GPU, under autocast, with
// gradients) would run a plan made for a CPU in eval mode without gradients. With the optimiser
// off the check runs the method as written and profiles nothing, so the first training step is
// the one profiled, as in a PyTorch script.
struct ProbeGuard {
  torch::NoGradGuard no_grad;
  torch::jit::GraphOptimizerEnabledGuard unoptimised{false};
};

std::shared_ptr<Model> load_scripted_model(const std::string& path, const ImageShape& shape) {
  auto model = std::make_shared<ScriptedModel>(load_torchscript(path));
  // It must map a batch of the data set's images to one score per class.
  torch::Tensor scores;
  try {
    const ProbeGuard probe;
    model->eval();
    scores = model->forward(torch::zeros({2, shape.channels, shape.height, shape.width}));
    model->train();
  } catch (const std::exception& error) {
    throw InputError(path, 0,
                     "--model: does not run on a batch of " + std::to_string(shape.channels) + "x" +
                         std::to_string(shape.height) + "x" + std::to_string(shape.width) +
                         " images (" + error_reason(error.what()) + ")");
  }
  if (scores.dim() != 2 || scores.size(0) != 2 || scores.size(1) != shape.classes) {
    std::string sizes;
    for (const auto size : scores.sizes())
      sizes += (sizes.empty() ? "" : ", ") + std::to_string(size);
    throw InputError(path, 0,
                     "--model: maps 2 images to scores of shape [" + sizes +
                         "]; the data set needs [2, " + std::to_string(shape.classes) +
                         "] (one score per class)");
  }
  if (model->parameters().empty()) throw InputError(path, 0, "--model: has no parameters to train");
  return model;
}

}  // namespace

std::string file_sha256(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, 0, "cannot be read");
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> context(EVP_MD_CTX_new(),
                                                                  &EVP_MD_CTX_free);
  if (!context || EVP_DigestInit_ex(context.get(), EVP_sha256(), nullptr) != 1) {
    throw std::runtime_error("OpenSSL's SHA-256 failed");
  }
  char buffer[1 << 16];
  while (in.read(buffer, sizeof(buffer)) || in.gcount() > 0) {
    EVP_DigestUpdate(context.get(), buffer, static_cast<std::size_t>(in.gcount()));
  }
  if (in.bad()) throw InputError(path, 0, "cannot be read");
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_DigestFinal_ex(context.get(), digest, &size);
  std::string hex;
  for (unsigned int i = 0; i < size; ++i) {
    char byte[3];
    std::snprintf(byte, sizeof(byte), "%02x", digest[i]);
    hex += byte;
  }
  return hex;
}

torch::jit::Module load_torchscript(const std::string& path) {
  if (!std::filesystem::is_regular_file(path)) {
    throw InputError(path, 0, "--model: no such file (a model name or a TorchScript file FILE.pt)");
  }
  torch::jit::Module module;
  try {
    // Its tensors on the CPU wherever it was saved (one saved from a GPU names cuda:0, which a
    // host without one refused as "not a TorchScript file"); the worker moves it to its device.
    module = torch::jit::load(path, torch::kCPU);
  } catch (const std::exception& error) {
    throw InputError(path, 0,
                     "--model: not a TorchScript file (" + error_reason(error.what()) +
                         "); save one with torch.jit.script(model).save(PATH)");
  }
  module.train();
  return module;
}

const Registry<ModelFactory>& model_registry() {
  static const Registry<ModelFactory> registry(
      "model",
      {{{"cnn", "2 conv (32, 64 channels) + 2 linear layers, 421k parameters on 28x28", {}},
        [](const ImageShape& s) -> std::shared_ptr<Model> { return std::make_shared<Cnn>(s); }},
       {{"mlp", "one hidden layer of 256 ReLU units, 204k parameters on 28x28", {}},
        [](const ImageShape& s) -> std::shared_ptr<Model> { return std::make_shared<Mlp>(s); }},
       {{"resnet20",
         "CIFAR-style ResNet-20 with batch norm (3 stages x 3 blocks), 0.27M parameters",
         {}},
        [](const ImageShape& s) -> std::shared_ptr<Model> {
          return std::make_shared<ResNet>(s, 3);
        }},
       {{"resnet32",
         "CIFAR-style ResNet-32 with batch norm (3 stages x 5 blocks), 0.47M parameters",
         {}},
        [](const ImageShape& s) -> std::shared_ptr<Model> {
          return std::make_shared<ResNet>(s, 5);
        }}});
  return registry;
}

bool channels_last(const Model& model, MemoryFormat format) {
  return format == MemoryFormat::kChannelsLast ||
         (format == MemoryFormat::kAuto && model.faster_channels_last());
}

void to_channels_last(Model& model) {
  torch::NoGradGuard no_grad;
  const auto lay_out = [](torch::Tensor tensor) {
    if (tensor.dim() == 4) tensor.set_data(tensor.contiguous(torch::MemoryFormat::ChannelsLast));
  };
  for (auto& parameter : model.parameters()) lay_out(parameter);
  for (auto& buffer : model.buffers()) lay_out(buffer);
}

void require_model(const std::string& name, const ImageShape& shape, MemoryFormat format) {
  if (is_model_file(name)) {
    auto model = load_scripted_model(name, shape);
    if (!channels_last(*model, format)) return;
    to_channels_last(*model);
    try {
      const ProbeGuard probe;
      model->eval();
      model->forward(torch::zeros({2, shape.channels, shape.height, shape.width}));
    } catch (const std::exception& error) {
      throw InputError(name, 0,
                       "--model: does not run with its weights channels-last (" +
                           error_reason(error.what()) + "); use --memory-format contiguous");
    }
    return;
  }
  if (model_registry().find(name) != nullptr) return;
  throw InputError("--model: unknown model \"" + name + "\"; accepted: " + valid_names() +
                   ", or a TorchScript file FILE.pt (or .pth)");
}

std::shared_ptr<Model> make_model(const std::string& name, const ImageShape& shape) {
  if (is_model_file(name)) return load_scripted_model(name, shape);
  if (const auto* entry = model_registry().find(name)) return entry->create(shape);
  require_model(name);
  return nullptr;
}

std::vector<std::pair<std::string, std::string>> model_catalog() {
  std::vector<std::pair<std::string, std::string>> catalog;
  for (const auto& info : model_registry().infos())
    catalog.emplace_back(info.name, info.description);
  return catalog;
}

}  // namespace transient::train
