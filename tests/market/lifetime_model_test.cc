#include "transient/market/lifetime_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "market/test_data.h"
#include "transient/core/csv_table.h"
#include "transient/core/error.h"
#include "transient/market/registry.h"

namespace transient::market {
namespace {

constexpr double kCapS = 24.0 * 3600.0;

// The measured lifetimes (seconds, capped at 24 h) of one GPU type, read independently of the
// model code.
std::vector<double> source_lifetimes_s(const std::string& gpu) {
  const CsvTable table = CsvTable::read_file(testing::data_path("gce-2019/lifetimes_2019.csv"));
  const int gpu_column = table.require_column({"gpu"});
  const int hours_column = table.require_column({"lifetime_hours"});
  std::vector<double> lifetimes;
  for (const CsvRow& row : table.rows()) {
    if (!gpu.empty() && table.text(row, gpu_column) != gpu) continue;
    lifetimes.push_back(std::min(table.number(row, hours_column) * 3600.0, kCapS));
  }
  return lifetimes;
}

double share(const std::vector<double>& xs, bool (*pred)(double)) {
  return static_cast<double>(std::count_if(xs.begin(), xs.end(), pred)) / xs.size();
}

// Tolerance for comparing a share p estimated from `draws` model samples with the same share in
// a source of `n_source` lifetimes: three binomial standard errors of the draws, plus 1/n_source,
// the most that spreading each measured lifetime over the gap below it can move a share.
double tolerance(double p, int draws, int n_source) {
  return 3.0 * std::sqrt(std::max(p * (1.0 - p), 0.25 / draws) / draws) + 1.0 / n_source;
}

class GceLifetimeFit : public ::testing::TestWithParam<std::string> {};

TEST_P(GceLifetimeFit, ReproducesSourceStatistics) {
  const std::string gpu = GetParam();
  const auto source = source_lifetimes_s(gpu);
  ModelParams params;
  if (!gpu.empty()) params.values["gpu"] = gpu;
  const auto model = create_revocation_model("lifetime", params, testing::data_context());
  EXPECT_EQ(model->name(), "lifetime");
  EXPECT_EQ(model->cap_s(), kCapS);

  constexpr int kDraws = 20000;
  Rng rng(42);
  std::vector<double> draws(kDraws);
  for (double& d : draws) d = model->sample_lifetime_s(rng);
  const int n = static_cast<int>(source.size());

  auto within_2h = [](double x) { return x <= 2.0 * 3600.0; };
  auto at_cap = [](double x) { return x >= kCapS; };
  const double source_2h = share(source, +within_2h);
  const double source_cap = share(source, +at_cap);
  EXPECT_NEAR(share(draws, +within_2h), source_2h, tolerance(source_2h, kDraws, n)) << gpu;
  EXPECT_NEAR(share(draws, +at_cap), source_cap, tolerance(source_cap, kDraws, n)) << gpu;
  for (double d : draws) ASSERT_LE(d, kCapS);

  // The sampled median must be a median of the source within the same tolerance: the source's
  // share strictly below it at most 1/2 + tol, and at or below it at least 1/2 - tol.
  std::nth_element(draws.begin(), draws.begin() + kDraws / 2, draws.end());
  const double median = draws[kDraws / 2];
  const double below = static_cast<double>(std::count_if(source.begin(), source.end(),
                                                         [&](double x) { return x < median; })) /
                       n;
  const double at_or_below =
      static_cast<double>(
          std::count_if(source.begin(), source.end(), [&](double x) { return x <= median; })) /
      n;
  const double tol = tolerance(0.5, kDraws, n);
  EXPECT_LE(below, 0.5 + tol) << gpu << " median " << median;
  EXPECT_GE(at_or_below, 0.5 - tol) << gpu << " median " << median;
}

INSTANTIATE_TEST_SUITE_P(PerGpu, GceLifetimeFit, ::testing::Values("K80", "P100", "V100", ""));

TEST(LifetimeModel, ShareAtCapIsExactlyTheMeasuredShare) {
  const auto model = LifetimeModel::fit_gce_2019(testing::data_path("gce-2019/lifetimes_2019.csv"),
                                                 "K80", "", kCapS);
  EXPECT_EQ(model->sample_count(), 64);
  EXPECT_DOUBLE_EQ(model->distribution().share_at_cap(), 44.0 / 64.0);
}

TEST(LifetimeModel, ZoneSelectsRows) {
  const auto model = LifetimeModel::fit_gce_2019(testing::data_path("gce-2019/lifetimes_2019.csv"),
                                                 "k80", "us-east1-c", kCapS);
  EXPECT_EQ(model->sample_count(), 16);
}

TEST(LifetimeModel, UnknownGpuListsTheMeasuredOnes) {
  ModelParams params;
  params.values["gpu"] = "A100";
  try {
    create_revocation_model("lifetime", params, testing::data_context());
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("accepted: K80, P100, V100"), std::string::npos)
        << error.what();
  }
}

TEST(LifetimeModel, ZoneWithoutThatGpuListsItsZones) {
  ModelParams params;
  params.values["gpu"] = "V100";
  params.values["zone"] = "us-east1-c";
  try {
    create_revocation_model("lifetime", params, testing::data_context());
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what())
                  .find("accepted zones: asia-east1-c, europe-west4-a, us-central1-a"),
              std::string::npos)
        << error.what();
  }
}

