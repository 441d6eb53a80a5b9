#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "transient/core/csv_table.h"
#include "transient/core/error.h"
#include "transient/perf/registry.h"
#include "transient/perf/table_throughput_model.h"

namespace transient::perf {
namespace {

cloud::InstanceType gpu_type(const std::string& gpu) {
  cloud::InstanceType type;
  type.name = "server+" + gpu;
  type.gpu = gpu;
  type.gpus = 1;
  type.on_demand_usd_per_h = 1.0;
  return type;
}

ClusterShape cluster(std::vector<std::pair<std::string, int>> groups, Architecture arch) {
  ClusterShape shape;
  shape.architecture = arch;
  for (const auto& [gpu, count] : groups) shape.workers.push_back({gpu_type(gpu), count});
  return shape;
}

TableThroughputModel small_table() {
  return TableThroughputModel(
      {{"A", 1, 10.0}, {"A", 2, 18.0}, {"A", 4, 30.0}, {"B", 1, 5.0}, {"B", 4, 16.0}},
      "test table");
}

TEST(TableThroughputModel, InterpolatesBetweenMeasuredCounts) {
  const auto model = small_table();
  EXPECT_DOUBLE_EQ(model.steps_per_s("A", 1), 10.0);
  EXPECT_DOUBLE_EQ(model.steps_per_s("a", 2), 18.0);
  EXPECT_DOUBLE_EQ(model.steps_per_s("A", 3), 24.0);
  // Beyond the largest count: the per-worker rate of the largest measurement.
  EXPECT_DOUBLE_EQ(model.steps_per_s("A", 8), 60.0);
  EXPECT_DOUBLE_EQ(model.steps_per_s("B", 2), 5.0 + (16.0 - 5.0) / 3.0);
  EXPECT_DOUBLE_EQ(model.steps_per_s("A", 0), 0.0);
}

TEST(TableThroughputModel, HeterogeneousRules) {
  const auto model = small_table();
  // 2 x A + 2 x B, N = 4: per-worker rates A 30/4, B 16/4.
  const auto async = model.predict(cluster({{"A", 2}, {"B", 2}}, Architecture::async_ps));
  EXPECT_DOUBLE_EQ(async.steps_per_s, 2 * 7.5 + 2 * 4.0);
  const auto sync = model.predict(cluster({{"A", 2}, {"B", 2}}, Architecture::allreduce));
  EXPECT_DOUBLE_EQ(sync.steps_per_s, 4 * 4.0);
  EXPECT_EQ(sync.bottleneck, "slowest worker (B)");
  EXPECT_DOUBLE_EQ(model.predict(cluster({}, Architecture::async_ps)).steps_per_s, 0.0);
  EXPECT_DOUBLE_EQ(model.predict(cluster({{"A", 3}}, Architecture::allreduce)).steps_per_s, 24.0);
}

TEST(TableThroughputModel, UnknownGpuListsTheKnownOnes) {
  const auto model = TableThroughputModel::cmdare("resnet-32");
  try {
    model.predict(cluster({{"V100", 1}}, Architecture::async_ps));
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("no GPU \"V100\"; accepted: K80, P100"),
              std::string::npos)
        << error.what();
  }
}

TEST(TableThroughputModel, UnknownWorkloadListsTheKnownOnes) {
  try {
    TableThroughputModel::cmdare("vgg-16");
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("resnet-32"), std::string::npos) << error.what();
  }
}

// The built-in rows are the file's means, row for row.
TEST(TableThroughputModel, BuiltInTableMatchesCmdareFile) {
  const auto file = CsvTable::read_file(std::string(TRANSIENT_SHARED_DATA_DIR) +
                                        "/cmdare/figures/speed_vs_num_workers.csv");
  const int gpu = file.require_column({"gpu"});
  const int model = file.require_column({"model"});
  const int workers = file.require_column({"num_workers"});
  const int speed = file.require_column({"speed_steps_per_sec_mean"});
  ASSERT_EQ(file.rows().size(), 64u);
  for (const auto& row : file.rows()) {
    const auto table = TableThroughputModel::cmdare(file.text(row, model));
    EXPECT_DOUBLE_EQ(table.steps_per_s(file.text(row, gpu), file.number(row, workers)),
                     file.number(row, speed))
        << "line " << row.line;
  }
  // The paper's baseline: one K80 at 4.51 steps/s.
  EXPECT_DOUBLE_EQ(TableThroughputModel::cmdare("ResNet-32").steps_per_s("K80", 1), 4.51);
}

TEST(TableThroughputModel, CsvTableWithBadRowNamesTheLine) {
  const std::string path = ::testing::TempDir() + "/speeds.csv";
  std::ofstream(path) << "gpu,workers,steps_per_s\nK80,1,4.5\nK80,two,9\n";
  try {
    TableThroughputModel::from_csv(path);
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    EXPECT_EQ(error.line(), 3) << error.what();
  }
  std::ofstream(path) << "gpu,workers,steps_per_s\nK80,1,4.5\nK80,2,9\n";
  EXPECT_DOUBLE_EQ(TableThroughputModel::from_csv(path).steps_per_s("K80", 2), 9.0);
}

// Speeds are bounded where they enter, as a step time is (1 us to 30 days): 1e300 steps/s
// finished a 20,000-step job in no time, and 1e309 was "not a number".
TEST(TableThroughputModel, SpeedsAndWorkersOfATableAreBounded) {
  const std::string path = ::testing::TempDir() + "/bounded_speeds.csv";
  const auto error_of = [&](const std::string& row) -> std::string {
    std::ofstream(path) << "gpu,workers,steps_per_s\nK80,1,4.5\n" << row << "\n";
    try {
      TableThroughputModel::from_csv(path);
    } catch (const InputError& error) {
      return error.what();
    }
    return "accepted";
  };
  const std::string accepted =
      " is out of range; accepted: a number from 3.85802e-7 to 1e6 steps per second (a step of "
      "1 us to 30 days)";
  for (const std::string speed : {"1e300", "1e-300", "1e309", "1e-400", "0", "-2", "1000001"}) {
    EXPECT_EQ(error_of("K80,2," + speed), path + ":3: column \"steps_per_s\": " + speed + accepted);
  }
  EXPECT_EQ(error_of("K80,2,fast"), path + ":3: column \"steps_per_s\": \"fast\" is not a number");
  EXPECT_EQ(error_of("K80,2,1e6"), "accepted");
  EXPECT_EQ(error_of("K80,2,4e-7"), "accepted");
  EXPECT_EQ(error_of("K80,1e300,9"), path +
                                         ":3: column \"workers\": 1e300 is out of range; "
                                         "accepted: a whole number from 1 to 1e4 servers");
}

TEST(ThroughputRegistry, NamesAndErrors) {
  ASSERT_FALSE(throughput_models().empty());
  EXPECT_EQ(throughput_models()[0].name, "table");
  ThroughputParams params;
  params.values["workload"] = "resnet-15";
  EXPECT_DOUBLE_EQ(create_throughput_model("table", params)
                       ->predict(cluster({{"K80", 2}}, Architecture::async_ps))
                       .steps_per_s,
                   18.91);
  params.file = "s.toml";
  params.line = 7;
  try {
    create_throughput_model("magic", params);
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    EXPECT_EQ(std::string(error.what())
                  .rfind("s.toml:7: unknown throughput model \"magic\"; accepted: table", 0),
              0u)
        << error.what();
  }
  params.values["colour"] = "red";
  EXPECT_THROW(create_throughput_model("table", params), InputError);
}

}  // namespace
}  // namespace transient::perf
