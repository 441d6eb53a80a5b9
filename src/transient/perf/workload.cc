#include "transient/perf/workload.h"

#include <cctype>
#include <cmath>
#include <set>

#include "transient/core/atomic_file.h"
#include "transient/core/bounds.h"
#include "transient/core/error.h"
#include "transient/core/structured_input.h"
#include "transient/perf/internal/json_lines.h"

namespace transient::perf {
namespace {

// CM-DARE's published features of the 20 CNNs it measured (batch 128, CIFAR-10). Source:
// cake-lab/CM-DARE data/, single_worker_speed/0latency_norm_computation.csv (columns Model FLOPs,
// Number of Parameters, Number of Tensors, Average and Max Tensor Size (MB); the sizes are MiB of
// float32 tensors). The sizes are missing for custom9, custom10 and the 32d Shake-Shakes; their
// average is computed from parameters and tensors and their largest left unknown.
struct CmdareFeatures {
  const char* name;         // our name
  const char* cmdare_name;  // CM-DARE's `Model (temp)`
  const char* family;
  double model_flops;  // CM-DARE's Model FLOPs for a step of 128 samples
  std::int64_t parameters;
  int tensors;
  double average_tensor_mib;  // 0 = not published
  double largest_tensor_mib;  // 0 = not published
};

constexpr CmdareFeatures kCmdare[] = {
    {"resnet-15", "Res15", "resnet", 630989589, 693818, 50, 0.052934113, 0.5625},
    {"resnet-32", "Res32", "resnet", 1658696889, 1857722, 104, 0.068140837, 0.5625},
    {"custom1", "custom1", "resnet", 860117021, 1063226, 62, 0.06541750508, 0.5625},
    {"custom2", "custom2", "resnet", 1087710757, 1211194, 74, 0.06243700595, 0.5625},
    {"custom3", "custom3", "resnet", 1542543029, 1451706, 98, 0.05650835621, 0.5625},
    {"custom4", "custom4", "resnet", 2343835089, 2633658, 140, 0.07176148551, 0.5625},
    {"custom5", "custom5", "resnet", 2915531621, 3391034, 170, 0.07609275369, 0.5625},
    {"custom6", "custom6", "resnet", 3943594121, 4610362, 224, 0.07851399694, 0.5625},
    {"custom7", "custom7", "resnet", 4970946221, 5718842, 278, 0.07847356453, 0.5625},
    {"custom8", "custom8", "resnet", 5882144461, 6421306, 326, 0.07513907497, 0.5625},
    {"custom9", "custom9", "resnet", 2001265989, 2245690, 122, 0, 0},
    {"custom10", "custom10", "resnet", 4284629525, 4776890, 242, 0, 0},
    {"shake-shake-small", "shakesmall", "shake-shake", 2587431950, 2926986, 216, 0.05169243283,
     0.5625},
    {"shake-shake-mid", "shakemid", "shake-shake", 10208089582, 11661610, 216, 0.2059514434, 2.25},
    {"shake-shake-big", "shakebig", "shake-shake", 22864820174, 26204362, 216, 0.462785686, 5.0625},
    {"shake-shake-16", "shake16", "shake-shake", 663908170, 737418, 210, 0.01339536394, 0.140625},
    {"shake-shake-48", "shake48", "shake-shake", 5768251646, 6568282, 216, 0.1160000342, 1.265625},
    {"shake-shake-80", "shake80", "shake-shake", 15906945758, 18206970, 216, 0.3215466605,
     3.515625},
    {"shake-shake-small-32d", "shake small 32d", "shake-shake", 3273945570, 3703818, 264, 0, 0},
    {"shake-shake-mid-32d", "shake mid 32d", "shake-shake", 12950909250, 14763562, 264, 0, 0},
};

constexpr double kMib = 1024.0 * 1024.0;

Workload make_builtin(const CmdareFeatures& f) {
  Workload w;
  w.name = f.name;
  w.family = f.family;
  w.batch_per_worker = kCmdareBatch;
  w.forward_flops_per_sample = f.model_flops / kCmdareBatch * kFlopsPerCmdareFlop;
  w.backward_flops_per_sample = 2.0 * w.forward_flops_per_sample;
  w.parameters = f.parameters;
  w.gradient_bytes = 4.0 * static_cast<double>(f.parameters);
  w.tensors = f.tensors;
  w.average_tensor_bytes =
      f.average_tensor_mib > 0 ? f.average_tensor_mib * kMib : w.gradient_bytes / f.tensors;
  w.largest_tensor_bytes = f.largest_tensor_mib * kMib;
  w.source = std::string("CM-DARE (ICDCS 2020) published features of ") + f.cmdare_name +
             ", batch 128, CIFAR-10";
  return w;
}

struct Builtins {
  std::vector<Workload> workloads;
  std::vector<std::pair<std::string, std::size_t>> keys;  // normalised name or alias -> index
};

const Builtins& builtins() {
  static const Builtins all = [] {
    Builtins out;
    for (const auto& f : kCmdare) {
      out.keys.emplace_back(workload_key(f.name), out.workloads.size());
      out.keys.emplace_back(workload_key(f.cmdare_name), out.workloads.size());
      out.workloads.push_back(make_builtin(f));
    }
    // The names of CM-DARE's figures and folders.
    const std::pair<const char*, const char*> aliases[] = {
        {"ResNet-15", "resnet-15"},
        {"ResNet-32", "resnet-32"},
        {"ShakeShake-Small", "shake-shake-small"},
        {"ShakeShake-Big", "shake-shake-big"},
        {"res15", "resnet-15"},
        {"res32", "resnet-32"},
        {"shake32d32", "shake-shake-small-32d"},
        {"shake64d32", "shake-shake-mid-32d"},
        {"cus1", "custom1"},
        {"cus2", "custom2"},
        {"cus3", "custom3"},
        {"cus4", "custom4"},
        {"cus5", "custom5"},
        {"cus6", "custom6"},
        {"cus7", "custom7"},
        {"cus8", "custom8"},
        {"cus9", "custom9"},
        {"cus10", "custom10"},
    };
    for (const auto& [alias, name] : aliases) {
      for (std::size_t i = 0; i < out.workloads.size(); ++i) {
        if (out.workloads[i].name == name) out.keys.emplace_back(workload_key(alias), i);
      }
    }
    return out;
  }();
  return all;
}

class ProfileReader {
 public:
  ProfileReader(const std::string& text, const std::string& name) : text_(text), name_(name) {}

