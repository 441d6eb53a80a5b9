#include "transient/train/profiler.h"

#include <torch/script.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "transient/core/error.h"
#include "transient/train/models.h"

namespace transient::train {
namespace {

namespace nn = torch::nn;

// An activation's per-sample shape while the walk goes through the layers.
struct Activation {
  std::int64_t channels = 0;
  std::int64_t height = 0;
  std::int64_t width = 0;
  std::int64_t features = 0;  // > 0 once flattened
  std::vector<std::int64_t> shape() const {
    if (features > 0) return {features};
    return {channels, height, width};
  }
};

std::int64_t conv_out(std::int64_t in, std::int64_t kernel, std::int64_t stride,
                      std::int64_t padding, std::int64_t dilation) {
  return (in + 2 * padding - dilation * (kernel - 1) - 1) / stride + 1;
}

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The counted layers' totals and the parameters' sizes, filled in from the layers.
void add_totals(ModelProfile& profile, const std::vector<torch::Tensor>& parameters) {
  for (const auto& layer : profile.layers) {
    if (layer.counted) profile.forward_flops_per_sample += layer.forward_flops;
  }
  profile.backward_flops_per_sample = 2.0 * profile.forward_flops_per_sample;
  for (const auto& p : parameters) {
    if (!p.requires_grad()) continue;
    profile.parameters += p.numel();
    profile.tensors += 1;
    profile.largest_tensor_bytes =
        std::max(profile.largest_tensor_bytes, 4.0 * static_cast<double>(p.numel()));
  }
  profile.gradient_bytes = 4.0 * static_cast<double>(profile.parameters);
  profile.average_tensor_bytes =
      profile.tensors > 0 ? profile.gradient_bytes / profile.tensors : 0.0;
}

// Our libtorch models: the layers in forward order with shapes propagated by formula.
void walk_libtorch_model(const std::string& model_name, nn::Module& model, const Activation& input,
                         ModelProfile& profile) {
  Activation current = input;
  Activation block_input = input;
  Activation last_conv = input;
  // Registration order is forward order except that every model applies its Linear layers after
  // all its convolutions (ResNet registers its classifier before its blocks).
  std::vector<std::pair<std::string, std::shared_ptr<nn::Module>>> modules;
  for (const auto& item : model.named_modules("", /*include_self=*/false)) {
    modules.emplace_back(item.key(), item.value());
  }
  std::stable_partition(modules.begin(), modules.end(), [](const auto& item) {
    return item.second->template as<nn::Linear>() == nullptr;
  });
  for (const auto& [name, module_ptr] : modules) {
    nn::Module& module = *module_ptr;
    if (!module.children().empty()) {  // a residual block: its shortcut starts from here
      block_input = current;
      continue;
    }
    ProfiledLayer layer;
    layer.name = name;
    if (auto* conv = module.as<nn::Conv2d>()) {
      const auto& o = conv->options;
      const auto* padding = std::get_if<torch::ExpandingArray<2>>(&o.padding());
      TRANSIENT_CHECK(padding != nullptr);
      const Activation in = ends_with(name, "shortcut_conv") ? block_input : current;
      TRANSIENT_CHECK_OP(in.channels, ==, o.in_channels());
      Activation out;
      out.channels = o.out_channels();
      out.height = conv_out(in.height, (*o.kernel_size())[0], (*o.stride())[0], (**padding)[0],
                            (*o.dilation())[0]);
      out.width = conv_out(in.width, (*o.kernel_size())[1], (*o.stride())[1], (**padding)[1],
                           (*o.dilation())[1]);
      layer.type = "Conv2d";
      layer.output_shape = out.shape();
      layer.forward_flops =
          conv2d_flops(o.in_channels(), o.out_channels(), o.groups(), (*o.kernel_size())[0],
                       (*o.kernel_size())[1], out.height, out.width);
      layer.counted = true;
      profile.layers.push_back(layer);
      last_conv = out;
      if (!ends_with(name, "shortcut_conv")) current = out;
      if (model_name == "cnn") {  // Cnn::forward max-pools 2x2 after each convolution
        current.height /= 2;
        current.width /= 2;
        profile.layers.push_back({"(max_pool2d)", "MaxPool2d", current.shape(), 0.0, false});
      }
    } else if (auto* linear = module.as<nn::Linear>()) {
      const auto in_features = linear->options.in_features();
      if (current.features == 0 &&
          current.channels * current.height * current.width != in_features) {
        // ResNet::forward pools globally before its classifier.
        TRANSIENT_CHECK_OP(current.channels, ==, in_features);
        profile.layers.push_back(
            {"(adaptive_avg_pool2d)", "AdaptiveAvgPool2d", {in_features}, 0.0, false});
      }
      current = Activation{};
      current.features = linear->options.out_features();
      layer.type = "Linear";
      layer.output_shape = current.shape();
      layer.forward_flops = linear_flops(in_features, linear->options.out_features());
      layer.counted = true;
      profile.layers.push_back(layer);
    } else if (module.as<nn::BatchNorm2d>()) {
      layer.type = "BatchNorm2d";
      layer.output_shape = last_conv.shape();
      profile.layers.push_back(layer);
    } else {
      layer.type = module.name();
      profile.layers.push_back(layer);
    }
  }
}

// (a, b) from an int, a tuple or a list of ints in a scripted module's attribute.
std::pair<std::int64_t, std::int64_t> int_pair(const c10::IValue& value, std::int64_t fallback) {
  if (value.isInt()) return {value.toInt(), value.toInt()};
  if (value.isTuple()) {
    const auto& elements = value.toTupleRef().elements();
    if (elements.size() == 2 && elements[0].isInt() && elements[1].isInt()) {
      return {elements[0].toInt(), elements[1].toInt()};
    }
  }
  if (value.isIntList()) {
    const auto list = value.toIntVector();
    if (list.size() == 2) return {list[0], list[1]};
  }
  return {fallback, fallback};
}

std::pair<std::int64_t, std::int64_t> attr_pair(const torch::jit::Module& module,
                                                const std::string& attribute,
                                                std::int64_t fallback) {
  if (!module.hasattr(attribute)) return {fallback, fallback};
  const auto value = module.attr(attribute);
  if (value.isNone()) return {-1, -1};
  return int_pair(value, fallback);
}

// The last component of a scripted module's type name: "__torch__.torch.nn.modules.conv.Conv2d"
// (or "...conv.___torch_mangle_3.Conv2d") is "Conv2d".
std::string short_type_name(const torch::jit::Module& module) {
  const std::string qualified = module.type()->name() ? module.type()->name()->qualifiedName() : "";
  const auto dot = qualified.rfind('.');
  return dot == std::string::npos ? qualified : qualified.substr(dot + 1);
}

bool is_torch_nn_type(const torch::jit::Module& module) {
  return module.type()->name() &&
         module.type()->name()->qualifiedName().rfind("__torch__.torch.nn.modules.", 0) == 0;
}

// A TorchScript module's leaf submodules in definition order (see the header for what counts).
void walk_script_module(const torch::jit::Module& model, const Activation& input,
                        ModelProfile& profile) {
  Activation spatial = input;  // propagated through Conv2d and pooling submodules only
  bool spatial_known = true;
  for (const auto& item : model.named_modules()) {
    const torch::jit::Module& module = item.value;
    if (module.children().size() > 0) continue;
    ProfiledLayer layer;
    layer.name = item.name.empty() ? "(model)" : item.name;  // a file of one layer is its root
    layer.type = short_type_name(module);
    const bool nn_type = is_torch_nn_type(module);
    if (nn_type && layer.type == "Linear") {
      const auto weight = module.attr("weight").toTensor();
      layer.output_shape = {weight.size(0)};
      layer.forward_flops = linear_flops(weight.size(1), weight.size(0));
      layer.counted = true;
    } else if (nn_type && layer.type == "Conv2d") {
      const auto weight = module.attr("weight").toTensor();
      const std::int64_t groups = module.hasattr("groups") ? module.attr("groups").toInt() : 1;
      const std::int64_t in_channels = weight.size(1) * groups;
      if (spatial_known && spatial.features == 0 && spatial.channels == in_channels) {
        const auto stride = attr_pair(module, "stride", 1);
        const auto dilation = attr_pair(module, "dilation", 1);
        std::pair<std::int64_t, std::int64_t> padding{0, 0};
        const auto padding_value = module.attr("padding");
        if (padding_value.isString() && padding_value.toStringRef() == "same") {
          padding = {-1, -1};
        } else if (!padding_value.isString()) {
          padding = int_pair(padding_value, 0);
        }
        Activation out;
        out.channels = weight.size(0);
        if (padding.first < 0) {
          out.height = spatial.height;
          out.width = spatial.width;
        } else {
          out.height =
              conv_out(spatial.height, weight.size(2), stride.first, padding.first, dilation.first);
          out.width = conv_out(spatial.width, weight.size(3), stride.second, padding.second,
                               dilation.second);
        }
        if (out.height > 0 && out.width > 0) {
          layer.output_shape = out.shape();
          layer.forward_flops = conv2d_flops(in_channels, weight.size(0), groups, weight.size(2),
                                             weight.size(3), out.height, out.width);
          layer.counted = true;
          spatial = out;
        } else {
          spatial_known = false;
        }
      } else {
        spatial_known = false;
      }
    } else if (nn_type && (layer.type == "MaxPool2d" || layer.type == "AvgPool2d")) {
      if (spatial_known && spatial.features == 0) {
        const auto kernel = attr_pair(module, "kernel_size", 1);
        auto stride = attr_pair(module, "stride", 1);
        if (stride.first < 0) stride = kernel;
        const auto padding = attr_pair(module, "padding", 0);
        const auto dilation =
            layer.type == "MaxPool2d" ? attr_pair(module, "dilation", 1) : std::make_pair(1L, 1L);
        spatial.height =
            conv_out(spatial.height, kernel.first, stride.first, padding.first, dilation.first);
        spatial.width =
            conv_out(spatial.width, kernel.second, stride.second, padding.second, dilation.second);
        layer.output_shape = spatial.shape();
      }
    }
    profile.layers.push_back(layer);
  }
}

// Times `iterations` steps after `warmup` untimed ones: forward, loss and backward, then SGD.
void time_steps(const std::function<torch::Tensor(const torch::Tensor&)>& forward,
                const std::vector<torch::Tensor>& parameters, const ProfileOptions& options,
                ModelProfile& profile) {
  std::vector<torch::Tensor> trainable;
  for (const auto& p : parameters) {
    if (p.requires_grad()) trainable.push_back(p);
  }
  if (trainable.empty()) {
    throw InputError("--model: \"" + options.model + "\" has no trainable parameters to profile");
  }
  torch::optim::SGD optimizer(trainable,
                              torch::optim::SGDOptions(options.lr).momentum(options.momentum));
  const auto images =
      torch::randn({options.batch, options.channels, options.height, options.width});
  using Clock = std::chrono::steady_clock;
  double forward_backward_s = 0.0;
  double optimizer_s = 0.0;
  for (int i = 0; i < options.warmup + options.iterations; ++i) {
    const auto start = Clock::now();
    optimizer.zero_grad();
    const auto output = forward(images);
    torch::Tensor loss;
    if (output.dim() == 2) {
      const auto labels = torch::randint(output.size(1), {options.batch}, torch::kLong);
      loss = torch::nn::functional::cross_entropy(output, labels);
    } else {
      loss = output.pow(2).mean();
    }
    loss.backward();
    const auto between = Clock::now();
    optimizer.step();
    const auto end = Clock::now();
    if (i >= options.warmup) {
      forward_backward_s += std::chrono::duration<double>(between - start).count();
      optimizer_s += std::chrono::duration<double>(end - between).count();
    }
  }
  profile.forward_backward_s = forward_backward_s / options.iterations;
  profile.optimizer_step_s = optimizer_s / options.iterations;
}

std::string format_flops(double flops) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4g", flops);
  return text;
}

std::string format_shape(const std::vector<std::int64_t>& shape) {
  if (shape.empty()) return "?";
  std::string text;
  for (auto size : shape) text += (text.empty() ? "" : "x") + std::to_string(size);
  return text;
}

std::string format_bytes(double bytes) {
  char text[32];
  if (bytes >= 1e6) {
    std::snprintf(text, sizeof text, "%.2f MB", bytes / 1e6);
  } else if (bytes >= 1e3) {
    std::snprintf(text, sizeof text, "%.1f kB", bytes / 1e3);
  } else {
    std::snprintf(text, sizeof text, "%.0f B", bytes);
  }
  return text;
}

}  // namespace

