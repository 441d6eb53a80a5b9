// `transient profile`: a model's FLOPs, parameters and step time on this machine, as a workload
// profile that `predict` and `plan` take (--profile FILE).
#include <cstdio>
#include <memory>
#include <string>

#include "transient/cli/commands.h"
#include "transient/cli/torch_commands.h"
#include "transient/core/atomic_file.h"
#include "transient/core/error.h"
#include "transient/perf/workload.h"
#include "transient/train/profiler.h"

namespace transient::cli {
namespace {

// "3x32x32" into the options' input shape.
void parse_input_shape(const std::string& text, train::ProfileOptions& options) {
  long long c = 0, h = 0, w = 0;
  char tail = 0;
  if (std::sscanf(text.c_str(), "%lldx%lldx%lld%c", &c, &h, &w, &tail) != 3 || c < 1 || h < 1 ||
      w < 1) {
    throw InputError("--input: \"" + text + "\" is not CxHxW with positive sizes, e.g. 1x28x28");
  }
  options.channels = c;
  options.height = h;
  options.width = w;
}

perf::Workload to_workload(const train::ModelProfile& profile, const std::string& input,
                           const std::string& family) {
  perf::Workload workload;
  workload.name = profile.name;
  workload.family = family.empty() ? profile.family : family;
  workload.batch_per_worker = static_cast<int>(profile.batch);
  workload.forward_flops_per_sample = profile.forward_flops_per_sample;
  workload.backward_flops_per_sample = profile.backward_flops_per_sample;
  workload.parameters = profile.parameters;
  workload.gradient_bytes = profile.gradient_bytes;
  workload.tensors = profile.tensors;
  workload.average_tensor_bytes = profile.average_tensor_bytes;
  workload.largest_tensor_bytes = profile.largest_tensor_bytes;
  workload.measured = perf::MeasuredStep{profile.device, profile.step_time_s(), profile.threads};
  workload.model = profile.model;
  workload.source = "transient profile: input " + input + ", " + std::to_string(profile.threads) +
                    " threads; FLOPs of the convolutions, linear layers and matrix products run "
                    "(2 per multiply-add), backward = 2 x forward";
  return workload;
}

}  // namespace

void add_profile_command(CLI::App& app) {
  auto options = std::make_shared<train::ProfileOptions>();
  auto input = std::make_shared<std::string>("1x28x28");
  auto output = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  auto family = std::make_shared<std::string>();
  auto* profile = app.add_subcommand("profile", torch_command_summary("profile"));
  profile
      ->add_option("--model", options->model,
                   "cnn, mlp, resnet20, resnet32, or a TorchScript file (FILE.pt)")
      ->required();
  profile->add_option("--batch", options->batch, "samples per step")->required();
  profile->add_option("--input", *input, "input shape CxHxW")->capture_default_str();
  profile->add_option("--iterations", options->iterations, "timed steps (after warm-up)")
      ->capture_default_str();
  profile->add_option("--warmup", options->warmup, "untimed steps first")->capture_default_str();
  profile->add_option("--threads", options->threads, "intra-op threads (0 = all cores)")
      ->capture_default_str();
  profile->add_option("-o,--output", *output, "write the profile JSON to this file");
  profile->add_flag("--json", *json, "print the profile JSON instead of the table");
  profile->add_option("--trace", options->trace_path,
                      "after the timed steps, run as many more under PyTorch's profiler and write "
                      "their Chrome trace (operators, input shapes, times) to this file: open it "
                      "in Perfetto or chrome://tracing");
  profile
      ->add_option("--family", *family,
                   "whose fitted compute efficiency the models apply: resnet, shake-shake or "
                   "generic (default: resnet for the trainer's ResNets, else generic)")
      ->check(CLI::IsMember({"resnet", "shake-shake", "generic"}));
  profile->callback([options, input, output, json, family] {
    parse_input_shape(*input, *options);
    // Before the timing (minutes for a large model), not after it.
    if (!output->empty()) require_writable_output(*output, "-o");
    const auto result = train::profile_model(*options);
    const auto text = perf::to_json(to_workload(result, *input, *family)).dump(2) + "\n";
    if (!output->empty()) write_file_atomically(*output, text);
    if (*json) {
      std::fputs(text.c_str(), stdout);
      return;
    }
    std::fputs(train::format_profile(result).c_str(), stdout);
    if (!output->empty()) std::printf("profile written to %s\n", output->c_str());
  });
}

}  // namespace transient::cli
