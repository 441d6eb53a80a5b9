// The plan as a scenario file (plan/scenario_writer.h): what it writes, the scenario loader reads
// back as the plan's servers, prices and rules.
#include "transient/plan/scenario_writer.h"

#include <gtest/gtest.h>

#include <string>

#include "transient/cloud/catalog_registry.h"
#include "transient/core/error.h"
#include "transient/plan/configuration.h"
#include "transient/plan/support_server.h"
#include "transient/sim/scenario_loader.h"

namespace transient::plan {
namespace {

// A plan of one spot p3dn.24xlarge on aws-gpu, which sells no CPU server: its coordinator is
// AWS's default (c5.xlarge, cloud::default_cpu_server).
ScenarioFile aws_gpu_plan() {
  const cloud::Catalog catalog = cloud::load_catalog("aws-gpu");
  const cloud::InstanceType& gpu = catalog.find("p3dn.24xlarge", "use1-az6");
  ScenarioFile file;
  file.name = "plan-test";
  file.comment = "a test";
  file.total_steps = 64000;
  file.deadline_s = sim::kNoDeadline;
  file.configuration =
      with_support_server({{gpu, cloud::Market::spot, 1}}, support_server(catalog, gpu.region, {}));
  file.policy.recovery = "in-place";
  file.policy.replacement = "same";
  file.models.catalog = "aws-gpu";
  file.models.catalog_types = catalog.types();
  file.models.throughput = "analytic";
  file.models.throughput_params["workload"] = "resnet-32";
  return file;
}

sim::Scenario load(const std::string& text) {
  sim::ScenarioLoadOptions options;
  options.data_dir = TRANSIENT_SHARED_DATA_DIR;
  return sim::parse_scenario(text, "plan.toml", ".", options);
}

// The support server the catalog lacks is written as an [[instance_types]] table (it was written
// as a catalog type, which `simulate` refused: "catalog aws-gpu has no type c5.xlarge").
TEST(ScenarioWriter, ASupportServerTheCatalogLacksIsDefinedInTheFile) {
  const ScenarioFile file = aws_gpu_plan();
  const cloud::InstanceType& support = file.configuration.parameter_servers.at(0).type;
  ASSERT_EQ(support.name, "c5.xlarge");
  ASSERT_FALSE(cloud::load_catalog("aws-gpu").contains("c5.xlarge"));
  const std::string text = scenario_toml(file);
  EXPECT_NE(text.find("[[instance_types]]\nname = \"c5.xlarge\"\n"), std::string::npos) << text;
  const sim::Scenario s = load(text);
  ASSERT_EQ(s.parameter_servers.size(), 1u);
  const cloud::InstanceType& read = s.parameter_servers[0].type;
  EXPECT_EQ(read.name, "c5.xlarge");
  EXPECT_EQ(read.region, support.region);
  EXPECT_EQ(read.on_demand_usd_per_h, support.on_demand_usd_per_h);
  EXPECT_EQ(read.memory_gib, support.memory_gib);
  EXPECT_EQ(read.network_gbps, support.network_gbps);
  EXPECT_EQ(s.parameter_servers[0].market, cloud::Market::on_demand);
  // The worker is the catalog's row in its zone.
  ASSERT_EQ(s.workers.size(), 1u);
  EXPECT_EQ(s.workers[0].type.name, "p3dn.24xlarge");
  EXPECT_EQ(s.workers[0].type.zone, "use1-az6");
  EXPECT_EQ(s.workers[0].type.spot_usd_per_h, file.configuration.workers[0].type.spot_usd_per_h);
}

// A type the catalog has is named, not defined again.
TEST(ScenarioWriter, ACatalogsOwnTypesAreNamed) {
  ScenarioFile file = aws_gpu_plan();
  file.configuration.parameter_servers.clear();
  const std::string text = scenario_toml(file);
  EXPECT_EQ(text.find("[[instance_types]]"), std::string::npos) << text;
  EXPECT_NE(text.find("type = \"p3dn.24xlarge\"\ncount = 1\nmarket = \"spot\"\nzone = "
                      "\"use1-az6\"\n"),
            std::string::npos)
      << text;
}

// "Stop renting at $B" (a plan with a budget and no deadline) is the scenario's budget stop.
TEST(ScenarioWriter, TheBudgetStopIsWrittenAsTheJobsBudget) {
  ScenarioFile file = aws_gpu_plan();
  EXPECT_EQ(load(scenario_toml(file)).budget_usd, sim::kNoBudget);
  file.policy.stop_at_usd = 12.35;
  const sim::Scenario s = load(scenario_toml(file));
  EXPECT_EQ(s.budget_usd, 12.35);
}

}  // namespace
}  // namespace transient::plan
