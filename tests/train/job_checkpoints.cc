#include "train/job_checkpoints.h"

#include <filesystem>

namespace transient::train::testing {

void expect_every_checkpoint_loads(const std::string& job_dir) {
  CheckpointDirectory directory((fs::path(job_dir) / "checkpoints").string(), 1);
  const auto records = directory.list();
  ASSERT_FALSE(records.empty()) << job_dir;
  for (const auto& record : records) {
    EXPECT_EQ(
        deserialize_checkpoint(directory.read_verified(record), directory.path_of(record)).step,
        record.step);
  }
}

}  // namespace transient::train::testing
