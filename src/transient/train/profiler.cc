#include "transient/train/profiler.h"

#include <ATen/record_function.h>
#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/script.h>
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string_view>
#include <utility>

#include "transient/core/error.h"
#include "transient/core/text.h"
#include "transient/train/models.h"
#include "transient/train/step_trace.h"

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

// Counting what runs: a thread-local RecordFunction callback sees every ATen operator that a
// forward pass dispatches, with its inputs and outputs, however the model calls it (a module, a
// functional call, TorchScript). Operators nest (conv2d calls convolution calls _convolution):
// only the outermost multiply-add operator is counted, and each top-level operator is one row.
struct OpRow {
  std::string op;  // "conv2d", "max_pool2d", ...
  std::vector<std::int64_t> output_shape;
  double flops = 0.0;  // of the multiply-add operators run inside it
};

struct OpCounting {
  std::int64_t batch = 0;  // samples of the input: an output of that many is per sample
  std::vector<OpRow> rows;
  int depth = 0;          // operators open now
  int counted_depth = 0;  // multiply-add operators open now
};

thread_local OpCounting* g_counting = nullptr;

struct OpContext : at::ObserverContext {
  bool top = false;
  bool multiply_add = false;      // of the counted family
  bool counted = false;           // the outermost of that family: its FLOPs count
  double flops = 0.0;             // known from the inputs
  double flops_per_output = 0.0;  // or per element of the first output
};

enum class MultiplyAdd { none, convolution, transposed_convolution, linear, mm, bmm, matmul };

MultiplyAdd multiply_add_of(std::string_view name) {
  if (name.rfind("aten::", 0) != 0) return MultiplyAdd::none;
  name.remove_prefix(6);
  if (name == "conv1d" || name == "conv2d" || name == "conv3d" || name == "convolution" ||
      name == "_convolution") {
    return MultiplyAdd::convolution;
  }
  if (name.rfind("conv_transpose", 0) == 0) return MultiplyAdd::transposed_convolution;
  if (name == "linear") return MultiplyAdd::linear;
  if (name == "addmm" || name == "mm") return MultiplyAdd::mm;
  if (name == "bmm" || name == "baddbmm") return MultiplyAdd::bmm;
  if (name == "matmul") return MultiplyAdd::matmul;
  return MultiplyAdd::none;
}

const at::Tensor* tensor_at(c10::ArrayRef<const c10::IValue> inputs, std::size_t i) {
  return i < inputs.size() && inputs[i].isTensor() ? &inputs[i].toTensor() : nullptr;
}

double elements(const at::Tensor& t) { return static_cast<double>(t.numel()); }

// What a multiply-add operator costs, from its inputs (2 FLOPs per multiply-add).
void cost_from_inputs(MultiplyAdd kind, std::string_view name,
                      c10::ArrayRef<const c10::IValue> inputs, OpContext& context) {
  switch (kind) {
    case MultiplyAdd::convolution:
    case MultiplyAdd::transposed_convolution: {
      const at::Tensor* input = tensor_at(inputs, 0);
      const at::Tensor* weight = tensor_at(inputs, 1);
      if (input == nullptr || weight == nullptr || weight->dim() < 2) return;
      // Each output element of a convolution takes weight.numel() / out_channels multiply-adds;
      // each input element of a transposed one feeds weight.numel() / in_channels of them.
      const double per_element = elements(*weight) / static_cast<double>(weight->size(0));
      bool transposed = kind == MultiplyAdd::transposed_convolution;
      if ((name == "aten::convolution" || name == "aten::_convolution") && inputs.size() > 6 &&
          inputs[6].isBool()) {
        transposed = inputs[6].toBool();
      }
      if (transposed) {
        context.flops = 2.0 * elements(*input) * per_element;
      } else {
        context.flops_per_output = 2.0 * per_element;
      }
      return;
    }
    case MultiplyAdd::linear: {
      const at::Tensor* input = tensor_at(inputs, 0);
      const at::Tensor* weight = tensor_at(inputs, 1);
      if (input == nullptr || weight == nullptr || weight->dim() != 2) return;
      context.flops = 2.0 * elements(*input) * static_cast<double>(weight->size(0));
      return;
    }
    case MultiplyAdd::mm:
    case MultiplyAdd::bmm: {
      const std::size_t first = name == "aten::mm" || name == "aten::bmm" ? 0 : 1;
      const at::Tensor* a = tensor_at(inputs, first);
      const at::Tensor* b = tensor_at(inputs, first + 1);
      if (a == nullptr || b == nullptr || a->dim() < 2 || b->dim() < 2) return;
      context.flops = 2.0 * elements(*a) * static_cast<double>(b->size(-1));
      return;
    }
    case MultiplyAdd::matmul: {
      const at::Tensor* a = tensor_at(inputs, 0);
      if (a == nullptr || a->dim() < 1) return;
      context.flops_per_output = 2.0 * static_cast<double>(a->size(-1));
      return;
    }
    case MultiplyAdd::none:
      return;
  }
}