  [[noreturn]] void fail(const std::string& key, const std::string& message,
                         std::size_t from = 0) const {
    throw InputError(name_, key.empty() ? 0 : internal::json_key_line(text_, key, from), message);
  }

  // The number at `key`, or `fallback` when it is absent (an error when `required`). The number
  // must lie within `bound`, and be above zero unless `allow_zero`.
  double number(const nlohmann::json& object, const std::string& key, const Bound& bound,
                bool required, double fallback, bool allow_zero = false,
                std::size_t from = 0) const {
    if (!object.contains(key)) {
      if (required) fail("", "missing \"" + key + "\" (" + bound.accepted() + ")");
      return fallback;
    }
    const auto& value = object.at(key);
    if (!value.is_number()) fail(key, "\"" + key + "\" must be a number", from);
    const double number = value.get<double>();
    if (!bound.contains(number) || (!allow_zero && number == 0)) {
      fail(key,
           "\"" + key + "\" is " + number_text(number) + "; accepted: " + bound.accepted() +
               (allow_zero || bound.lo > 0 ? "" : ", not 0"),
           from);
    }
    return number;
  }

  std::string text(const nlohmann::json& object, const std::string& key, bool required,
                   const std::string& fallback, std::size_t from = 0) const {
    if (!object.contains(key)) {
      if (required) fail("", "missing \"" + key + "\" (a string)");
      return fallback;
    }
    const auto& value = object.at(key);
    if (!value.is_string() || value.get<std::string>().empty()) {
      fail(key, "\"" + key + "\" must be a non-empty string", from);
    }
    return value.get<std::string>();
  }

  void only_keys(const nlohmann::json& object, const std::set<std::string>& accepted,
                 std::size_t from = 0) const {
    for (const auto& item : object.items()) {
      if (accepted.count(item.key())) continue;
      std::string list;
      for (const auto& key : accepted) list += (list.empty() ? "" : ", ") + key;
      fail(item.key(), "unknown key \"" + item.key() + "\"; accepted: " + list, from);
    }
  }

  const std::string& text() const { return text_; }

