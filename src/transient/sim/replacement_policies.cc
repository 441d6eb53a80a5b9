// The replacement policies of the registry.
#include "transient/core/error.h"
#include "transient/core/registry.h"
#include "transient/sim/replacement_policy.h"

namespace transient::sim {
namespace {

class SameReplacement : public ReplacementPolicy {
 public:
  std::string name() const override { return "same"; }
  std::string describe() const override {
    return "request the same type in the same market (a spot request waits until spot servers "
           "can be had)";
  }
  std::optional<ServerChoice> choose(const ReplacementContext& context) const override {
    return context.revoked;
  }
};

class CheapestReplacement : public ReplacementPolicy {
 public:
  std::string name() const override { return "cheapest"; }
  std::string describe() const override {
    return "request the cheapest server per hour that can be had now among the scenario's types "
           "(spot when available, else on-demand)";
  }
  bool uses_availability() const override { return true; }
  std::optional<ServerChoice> choose(const ReplacementContext& context) const override {
    std::optional<ServerChoice> best;
    double best_usd_per_h = 0.0;
    const auto& types = *context.types;
    for (int i = 0; i < static_cast<int>(types.size()); ++i) {
      for (const auto market : {cloud::Market::spot, cloud::Market::on_demand}) {
        if (!types[i].has_market(market)) continue;
        if (market == cloud::Market::spot && !context.spot_available) continue;
        const double price = types[i].price_usd_per_h(market);
        if (!best || price < best_usd_per_h) {
          best = ServerChoice{i, market};
          best_usd_per_h = price;
        }
      }
    }
    return best;
  }
};

class OnDemandReplacement : public ReplacementPolicy {
 public:
  std::string name() const override { return "on-demand"; }
  std::string describe() const override {
    return "request the same type on demand (never revoked again)";
  }
  std::optional<ServerChoice> choose(const ReplacementContext& context) const override {
    if (!(*context.types)[context.revoked.type].has_market(cloud::Market::on_demand)) {
      return std::nullopt;
    }
    return ServerChoice{context.revoked.type, cloud::Market::on_demand};
  }
};

class NoReplacement : public ReplacementPolicy {
 public:
  std::string name() const override { return "none"; }
  std::string describe() const override { return "request nothing: the cluster shrinks"; }
  std::optional<ServerChoice> choose(const ReplacementContext&) const override {
    return std::nullopt;
  }
};

}  // namespace

namespace {

const NoArgumentRegistry<ReplacementPolicy>& replacement_registry() {
  static const NoArgumentRegistry<ReplacementPolicy> all(
      "replacement policy", {no_argument_entry<ReplacementPolicy, SameReplacement>("same"),
                             no_argument_entry<ReplacementPolicy, CheapestReplacement>("cheapest"),
                             no_argument_entry<ReplacementPolicy, OnDemandReplacement>("on-demand"),
                             no_argument_entry<ReplacementPolicy, NoReplacement>("none")});
  return all;
}

}  // namespace

const std::vector<PluginInfo>& replacement_policies() { return replacement_registry().infos(); }

std::unique_ptr<ReplacementPolicy> create_replacement_policy(const std::string& name) {
  return replacement_registry().at(name).create();
}

}  // namespace transient::sim