double conv2d_flops(std::int64_t in_channels, std::int64_t out_channels, std::int64_t groups,
                    std::int64_t kernel_h, std::int64_t kernel_w, std::int64_t out_h,
                    std::int64_t out_w) {
  return 2.0 * static_cast<double>(out_channels) * static_cast<double>(out_h * out_w) *
         static_cast<double>(in_channels / groups * kernel_h * kernel_w);
}

double linear_flops(std::int64_t in_features, std::int64_t out_features) {
  return 2.0 * static_cast<double>(in_features) * static_cast<double>(out_features);
}

std::string cpu_model_name() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const auto start = line.find_first_not_of(" \t", colon + 1);
    if (start != std::string::npos) return line.substr(start);
  }
  return "cpu";
}

ModelProfile profile_model(const ProfileOptions& options) {
  if (options.batch < 1) throw InputError("--batch: must be at least 1");
  if (options.iterations < 1) throw InputError("--iterations: must be at least 1");
  if (options.warmup < 0) throw InputError("--warmup: must not be negative");
  if (options.threads < 0) throw InputError("--threads: must not be negative");
  if (options.channels < 1 || options.height < 1 || options.width < 1) {
    throw InputError("--input: every size must be at least 1");
  }
  if (options.threads > 0) torch::set_num_threads(options.threads);
  torch::manual_seed(1);

  ModelProfile profile;
  profile.device = cpu_model_name();
  profile.threads = torch::get_num_threads();
  profile.batch = options.batch;
  Activation input;
  input.channels = options.channels;
  input.height = options.height;
  input.width = options.width;

  bool is_registered = false;
  for (const auto& spec : model_registry())
    is_registered = is_registered || spec.name == options.model;
  if (is_registered) {
    if (options.model == "cnn" && (options.height % 4 != 0 || options.width % 4 != 0)) {
      throw InputError("--input: the cnn needs a height and width divisible by 4");
    }
    auto model =
        make_model(options.model, ImageShape{options.channels, options.height, options.width});
    model->train();
    profile.name = options.model;
    profile.family = options.model.rfind("resnet", 0) == 0 ? "resnet" : "generic";
    walk_libtorch_model(options.model, *model, input, profile);
    const auto parameters = model->parameters();
    add_totals(profile, parameters);
    time_steps([&](const torch::Tensor& x) { return model->forward(x); }, parameters, options,
               profile);
    return profile;
  }

  const bool looks_like_file = ends_with(options.model, ".pt") ||
                               options.model.find('/') != std::string::npos ||
                               std::filesystem::exists(options.model);
  if (!looks_like_file) {
    std::string names;
    for (const auto& spec : model_registry()) names += spec.name + ", ";
    throw InputError("--model: \"" + options.model + "\" is neither a model (" + names +
                     "or a TorchScript file FILE.pt) nor an existing file");
  }
  torch::jit::Module module = load_torchscript(options.model);
  profile.name = std::filesystem::path(options.model).stem().string();
  profile.family = "generic";
  walk_script_module(module, input, profile);
  std::vector<torch::Tensor> parameters;
  for (const auto& p : module.parameters()) parameters.push_back(p);
  add_totals(profile, parameters);
  try {
    time_steps([&](const torch::Tensor& x) { return module.forward({x}).toTensor(); }, parameters,
               options, profile);
  } catch (const c10::Error& error) {
    std::string reason = error.what();
    reason = reason.substr(0, reason.find('\n'));
    throw InputError("--model: " + options.model + " does not run on a " +
                     std::to_string(options.batch) + "x" + std::to_string(options.channels) + "x" +
                     std::to_string(options.height) + "x" + std::to_string(options.width) +
                     " input (" + reason + "); see --input");
  }
  return profile;
}

