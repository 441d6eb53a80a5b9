#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "market/test_data.h"
#include "transient/core/error.h"
#include "transient/market/exponential_model.h"
#include "transient/market/hour_of_day_model.h"
#include "transient/market/model_summary.h"
#include "transient/market/registry.h"

namespace transient::market {
namespace {

TEST(ExponentialModel, MeanMatchesWithinSamplingError) {
  ModelParams params;
  params.values["mean"] = "10h";
  const auto model = create_revocation_model("exponential", params, testing::data_context());
  const ModelSummary summary = summarize(*model, 100000, 3);
  // The standard error of the mean of n exponential draws is mean / sqrt(n).
  EXPECT_NEAR(summary.mean_lifetime_s, 36000.0, 3.0 * 36000.0 / std::sqrt(100000.0));
  const double p1 = 1.0 - std::exp(-0.1);
  EXPECT_NEAR(summary.share_revoked_1h, p1, 3.0 * std::sqrt(p1 * (1 - p1) / 100000.0));
  EXPECT_EQ(summary.share_at_cap, 0.0);
}

TEST(ExponentialModel, BucketsAndRates) {
  EXPECT_NEAR(*ExponentialModel::mean_for_bucket_s("<5%"), 30 * 86400 / -std::log(0.975), 1e-6);
  EXPECT_FALSE(ExponentialModel::mean_for_bucket_s("50%"));
  ModelParams params;
  params.values["rate_per_h"] = "0.5";
  const auto model = create_revocation_model("exponential", params, testing::data_context());
  EXPECT_DOUBLE_EQ(dynamic_cast<const ExponentialModel&>(*model).mean_lifetime_s(), 7200.0);
  params.values["bucket"] = ">20%";
  EXPECT_THROW(create_revocation_model("exponential", params, testing::data_context()), InputError);
}

TEST(ExponentialModel, BadBucketListsTheAcceptedOnes) {
  ModelParams params;
  params.values["bucket"] = "7%";
  try {
    create_revocation_model("exponential", params, testing::data_context());
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    EXPECT_EQ(std::string(error.what()),
              "market model \"exponential\", parameter bucket: \"7%\"; accepted: <5%, 5-10%, "
              "10-15%, 15-20%, >20%");
  }
}

TEST(HourOfDayModel, ConstantWeightsGiveAnExponential) {
  std::array<double, 24> flat;
  flat.fill(1.0);
  HourOfDayModel model(flat, 7200.0, kNever, 5.0, "flat");
  const ModelSummary summary = summarize(model, 100000, 11);
  EXPECT_NEAR(summary.mean_lifetime_s, 7200.0, 3.0 * 7200.0 / std::sqrt(100000.0));
}

TEST(HourOfDayModel, NoRevocationInHoursWithoutHazard) {
  std::array<double, 24> weights{};
  weights[13] = 1.0;  // revocations only between 13:00 and 14:00
  HourOfDayModel model(weights, 3600.0, kNever, 2.0, "one hour");
  Rng rng(4);
  auto timeline = model.start_run(2.0, rng);
  for (int i = 0; i < 1000; ++i) {
    const double hour = std::fmod(2.0 + timeline->revocation_time_s(0.0, rng) / 3600.0, 24.0);
    ASSERT_GE(hour, 13.0);
    ASSERT_LE(hour, 14.0);
  }
}

TEST(HourOfDayModel, FittedFromCmdareHonoursTheCap) {
  ModelParams params;
  params.values["gpu"] = "K80";
  const auto model = create_revocation_model("hour-of-day", params, testing::data_context());
  EXPECT_EQ(model->cap_s(), 86400.0);
  const ModelSummary summary = summarize(*model, 20000, 1);
  EXPECT_GT(summary.share_at_cap, 0.4);
  EXPECT_GT(summary.share_revoked_2h, 0.0);
  EXPECT_LE(summary.median_lifetime_s, 86400.0);
}

TEST(HourOfDayModel, UnknownGpuListsTheColumns) {
  ModelParams params;
  params.values["gpu"] = "T4";
  try {
    create_revocation_model("hour-of-day", params, testing::data_context());
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("accepted: K80, P100, V100, any"), std::string::npos)
        << error.what();
  }
}

TEST(Registry, EveryModelBuildsAndIsDeterministic) {
  for (const auto& info : revocation_models()) {
    ModelParams params;
    if (info.name == "exponential") params.values["mean"] = "5h";
    if (info.name == "trace") params.values["file"] = "us-west-2a_v100_1";
    const auto model = create_revocation_model(info.name, params, testing::data_context());
    EXPECT_EQ(model->name(), info.name);
    EXPECT_FALSE(model->describe().empty());
    EXPECT_EQ(sample_lifetimes_s(*model, 200, 8), sample_lifetimes_s(*model, 200, 8)) << info.name;
  }
}

TEST(Registry, DescriptionsAreOneLine) {
  EXPECT_EQ(revocation_models().size(), 4u);
  for (const auto& info : revocation_models()) {
    EXPECT_EQ(info.description.find('\n'), std::string::npos);
    EXPECT_FALSE(info.params.empty());
  }
}

}  // namespace
}  // namespace transient::market
