// A job's checkpoints in the trainer's tests, read with libtorch: the newest state, and the
// parameters and optimiser state of two states compared.
#pragma once

#include <torch/torch.h>

#include <string>
#include <utility>
#include <vector>

#include "train/job_records.h"
#include "transient/train/checkpoint.h"

namespace transient::train::testing {

inline CheckpointState latest_checkpoint(const std::string& job_dir) {
  CheckpointDirectory directory((fs::path(job_dir) / "checkpoints").string(), 1);
  const auto records = directory.list();
  EXPECT_FALSE(records.empty()) << job_dir;
  if (records.empty()) return {};
  return deserialize_checkpoint(directory.read_verified(records.back()),
                                directory.path_of(records.back()));
}

// The model's parameters and the optimiser's state (not the batch-norm statistics, which each
// member gathers on its own shards), name by name, slot by slot; AdamW's integer step counts only
// if `integers`.
inline std::vector<std::pair<std::string, torch::Tensor>> trained_tensors(
    const CheckpointState& state, bool integers) {
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  for (const auto& [name, tensor] : state.model_state) {
    if (name.find("running_") == std::string::npos &&
        name.find("num_batches_tracked") == std::string::npos) {
      tensors.emplace_back(name, tensor);
    }
  }
  for (const auto& [slot, by_name] : state.optimizer_state) {
    for (const auto& [name, tensor] : by_name) {
      if (integers || tensor.is_floating_point()) tensors.emplace_back(slot + ":" + name, tensor);
    }
  }
  return tensors;
}

// The largest absolute difference between two states' parameters and optimiser state.
inline double max_difference(const CheckpointState& a, const CheckpointState& b) {
  const auto x = trained_tensors(a, false);
  const auto y = trained_tensors(b, false);
  EXPECT_EQ(x.size(), y.size());
  double worst = 0;
  for (std::size_t i = 0; i < std::min(x.size(), y.size()); ++i) {
    EXPECT_EQ(x[i].first, y[i].first);
    worst = std::max(worst, (x[i].second - y[i].second).abs().max().item<double>());
  }
  return worst;
}

// Whether two states hold the same parameters and optimiser state, bit for bit.
inline bool bitwise_equal(const CheckpointState& a, const CheckpointState& b) {
  const auto x = trained_tensors(a, true);
  const auto y = trained_tensors(b, true);
  if (x.size() != y.size()) return false;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (x[i].first != y[i].first || !torch::equal(x[i].second, y[i].second)) return false;
  }
  return true;
}

}  // namespace transient::train::testing
