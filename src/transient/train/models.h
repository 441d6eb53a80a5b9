// The models the trainer can train, in a registry of names and one-line descriptions. Each takes
// images [N, C, H, W] and returns class scores [N, classes] (10 below):
// - cnn: conv 3x3 C->32 (padding 1), ReLU, max-pool 2; conv 3x3 32->64 (padding 1), ReLU,
//   max-pool 2; linear 64*(H/4)*(W/4)->128 (3136 on 28x28), ReLU; linear 128->10. Exactly the
//   peers' model, so that benchmarks compare like with like.
// - mlp: C*H*W->256, ReLU, 256->10.
// - resnet20 / resnet32: CIFAR-style ResNet (He et al. 2016): conv 3x3 C->16, BN, ReLU; three
//   stages of 3 / 5 basic blocks with 16, 32, 64 channels (strides 1, 2, 2; a 1x1 convolution
//   with BN on the shortcut where the shape changes); global average pooling; linear 64->10.
//   Runs on 28x28x1 and 32x32x3 alike.
#pragma once

#include <torch/script.h>
#include <torch/torch.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "transient/core/registry.h"
#include "transient/train/option_names.h"

namespace transient::train {

// The input the model is built for, and the classes it scores.
struct ImageShape {
  std::int64_t channels = 1;
  std::int64_t height = 28;
  std::int64_t width = 28;
  std::int64_t classes = 10;
};

class Model : public torch::nn::Module {
 public:
  virtual torch::Tensor forward(torch::Tensor images) = 0;
  // Whether it trains faster with its convolution weights channels-last (to_channels_last), as
  // measured on CPUs: the ResNets do (1.2x), the cnn does not (0.9x). A TorchScript model says
  // no: its forward may assume contiguous tensors (a `view` of a convolution's output).
  virtual bool faster_channels_last() const { return false; }
};

using ModelFactory = std::function<std::shared_ptr<Model>(const ImageShape&)>;

// All models, in the order `--help` lists them (core/registry.h).
const Registry<ModelFactory>& model_registry();

// The classes of the data sets that do not say how many they have (Fashion-MNIST, CIFAR-10): a
// model's scores per image. NumPy arrays have their labels' largest + 1, up to kMaxClasses.
constexpr std::int64_t kClasses = 10;
constexpr std::int64_t kMaxClasses = 100000;

// The TorchScript module saved in `path`, in training mode: how `train`, `profile` and `predict
// --profile` read a model file. Throws InputError naming the file if it is missing or is not
// TorchScript.
torch::jit::Module load_torchscript(const std::string& path);

// is_model_file() and same_model(): option_names.h.

// A new model called `name`, initialised from libtorch's global generator (seed it first); or,
// for a file FILE.pt, the TorchScript module saved in it (initialised as it was saved), with its
// parameters and buffers under the module's own names. Throws InputError listing the valid
// names if there is no such model, or naming the file and what is wrong with it (unreadable,
// not TorchScript, does not map [2, C, H, W] images to [2, classes] scores).
std::shared_ptr<Model> make_model(const std::string& name, const ImageShape& shape);

// The SHA-256 of the file at `path`, in hex; throws InputError naming it if it cannot be read.
std::string file_sha256(const std::string& path);

// Whether `model` runs channels-last under `format`: asked for, or auto and faster so.
bool channels_last(const Model& model, MemoryFormat format);

// Lays `model`'s 4-D parameters and buffers (the convolutions' weights) out channels-last: NHWC
// in memory, still [N, C, H, W] in shape and value. Convolutions then give channels-last
// outputs, which oneDNN computes faster for the ResNets on CPUs (docs/benchmarks.md,
// "Channels-last"); a model without convolutions is left as it is. Call it before the optimizer
// or the gradient buckets take the parameters: their gradients and state are laid out like them.
void to_channels_last(Model& model);

// Throws InputError as make_model does unless `name` is a registered model or a TorchScript
// file usable on images of `shape` (and, channels-last under `format`, still usable: the error
// names --memory-format contiguous).
void require_model(const std::string& name, const ImageShape& shape = ImageShape{},
                   MemoryFormat format = MemoryFormat::kContiguous);

}  // namespace transient::train