TEST(LifetimeModel, ScispotCdfHasTheBathtubShape) {
  ModelParams params;
  params.values["cdf"] = "All_data";
  const auto model = create_revocation_model("lifetime", params, testing::data_context());
  const auto& lifetime = dynamic_cast<const LifetimeModel&>(*model);
  // The published CDF: many die in the first hour, about half live to the cap.
  EXPECT_GT(lifetime.distribution().cdf(3600.0), 0.1);
  EXPECT_GT(lifetime.distribution().share_at_cap(), 0.0);
  Rng rng(7);
  for (int i = 0; i < 1000; ++i) ASSERT_LE(model->sample_lifetime_s(rng), kCapS);
}

// Issue 18: a lifetime of 1e300 hours became an infinite point of the CDF; hours are bounded by
// the 30 days every duration is, the bound in the error.
TEST(LifetimeModel, CdfHoursAreBounded) {
  EXPECT_EQ(testing::error_of_file(
                "far_lifetimes.txt", "0.5 0\n1 0.5\n1e300 1\n",
                [](const std::string& path) { LifetimeModel::from_cdf_file(path, 24 * 3600.0); }),
            ::testing::TempDir() +
                "/far_lifetimes.txt:3: accepted: lifetime_hours a number from 0 to 720 h and "
                "cumulative_fraction in [0, 1]");
}

TEST(LifetimeModel, SameSeedSameLifetimes) {
  const auto model = create_revocation_model("lifetime", {}, testing::data_context());
  Rng a(123);
  Rng b(123);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(model->sample_lifetime_s(a), model->sample_lifetime_s(b));
  auto timeline = model->start_run(0.0, a);
  EXPECT_TRUE(timeline->available_at(5.0));
  EXPECT_EQ(timeline->next_available_s(5.0), 5.0);
  EXPECT_GE(timeline->revocation_time_s(100.0, a), 100.0);
}

TEST(Registry, UnknownModelListsTheValidOnes) {
  ModelParams params;
  params.file = "scenario.toml";
  params.line = 12;
  try {
    create_revocation_model("lifetimes", params, testing::data_context());
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    const std::string what = error.what();
    EXPECT_EQ(what.rfind("scenario.toml:12: unknown market model \"lifetimes\"; accepted: ", 0), 0u)
        << what;
    for (const auto& info : revocation_models()) {
      EXPECT_NE(what.find(info.name), std::string::npos) << what;
    }
  }
}

TEST(Registry, UnknownParameterIsAnError) {
  ModelParams params;
  params.values["gpus"] = "K80";
  EXPECT_THROW(create_revocation_model("lifetime", params, testing::data_context()), InputError);
}

TEST(Registry, MissingDataFileNamesPathAndFlag) {
  try {
    create_revocation_model("lifetime", {}, ModelContext{"/nonexistent", ""});
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    const std::string what = error.what();
    EXPECT_NE(what.find("/nonexistent/gce-2019/lifetimes_2019.csv"), std::string::npos) << what;
    EXPECT_NE(what.find("--data-dir"), std::string::npos) << what;
  }
}

TEST(Registry, ParamsFromToml) {
  const auto table = toml::parse("model = \"lifetime\"\ngpu = \"K80\"\ncap = 86400\n");
  const ModelParams params = params_from_toml(table, "s.toml");
  EXPECT_EQ(params.values.size(), 2u);
  EXPECT_EQ(params.values.at("gpu"), "K80");
  EXPECT_EQ(params.values.at("cap"), "86400");
  EXPECT_NO_THROW(create_revocation_model("lifetime", params, testing::data_context()));
}

// A CDF whose every lifetime is under a second (`0 0` and `0 1`) revoked every server as it
// started: `simulate` requested servers without end.
TEST(LifetimeModel, ACdfOfNoLifetimeIsRefused) {
  EXPECT_EQ(testing::error_of_file(
                "no_life.txt", "0 0\n0 1\n",
                [](const std::string& path) { LifetimeModel::from_cdf_file(path, kNever); }),
            ::testing::TempDir() +
                "/no_life.txt:2: every lifetime is under a second; accepted: a CDF whose last "
                "point is at 1 s (0.000278 h) or more");
}

// A UTF-8 byte order mark before the first point is not part of it (it was refused, quoting the
// invisible character).
TEST(LifetimeModel, AByteOrderMarkIsNotPartOfTheFirstPoint) {
  EXPECT_EQ(testing::error_of_file(
                "bom_lifetimes.txt",
                "\xEF\xBB\xBF"
                "0.5 0\n1 0.5\n24 1\n",
                [](const std::string& path) { LifetimeModel::from_cdf_file(path, kNever); }),
            "accepted");
}
}  // namespace
}  // namespace transient::market
