#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include <toml++/toml.h>
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

TEST(Availability, LifetimeModelWithAnAvailabilityTrace) {
  ModelParams params;
  params.values["gpu"] = "K80";
  params.values["availability"] = "us-west-2a_k80_1";
  params.values["availability_offset"] = "20m";
  const auto model = create_revocation_model("lifetime", params, testing::data_context());
  EXPECT_EQ(model->name(), "lifetime");
  EXPECT_NE(model->describe().find("availability: replay of spot availability trace"),
            std::string::npos);
  EXPECT_EQ(model->cap_s(), 86400.0);
  Rng rng(2);
  auto timeline = model->start_run(0.0, rng);
  // us-west-2a_k80_1 from tick 2: available for 4 ticks, then 2 unavailable ones.
  EXPECT_TRUE(timeline->available_at(0.0));
  EXPECT_FALSE(timeline->available_at(4 * 600.0 + 1.0));
  EXPECT_DOUBLE_EQ(timeline->next_available_s(4 * 600.0 + 1.0), 6 * 600.0);
  EXPECT_DOUBLE_EQ(timeline->revocation_time_s(4 * 600.0 + 1.0, rng), 4 * 600.0 + 1.0);
  const double revoked = timeline->revocation_time_s(0.0, rng);
  EXPECT_GT(revoked, 0.0);
  EXPECT_LE(revoked, 86400.0);
}

TEST(Availability, TraceModelsTakeNoAvailabilityParameter) {
  ModelParams params;
  params.values["file"] = "p3";
  params.values["availability"] = "us-west-2a_k80_1";
  EXPECT_THROW(create_revocation_model("trace", params, testing::data_context()), InputError);
  ModelParams offset_only;
  offset_only.values["mean"] = "1h";
  offset_only.values["availability_offset"] = "1h";
  EXPECT_THROW(create_revocation_model("exponential", offset_only, testing::data_context()),
               InputError);
  ModelParams node_trace;
  node_trace.values["mean"] = "1h";
  node_trace.values["availability"] = "p3";
  try {
    create_revocation_model("exponential", node_trace, testing::data_context());
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("is not an availability trace"), std::string::npos)
        << error.what();
  }
}

TEST(Registry, ParamsFromTomlRejectsTables) {
  const auto table = toml::parse("model = \"trace\"\nfile = \"p3\"\n[nested]\nx = 1\n");
  try {
    params_from_toml(table, "s.toml");
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    EXPECT_EQ(std::string(error.what()),
              "s.toml:3: market parameter nested: accepted: a string, a number or a boolean, "
              "not a table or an array");
  }
}

// Servers that live no time would have a simulated run request them without end (a mean of
// 1e-300 s, a rate of 1e12 an hour, a cap of a millisecond: `simulate` ran until killed, its
// memory growing): such a market is refused where its parameter is read.
TEST(Registry, AMarketWhoseServersLiveNoTimeIsRefused) {
  auto refusal = [](const std::string& model, const std::string& key, const std::string& value) {
    ModelParams params;
    if (key != "mean" && key != "rate_per_h") params.values["mean"] = "1h";
    params.values[key] = value;
    try {
      create_revocation_model(model, params, testing::data_context());
      return std::string("accepted");
    } catch (const InputError& error) {
      return std::string(error.what());
    }
  };
  EXPECT_NE(refusal("exponential", "mean", "1e-300s").find("accepted: a duration of 1s or more"),
            std::string::npos);
  EXPECT_NE(refusal("exponential", "rate_per_h", "1e12").find("rate_per_h"), std::string::npos);
  EXPECT_EQ(refusal("exponential", "rate_per_h", "3600"), "accepted");
  EXPECT_NE(refusal("exponential", "cap", "1ms").find("accepted: a duration of 1m or more"),
            std::string::npos);
  EXPECT_NE(refusal("hour-of-day", "mean", "0.5s").find("accepted: a duration of 1s or more"),
            std::string::npos);
}

// The hour-of-day model's start_hour is the hour its runs start at; it was read and ignored,
// every run starting at the scenario's hour.
TEST(HourOfDayModel, ItsStartHourIsWhereItsRunsStart) {
  std::array<double, 24> weights;
  weights.fill(0.0);
  weights[13] = 1.0;  // revocations only in the hour from 13:00
  HourOfDayModel at_13(weights, 3600.0, kNever, 13.0, "13");
  HourOfDayModel unset(weights, 3600.0, kNever, -1.0, "unset");
  Rng rng(1);
  // A run said to start at midnight: from 13:00 the model's, at 0:00 the other's.
  const double from_13 = at_13.start_run(0.0, rng)->revocation_time_s(0.0, rng);
  const double from_0 = unset.start_run(0.0, rng)->revocation_time_s(0.0, rng);
  EXPECT_LT(from_13, 3600.0);
  EXPECT_GE(from_0, 13 * 3600.0);
}
}  // namespace
}  // namespace transient::market
