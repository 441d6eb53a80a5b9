#include "transient/train/option_names.h"

namespace transient::train {

template <>
const std::vector<std::pair<std::string, Loss>>& option_names<Loss>() {
  static const std::vector<std::pair<std::string, Loss>> names{
      {"cross-entropy", Loss::kCrossEntropy}, {"mse", Loss::kMse}};
  return names;
}

template <>
const std::vector<std::pair<std::string, LrSchedule>>& option_names<LrSchedule>() {
  static const std::vector<std::pair<std::string, LrSchedule>> names{
      {"cosine", LrSchedule::kCosine}, {"step", LrSchedule::kStep}};
  return names;
}

template <>
const std::vector<std::pair<std::string, Augment>>& option_names<Augment>() {
  static const std::vector<std::pair<std::string, Augment>> names{
      {"crop", Augment::kCrop}, {"resized-crop", Augment::kResizedCrop}, {"none", Augment::kNone}};
  return names;
}

template <>
const std::vector<std::pair<std::string, Compression>>& option_names<Compression>() {
  static const std::vector<std::pair<std::string, Compression>> names{
      {"none", Compression::kNone}, {"bf16", Compression::kBf16}, {"fp16", Compression::kFp16}};
  return names;
}

template <>
const std::vector<std::pair<std::string, Precision>>& option_names<Precision>() {
  static const std::vector<std::pair<std::string, Precision>> names{
      {"fp32", Precision::kFp32}, {"bf16", Precision::kBf16}, {"fp16", Precision::kFp16}};
  return names;
}

template <>
const std::vector<std::pair<std::string, MemoryFormat>>& option_names<MemoryFormat>() {
  static const std::vector<std::pair<std::string, MemoryFormat>> names{
      {"auto", MemoryFormat::kAuto},
      {"channels-last", MemoryFormat::kChannelsLast},
      {"contiguous", MemoryFormat::kContiguous}};
  return names;
}

template <>
const std::vector<std::pair<std::string, OnDivergence>>& option_names<OnDivergence>() {
  static const std::vector<std::pair<std::string, OnDivergence>> names{
      {"stop", OnDivergence::kStop}, {"rollback", OnDivergence::kRollback}};
  return names;
}

template <>
const std::vector<std::pair<std::string, Device>>& option_names<Device>() {
  static const std::vector<std::pair<std::string, Device>> names{
      {"auto", Device::kAuto}, {"cpu", Device::kCpu}, {"cuda", Device::kCuda}};
  return names;
}

bool is_model_file(const std::string& name) {
  auto ends_with = [&](const std::string& suffix) {
    return name.size() > suffix.size() &&
           name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return ends_with(".pt") || ends_with(".pth");
}

bool same_model(const std::string& recorded, const std::string& job_model) {
  return recorded == job_model || (is_model_file(recorded) && is_model_file(job_model));
}

}  // namespace transient::train
