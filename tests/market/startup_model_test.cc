#include "transient/market/startup_model.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "market/test_data.h"
#include "transient/core/error.h"

namespace transient::market {
namespace {

TEST(StartupModel, CmdareSpotAndOnDemand) {
  const auto spot = StartupModel::load_cmdare(TRANSIENT_SHARED_DATA_DIR, cloud::Market::spot);
  const auto on_demand =
      StartupModel::load_cmdare(TRANSIENT_SHARED_DATA_DIR, cloud::Market::on_demand);
  EXPECT_EQ(spot.samples_s().size(), 45u);
  EXPECT_EQ(on_demand.samples_s().size(), 55u);
  EXPECT_NEAR(spot.mean_s(), 87.27, 0.01);
  EXPECT_NEAR(on_demand.mean_s(), 71.01, 0.01);
  EXPECT_NEAR(spot.median_s(), 87.21, 0.01);
  EXPECT_NEAR(on_demand.median_s(), 68.64, 0.01);
  // The built-in defaults are these means.
  EXPECT_NEAR(StartupModel::builtin_default(cloud::Market::spot).mean_s(), spot.mean_s(), 0.05);
  EXPECT_NEAR(StartupModel::builtin_default(cloud::Market::on_demand).mean_s(), on_demand.mean_s(),
              0.05);
}

TEST(StartupModel, SamplesAreMeasuredValues) {
  const auto model =
      StartupModel::load_cmdare(TRANSIENT_SHARED_DATA_DIR, cloud::Market::spot, "K80", "west");
  EXPECT_EQ(model.samples_s().size(), 10u);
  Rng rng(3);
  for (int i = 0; i < 100; ++i) {
    const double s = model.sample_s(rng);
    EXPECT_TRUE(std::binary_search(model.samples_s().begin(), model.samples_s().end(), s));
  }
}

TEST(StartupModel, UnknownGpuListsTheMeasuredOnes) {
  try {
    StartupModel::load_cmdare(TRANSIENT_SHARED_DATA_DIR, cloud::Market::spot, "V100");
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    EXPECT_EQ(std::string(error.what()),
              "start-up model: no measurements for gpu \"V100\"; accepted: K80, P100");
  }
}

TEST(StartupModel, MissingDataNamesTheFlag) {
  try {
    StartupModel::load_cmdare("/nonexistent", cloud::Market::on_demand);
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("--data-dir"), std::string::npos);
  }
}

TEST(StartupModel, DefaultWhenTheDataIsNotThere) {
  const auto fallback = StartupModel::load_or_default("/nonexistent", cloud::Market::spot);
  EXPECT_EQ(fallback.samples_s().size(), 1u);
  EXPECT_DOUBLE_EQ(fallback.mean_s(), 87.3);
  EXPECT_EQ(fallback.stddev_s(), 0.0);
  const auto measured =
      StartupModel::load_or_default(TRANSIENT_SHARED_DATA_DIR, cloud::Market::spot);
  EXPECT_EQ(measured.samples_s().size(), 45u);
  EXPECT_GT(measured.stddev_s(), 1.0);
  EXPECT_LT(measured.stddev_s(), 10.0);
}

// A selection whose files hold no rows was an internal check's failure.
TEST(StartupModel, ASelectionWithoutMeasurementsIsNamed) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) / "startup_no_rows";
  fs::remove_all(dir);
  fs::create_directories(dir / "cmdare");
  fs::copy(fs::path(TRANSIENT_SHARED_DATA_DIR) / "cmdare/startup_time", dir / "cmdare/startup_time",
           fs::copy_options::recursive);
  for (const auto& entry : fs::directory_iterator(dir / "cmdare/startup_time/pre_west")) {
    if (entry.path().filename().string().find("k80") != std::string::npos) {
      std::ofstream(entry.path(), std::ios::trunc) << "Provisioning,Staging,Booting\n";
    }
  }
  try {
    StartupModel::load_cmdare(dir.string(), cloud::Market::spot, "K80", "west");
    FAIL() << "a selection without measurements was taken";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("no start-up measured for K80 in west"),
              std::string::npos)
        << error.what();
  }
  fs::remove_all(dir);
}
}  // namespace
}  // namespace transient::market
