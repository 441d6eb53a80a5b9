// Checkpoint and restart time models: by hand, recovery of known constants, and the built-in
// constants against a fit on CM-DARE's data.
#include <gtest/gtest.h>

#include <filesystem>

#include "transient/core/error.h"
#include "transient/perf/checkpoint_time_model.h"
#include "transient/perf/measurement_set.h"
#include "transient/perf/restart_time_model.h"

namespace transient::perf {
namespace {

using Storage = CheckpointTimeModel::Storage;

TEST(CheckpointTimeModel, ByHand) {
  const CheckpointTimeModel model(3.0, 0.02, 2.0, 2.0);
  EXPECT_DOUBLE_EQ(model.duration_s(100.0), 5.0);
  Workload w;
  w.gradient_bytes = 10e6;  // 10 MB of weights: 2 + 2 x 10 = 22 MB, 3.44 s
  EXPECT_DOUBLE_EQ(model.size_mb(w), 22.0);
  EXPECT_DOUBLE_EQ(model.duration_s(w), 3.44);
}

TEST(CheckpointTimeModel, FitRecoversALine) {
  std::vector<CheckpointMeasurement> rows;
  for (double params : {1e6, 3e6, 7e6, 20e6}) {
    CheckpointMeasurement m;
    m.parameters = params;
    m.size_mb = 1.5 + 2.0 * 4.0 * params / 1e6;
    m.duration_s = 3.0 + 0.02 * m.size_mb;
    m.local_duration_s = 0.5 + 0.004 * m.size_mb;
    rows.push_back(m);
  }
  const auto remote = CheckpointTimeModel::fit(rows, Storage::remote_bucket);
  EXPECT_NEAR(remote.fixed_s(), 3.0, 1e-9);
  EXPECT_NEAR(remote.seconds_per_mb(), 0.02, 1e-12);
  const auto local = CheckpointTimeModel::fit(rows, Storage::local_disk);
  EXPECT_NEAR(local.fixed_s(), 0.5, 1e-9);
  Workload w;
  w.gradient_bytes = 4e6;
  EXPECT_NEAR(local.size_mb(w), 1.5 + 8.0, 1e-9);
  EXPECT_THROW(CheckpointTimeModel::fit({rows[0]}, Storage::remote_bucket), InputError);
}

TEST(RestartTimeModel, FitRecoversALineInTensors) {
  std::vector<RestartMeasurement> rows;
  for (const char* name : {"resnet-15", "resnet-32", "shake-shake-big"}) {
    const double tensors = find_workload(name).tensors;
    rows.push_back({name, false, 70.0 + 0.1 * tensors});
    rows.push_back({name, true, 10.0 + 0.09 * tensors});
  }
  const auto cold = RestartTimeModel::fit(rows, false);
  EXPECT_NEAR(cold.fixed_s(), 70.0, 1e-9);
  EXPECT_NEAR(cold.per_tensor_s(), 0.1, 1e-12);
  EXPECT_NEAR(RestartTimeModel::fit(rows, true).restart_s(find_workload("resnet-32")),
              10.0 + 0.09 * 104, 1e-9);
  EXPECT_THROW(RestartTimeModel::fit({rows[0]}, false), InputError);
}

TEST(OverheadModels, BuiltinsAreTheFitOnCmdare) {
  const std::string dir = std::string(TRANSIENT_SHARED_DATA_DIR) + "/cmdare";
  ASSERT_TRUE(std::filesystem::exists(dir)) << dir;
  const MeasurementSet data = read_measurements(dir);
  for (const Storage storage : {Storage::remote_bucket, Storage::local_disk}) {
    const auto fit = CheckpointTimeModel::fit(data.checkpoints, storage);
    const auto builtin = CheckpointTimeModel::builtin(storage);
    EXPECT_NEAR(builtin.fixed_s(), fit.fixed_s(), 1e-8);
    EXPECT_NEAR(builtin.seconds_per_mb(), fit.seconds_per_mb(), 1e-10);
    EXPECT_NEAR(builtin.size_mb(find_workload("resnet-32")),
                fit.size_mb(find_workload("resnet-32")), 1e-6);
  }
  for (const bool warm : {false, true}) {
    const auto fit = RestartTimeModel::fit(data.restarts, warm);
    const auto builtin = RestartTimeModel::builtin(warm);
    EXPECT_NEAR(builtin.fixed_s(), fit.fixed_s(), 1e-7);
    EXPECT_NEAR(builtin.per_tensor_s(), fit.per_tensor_s(), 1e-9);
  }
  // CM-DARE: a ResNet-32 checkpoint of 16 MB took 3.8 s to a bucket; a cold restart 79 s.
  EXPECT_NEAR(CheckpointTimeModel::builtin(Storage::remote_bucket).duration_s(15.99), 3.8, 0.3);
  EXPECT_NEAR(RestartTimeModel::builtin(false).restart_s(find_workload("resnet-32")), 78.7, 3.0);
}

}  // namespace
}  // namespace transient::perf