std::unique_ptr<at::ObserverContext> on_operator_start(const at::RecordFunction& fn) {
  auto context = std::make_unique<OpContext>();
  OpCounting* counting = g_counting;
  if (counting == nullptr) return context;
  const std::string_view name = fn.name();
  context->top = ++counting->depth == 1;
  if (context->top) {
    counting->rows.push_back(
        {std::string(name.rfind("aten::", 0) == 0 ? name.substr(6) : name), {}, 0.0});
  }
  const MultiplyAdd kind = multiply_add_of(name);
  if (kind != MultiplyAdd::none) {
    context->multiply_add = true;
    if (counting->counted_depth++ == 0) {
      context->counted = true;
      cost_from_inputs(kind, name, fn.inputs(), *context);
    }
  }
  return context;
}

void on_operator_end(const at::RecordFunction& fn, at::ObserverContext* base) {
  OpCounting* counting = g_counting;
  auto* context = static_cast<OpContext*>(base);
  if (counting == nullptr || context == nullptr) return;
  const auto& outputs = fn.outputs();
  const at::Tensor* output =
      !outputs.empty() && outputs[0].isTensor() ? &outputs[0].toTensor() : nullptr;
  if (context->multiply_add) --counting->counted_depth;
  if (context->counted && !counting->rows.empty()) {
    double flops = context->flops;
    if (output != nullptr) flops += context->flops_per_output * elements(*output);
    counting->rows.back().flops += flops;
  }
  if (context->top && output != nullptr && !counting->rows.empty() && output->dim() > 0 &&
      output->size(0) == counting->batch) {
    const auto sizes = output->sizes();
    counting->rows.back().output_shape.assign(sizes.begin() + 1, sizes.end());
  }
  --counting->depth;
}

// The operators that `forward` runs on `input`, in order, with their FLOPs per sample.
std::vector<OpRow> count_operators(
    const std::function<torch::Tensor(const torch::Tensor&)>& forward, const torch::Tensor& input) {
  OpCounting counting;
  counting.batch = input.size(0);
  g_counting = &counting;
  const auto handle =
      at::addThreadLocalCallback(at::RecordFunctionCallback(on_operator_start, on_operator_end)
                                     .needsInputs(true)
                                     .needsOutputs(true)
                                     .scopes({at::RecordScope::FUNCTION}));
  try {
    torch::NoGradGuard no_grad;
    forward(input);
  } catch (...) {
    at::removeCallback(handle);
    g_counting = nullptr;
    throw;
  }
  at::removeCallback(handle);
  g_counting = nullptr;
  const double batch = static_cast<double>(input.size(0));
  for (auto& row : counting.rows) row.flops /= batch;
  return counting.rows;
}