 private:
  const std::string& text_;
  const std::string& name_;
};

}  // namespace

std::string workload_key(const std::string& name) {
  std::string out;
  for (char c : name) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  return out;
}

double Workload::flops_per_step() const { return flops_per_sample() * batch_per_worker; }

const std::vector<std::string>& workload_families() {
  static const std::vector<std::string> families = {"resnet", "shake-shake", "generic"};
  return families;
}

const std::vector<Workload>& builtin_workloads() { return builtins().workloads; }

const Workload* find_workload_or_null(const std::string& name) {
  const std::string key = workload_key(name);
  for (const auto& [alias, index] : builtins().keys) {
    if (alias == key) return &builtins().workloads[index];
  }
  return nullptr;
}

const Workload& find_workload(const std::string& name) {
  if (const Workload* found = find_workload_or_null(name)) return *found;
  std::string list;
  for (const auto& w : builtin_workloads()) list += (list.empty() ? "" : ", ") + w.name;
  throw InputError("unknown workload \"" + name + "\"; built-in workloads: " + list +
                   " (or give a profile file with --profile)");
}

Workload parse_workload_profile(const std::string& text, const std::string& name) {
  const nlohmann::json root = parse_json(text, name);
  const ProfileReader r(text, name);
  if (!root.is_object()) throw InputError(name, 1, "a workload profile must be a JSON object");
  r.only_keys(root,
              {"name", "family", "batch_per_worker", "forward_flops_per_sample",
               "backward_flops_per_sample", "parameters", "gradient_bytes", "tensors",
               "average_tensor_bytes", "largest_tensor_bytes", "measured", "source", "model"});
  Workload w;
  w.name = r.text(root, "name", true, "");
  w.family = r.text(root, "family", false, "generic");
  bool known_family = false;
  for (const auto& family : workload_families()) known_family |= family == w.family;
  if (!known_family) {
    r.fail("family", "unknown family \"" + w.family + "\"; accepted: resnet, shake-shake, generic");
  }
  w.batch_per_worker =
      static_cast<int>(r.number(root, "batch_per_worker", bounds::kBatch, false, 128));
  w.forward_flops_per_sample =
      r.number(root, "forward_flops_per_sample", bounds::kFlopsPerSample, true, 0);
  w.backward_flops_per_sample = r.number(root, "backward_flops_per_sample", bounds::kFlopsPerSample,
                                         false, 2.0 * w.forward_flops_per_sample);
  const double parameters = r.number(root, "parameters", bounds::kParameters, false, 0, true);
  w.parameters = static_cast<std::int64_t>(parameters);
  w.gradient_bytes =
      r.number(root, "gradient_bytes", bounds::kBytes, false, 4.0 * parameters, true);
  if (w.gradient_bytes <= 0) {
    r.fail(root.contains("gradient_bytes") ? "gradient_bytes" : "",
           "the profile needs \"parameters\" or \"gradient_bytes\" > 0 (the bytes a step moves)");
  }
  w.tensors = static_cast<int>(r.number(root, "tensors", bounds::kTensors, false, 1));
  w.average_tensor_bytes =
      r.number(root, "average_tensor_bytes", bounds::kBytes, false, w.gradient_bytes / w.tensors);
  w.largest_tensor_bytes = r.number(root, "largest_tensor_bytes", bounds::kBytes, false, 0, true);
  if (w.largest_tensor_bytes > w.gradient_bytes * (1 + 1e-9)) {
    r.fail("largest_tensor_bytes", "\"largest_tensor_bytes\" exceeds \"gradient_bytes\"");
  }
  if (root.contains("measured")) {
    const auto& m = root.at("measured");
    const std::size_t at = internal::json_key_offset(text, "measured");
    if (!m.is_object()) {
      r.fail("measured", "\"measured\" must be an object {\"device\": ..., \"step_time_s\": ...}");
    }
    r.only_keys(m, {"device", "step_time_s", "threads"}, at);
    MeasuredStep step;
    step.device = r.text(m, "device", true, "", at);
    step.step_time_s = r.number(m, "step_time_s", bounds::kStepTimeS, true, 0, false, at);
    constexpr Bound kThreads{1.0, 4096.0, "threads", true};
    step.threads = static_cast<int>(r.number(m, "threads", kThreads, false, 0, false, at));
    w.measured = step;
  }
  w.source = root.contains("source") ? r.text(root, "source", false, "") : "profile " + name;
  w.model = r.text(root, "model", false, "");
  return w;
}

Workload load_workload_profile(const std::string& path) {
  return parse_workload_profile(read_file(path), path);
}

nlohmann::json to_json(const Workload& w) {
  nlohmann::json out = {
      {"name", w.name},
      {"family", w.family},
      {"batch_per_worker", w.batch_per_worker},
      {"forward_flops_per_sample", w.forward_flops_per_sample},
      {"backward_flops_per_sample", w.backward_flops_per_sample},
      {"parameters", w.parameters},
      {"gradient_bytes", w.gradient_bytes},
      {"tensors", w.tensors},
      {"average_tensor_bytes", w.average_tensor_bytes},
      {"largest_tensor_bytes", w.largest_tensor_bytes},
      {"source", w.source},
  };
  if (w.measured) {
    out["measured"] = {{"device", w.measured->device}, {"step_time_s", w.measured->step_time_s}};
    if (w.measured->threads > 0) out["measured"]["threads"] = w.measured->threads;
  }
  if (!w.model.empty()) out["model"] = w.model;
  return out;
}

}  // namespace transient::perf
