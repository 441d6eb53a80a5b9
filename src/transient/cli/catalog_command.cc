// `transient catalog list` and `transient catalog show NAME|FILE.csv [--json]`.
#include <fmt/format.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "transient/cli/commands.h"
#include "transient/cloud/catalog_registry.h"
#include "transient/core/text.h"

namespace transient::cli {
namespace {

// TFLOPS per $/h of the whole server (DeepVM's FLOPP). REQUIRES: type.has_market(market).
double flopp(const cloud::InstanceType& type, cloud::Market market) {
  return type.total_tflops() / type.price_usd_per_h(market);
}

// The price and FLOPP of `market` as the table shows them: "-" where the type has no such market.
std::string price_text(const cloud::InstanceType& type, cloud::Market market) {
  return type.has_market(market) ? fmt::format("{:.4g}", type.price_usd_per_h(market)) : "-";
}
std::string flopp_text(const cloud::InstanceType& type, cloud::Market market) {
  return type.has_market(market) ? fmt::format("{:.3g}", flopp(type, market)) : "-";
}

// ... and in JSON: null where the type has no such market.
nlohmann::json price_json(const cloud::InstanceType& type, cloud::Market market) {
  return type.has_market(market) ? nlohmann::json(type.price_usd_per_h(market)) : nullptr;
}
nlohmann::json flopp_json(const cloud::InstanceType& type, cloud::Market market) {
  return type.has_market(market) ? nlohmann::json(flopp(type, market)) : nullptr;
}

void print_list() {
  for (const auto& info : cloud::builtin_catalogs()) {
    fmt::print("{:<12} {}\n", info.name, info.description);
  }
}

void print_catalog(const cloud::Catalog& catalog, bool json) {
  if (json) {
    nlohmann::json types = nlohmann::json::array();
    for (const auto& type : catalog.types()) {
      types.push_back({{"type", type.name},
                       {"gpu", type.gpu},
                       {"gpus", type.gpus},
                       {"gpu_tflops", type.gpu_tflops},
                       {"vcpus", type.vcpus},
                       {"memory_gib", type.memory_gib},
                       {"network_gbps", type.network_gbps},
                       {"on_demand_usd_per_h", price_json(type, cloud::Market::on_demand)},
                       {"spot_usd_per_h", price_json(type, cloud::Market::spot)},
                       {"flopp_on_demand", flopp_json(type, cloud::Market::on_demand)},
                       {"flopp_spot", flopp_json(type, cloud::Market::spot)},
                       {"region", type.region},
                       {"zone", type.zone}});
    }
    const nlohmann::json out = {
        {"catalog", catalog.name()}, {"source", catalog.source()}, {"types", types}};
    fmt::print("{}\n", out.dump(2));
    return;
  }
  // A type sold in several zones has a row per zone: aws-gpu's 6 types are 77 rows.
  std::set<std::string> names;
  for (const auto& type : catalog.types()) names.insert(type.name);
  const std::size_t rows = catalog.types().size();
  fmt::print("catalog {}: {}{}\nsource: {}\n\n", catalog.name(),
             counted(static_cast<long long>(names.size()), "type"),
             rows == names.size() ? std::string()
                                  : " in " + counted(static_cast<long long>(rows), "row") +
                                        " (a row per type and zone)",
             catalog.source());
  fmt::print("{:<20} {:<14} {:>7} {:>9} {:>9} {:>9} {:>9}  {}\n", "type", "GPU", "TFLOPS", "od $/h",
             "spot $/h", "FLOPP od", "FLOPP sp", "region/zone");
  for (const auto& type : catalog.types()) {
    const std::string gpu = type.gpus > 0 ? fmt::format("{} x {}", type.gpu, type.gpus) : "-";
    const std::string where = type.zone.empty() ? type.region : type.region + "/" + type.zone;
    fmt::print("{:<20} {:<14} {:>7.4g} {:>9} {:>9} {:>9} {:>9}  {}\n", type.name, gpu,
               type.total_tflops(), price_text(type, cloud::Market::on_demand),
               price_text(type, cloud::Market::spot), flopp_text(type, cloud::Market::on_demand),
               flopp_text(type, cloud::Market::spot), where);
  }
  fmt::print(
      "\nTFLOPS: FP32 of the whole server; FLOPP: TFLOPS per $/h (DeepVM's metric); -: the type "
      "has no such market there\n");
}

}  // namespace

void add_catalog_command(CLI::App& app) {
  auto* catalog = app.add_subcommand(
      "catalog", "Instance catalogs: built-in ones (gce-2019, aws-deepvm, aws-gpu) or CSV files");
  catalog->require_subcommand(1);
  auto* list = catalog->add_subcommand("list", "The built-in catalogs, one line each");
  list->callback(print_list);

  auto name = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  auto* show = catalog->add_subcommand(
      "show", "An instance catalog as a table: type, GPUs, TFLOPS, prices, FLOPP, region/zone");
  show->add_option("catalog", *name, "a built-in catalog name or a CSV file")->required();
  show->add_flag("--json", *json, "print JSON");
  show->callback([name, json] { print_catalog(cloud::load_catalog(*name), *json); });
}

}  // namespace transient::cli