std::string format_profile(const ModelProfile& profile) {
  std::ostringstream out;
  char line[256];
  std::snprintf(line, sizeof line, "%-28s %-18s %-12s %14s\n", "layer", "type", "output",
                "forward FLOPs");
  out << line;
  for (const auto& layer : profile.layers) {
    std::snprintf(line, sizeof line, "%-28s %-18s %-12s %14s\n", layer.name.c_str(),
                  layer.type.c_str(), format_shape(layer.output_shape).c_str(),
                  layer.counted ? format_flops(layer.forward_flops).c_str() : "-");
    out << line;
  }
  out << "\nFLOPs per sample (Conv2d and Linear only, 2 per multiply-add; bias, BatchNorm, ReLU,\n"
         "pooling and additions not counted):\n";
  out << "  forward   " << format_flops(profile.forward_flops_per_sample) << "\n";
  out << "  backward  " << format_flops(profile.backward_flops_per_sample) << " (2 x forward)\n";
  out << "parameters  " << profile.parameters << " in " << profile.tensors << " tensors; gradient "
      << format_bytes(profile.gradient_bytes) << " (float32), average tensor "
      << format_bytes(profile.average_tensor_bytes) << ", largest "
      << format_bytes(profile.largest_tensor_bytes) << "\n";
  std::snprintf(line, sizeof line,
                "step        batch %lld on %s, %d thread%s: forward+backward %.2f ms, SGD step "
                "%.2f ms, total %.2f ms (%.0f samples/s)\n",
                static_cast<long long>(profile.batch), profile.device.c_str(), profile.threads,
                profile.threads == 1 ? "" : "s", profile.forward_backward_s * 1e3,
                profile.optimizer_step_s * 1e3, profile.step_time_s() * 1e3,
                profile.step_time_s() > 0 ? profile.batch / profile.step_time_s() : 0.0);
  out << line;
  return out.str();
}

}  // namespace transient::train