// Two samples of the profiled input shape: what the operators are counted on (per sample).
torch::Tensor sample_input(const ProfileOptions& options) {
  return torch::randn({2, options.channels, options.height, options.width});
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
  // One step; the seconds of its forward+backward and of its optimizer step.
  auto step = [&]() -> std::pair<double, double> {
    RECORD_USER_SCOPE("transient::step");
    const auto start = Clock::now();
    {
      RECORD_USER_SCOPE("transient::forward_backward");
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
    }
    const auto between = Clock::now();
    {
      RECORD_USER_SCOPE("transient::optimizer_step");
      optimizer.step();
    }
    const auto end = Clock::now();
    return {std::chrono::duration<double>(between - start).count(),
            std::chrono::duration<double>(end - between).count()};
  };
  double forward_backward_s = 0.0;
  double optimizer_s = 0.0;
  for (int i = 0; i < options.warmup + options.iterations; ++i) {
    const auto [compute_s, update_s] = step();
    if (i >= options.warmup) {
      forward_backward_s += compute_s;
      optimizer_s += update_s;
    }
  }
  profile.forward_backward_s = forward_backward_s / options.iterations;
  profile.optimizer_step_s = optimizer_s / options.iterations;
  if (options.trace_path.empty()) return;
  // Traced after the timed steps, so that the profiler's overhead is in none of the timings.
  start_profiler(/*gpu=*/false);
  for (int i = 0; i < options.iterations; ++i) step();
  const auto result = torch::autograd::profiler::disableProfiler();
  save_profiler_trace(*result, options.trace_path, "--trace");
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
  const std::string shape = std::to_string(options.channels) + "x" +
                            std::to_string(options.height) + "x" + std::to_string(options.width);
  // Bounded where they enter, as a data set's images are: 1x100000x100000 asked libtorch for
  // terabytes and ended as an internal failure.
  if (options.channels > 4096 || options.height > 4096 || options.width > 4096) {
    throw InputError("--input: " + shape +
                     " is out of range; accepted: 1 to 4096 channels, height and width");
  }
  if (options.batch > 1'000'000) {
    throw InputError("--batch: " + std::to_string(options.batch) +
                     " is out of range; accepted: 1 to 1e6 samples");
  }
  const double input_bytes =
      static_cast<double>(options.batch) * static_cast<double>(options.channels) *
      static_cast<double>(options.height) * static_cast<double>(options.width) * sizeof(float);
  const double memory_bytes = static_cast<double>(::sysconf(_SC_PHYS_PAGES)) *
                              static_cast<double>(::sysconf(_SC_PAGE_SIZE));
  if (memory_bytes > 0 && input_bytes > memory_bytes) {
    char sizes[96];
    std::snprintf(sizes, sizeof sizes, "%.1f GiB, more than this machine's %.1f GiB",
                  input_bytes / (1 << 30), memory_bytes / (1 << 30));
    throw InputError("--batch " + std::to_string(options.batch) + " of --input " + shape +
                     ": the step's input alone is " + sizes +
                     " of memory; accepted: a smaller batch or input");
  }
  if (!options.trace_path.empty()) {
    // Refused before anything is timed; the trace itself is written whole at the end.
    const std::string probe = options.trace_path + ".partial";
    if (!std::ofstream(probe)) {
      throw InputError(options.trace_path, 0,
                       "--trace: cannot write here (" + std::string(std::strerror(errno)) + ")");
    }
    std::filesystem::remove(probe);
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

  if (model_registry().find(options.model) != nullptr) {
    if (options.model == "cnn" && (options.height % 4 != 0 || options.width % 4 != 0)) {
      throw InputError("--input: the cnn needs a height and width divisible by 4");
    }
    auto model =
        make_model(options.model, ImageShape{options.channels, options.height, options.width});
    model->train();
    profile.name = options.model;
    profile.model = options.model;
    profile.family = options.model.rfind("resnet", 0) == 0 ? "resnet" : "generic";
    walk_libtorch_model(options.model, *model, input, profile);
    const auto parameters = model->parameters();
    add_totals(profile, parameters);
    // The table names our layers; what runs must count the same.
    model->eval();
    double counted = 0.0;
    for (const auto& row : count_operators(
             [&](const torch::Tensor& x) { return model->forward(x); }, sample_input(options))) {
      counted += row.flops;
    }
    model->train();
    TRANSIENT_CHECK(std::abs(counted - profile.forward_flops_per_sample) <=
                    1e-9 * profile.forward_flops_per_sample);
    // Timed as `transient train` runs it (its default --memory-format).
    if (channels_last(*model, MemoryFormat::kAuto)) to_channels_last(*model);
    time_steps([&](const torch::Tensor& x) { return model->forward(x); }, parameters, options,
               profile);
    return profile;
  }

  const bool looks_like_file = is_model_file(options.model) ||
                               options.model.find('/') != std::string::npos ||
                               std::filesystem::exists(options.model);
  if (!looks_like_file) {
    throw InputError("--model: \"" + options.model + "\" is neither a model (" +
                     model_registry().names() +
                     ", or a TorchScript file FILE.pt) nor an existing file");
  }
  torch::jit::Module module = load_torchscript(options.model);
  profile.name = std::filesystem::path(options.model).stem().string();
  profile.model = std::filesystem::absolute(options.model).lexically_normal().string();
  profile.family = "generic";
  std::vector<torch::Tensor> parameters;
  for (const auto& p : module.parameters()) parameters.push_back(p);
  try {
    const auto forward = [&](const torch::Tensor& x) { return module.forward({x}).toTensor(); };
    module.eval();
    const auto rows = count_operators(forward, sample_input(options));
    module.train();
    for (std::size_t i = 0; i < rows.size(); ++i) {
      profile.layers.push_back({"#" + std::to_string(i + 1), rows[i].op, rows[i].output_shape,
                                rows[i].flops, rows[i].flops > 0});
    }
    add_totals(profile, parameters);
    time_steps(forward, parameters, options, profile);
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
  out << "\nFLOPs per sample, as run (convolutions, linear layers and matrix products, 2 per\n"
         "multiply-add; bias, normalisation, activations, pooling and additions not counted):\n";
  out << "  forward   " << format_flops(profile.forward_flops_per_sample) << "\n";
  out << "  backward  " << format_flops(profile.backward_flops_per_sample) << " (2 x forward)\n";
  out << "parameters  " << profile.parameters << " in " << profile.tensors << " tensors; gradient "
      << format_bytes(profile.gradient_bytes) << " (float32), average tensor "
      << format_bytes(profile.average_tensor_bytes) << ", largest "
      << format_bytes(profile.largest_tensor_bytes) << "\n";
  std::snprintf(line, sizeof line,
                "step        batch %lld on %s, %s: forward+backward %.2f ms, SGD step "
                "%.2f ms, total %.2f ms (%.0f samples/s)\n",
                static_cast<long long>(profile.batch), profile.device.c_str(),
                counted(profile.threads, "thread").c_str(), profile.forward_backward_s * 1e3,
                profile.optimizer_step_s * 1e3, profile.step_time_s() * 1e3,
                profile.step_time_s() > 0 ? profile.batch / profile.step_time_s() : 0.0);
  out << line;
  return out.str();
}

}  // namespace transient::train
