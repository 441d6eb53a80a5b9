#include "transient/plan/internal/candidate_search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>

namespace transient::plan::internal {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// The price that keeps an offer out of a programme (an offer of the other market).
constexpr double kUnavailableUsdPerH = 1e9;

// The same servers in a dearer zone of the region are never better in the deterministic model;
// another region may be (its price), so each region keeps its own offer.
std::vector<Offer> offers_of(const std::vector<FloppEntry>& flopp) {
  std::vector<Offer> offers;
  std::set<std::tuple<std::string, cloud::Market, std::string>> seen;
  for (const auto& f : flopp) {
    if (seen.insert({f.type.name, f.market, f.type.region}).second)
      offers.push_back({f.type, f.market, f.usd_per_h});
  }
  return offers;
}

// The programmes' view of the offers: the speed of n = 1..max_servers servers of each, its
// region, and its type as its kind (one type is bought in one region at most: two groups of one
// type in two regions would let the additive speed dodge that type's scaling).
std::vector<MipOption> mip_options_of(const std::vector<Offer>& offers,
                                      const perf::ThroughputModel& throughput,
                                      const PlanOptions& options, const SupportServers& support) {
  std::map<std::string, int> regions, kinds;
  std::vector<MipOption> out;
  for (const auto& offer : offers) {
    MipOption option;
    option.usd_per_h = offer.usd_per_h;
    option.region =
        regions.emplace(offer.type.region, static_cast<int>(regions.size())).first->second;
    option.kind = kinds.emplace(offer.type.name, static_cast<int>(kinds.size())).first->second;
    for (int n = 1; n <= options.max_servers; ++n) {
      const Configuration c = with_support_server({{offer.type, offer.market, n}}, support);
      option.steps_per_s.push_back(throughput.predict(c.shape(options.architecture)).steps_per_s);
    }
    out.push_back(std::move(option));
  }
  return out;
}

// The fixed price the programmes see: the cheapest support server (the plans are judged with
// their own region's, a few cents apart at most).
double fixed_usd_per_h(const SupportServers& support) {
  double cheapest = kInf;
  for (const auto& [region, type] : support) {
    cheapest = std::min(cheapest, type.on_demand_usd_per_h);
  }
  return cheapest;
}

// The mixed programme buys each type in one market: spot where it is sold in the region (the
// risk is the simulation's business), else on demand; the on-demand programme only on-demand
// offers. One type in two markets as two options would let the additive speed dodge that type's
// scaling.
std::vector<MipOption> restricted(const std::vector<MipOption>& all,
                                  const std::vector<Offer>& offers, bool on_demand_only) {
  std::set<std::pair<std::string, std::string>> spot_types;
  for (const auto& offer : offers) {
    if (offer.market == cloud::Market::spot)
      spot_types.insert({offer.type.name, offer.type.region});
  }
  std::vector<MipOption> out = all;
  for (std::size_t o = 0; o < offers.size(); ++o) {
    const bool spot = offers[o].market == cloud::Market::spot;
    const bool keep =
        on_demand_only
            ? !spot
            : spot || spot_types.count({offers[o].type.name, offers[o].type.region}) == 0;
    if (keep) continue;
    std::fill(out[o].steps_per_s.begin(), out[o].steps_per_s.end(), 0.0);
    out[o].usd_per_h = kUnavailableUsdPerH;
  }
  return out;
}

bool usable(const std::optional<MipChoice>& c) {
  return c && c->usd_per_h < kUnavailableUsdPerH && c->steps_per_s > 0.0;
}

// A shared parameter server saturates: a mix is no faster than the fastest homogeneous cluster.
double speed_cap(const std::vector<MipOption>& all, perf::Architecture architecture) {
  if (architecture != perf::Architecture::async_ps) return kInf;
  double best_homogeneous = 0.0;
  for (const auto& option : all) {
    for (const double speed : option.steps_per_s) {
      best_homogeneous = std::max(best_homogeneous, speed);
    }
  }
  return best_homogeneous;
}

// The three programmes of one request and the configurations their choices stand for.
class Search {
 public:
  Search(const std::vector<FloppEntry>& flopp, const perf::ThroughputModel& throughput,
         const PlanOptions& options, const Request& request, const SupportServers& support)
      : offers_(offers_of(flopp)),
        options_(options),
        request_(request),
        support_(support),
        all_options_(mip_options_of(offers_, throughput, options, support)),
        market_options_(restricted(all_options_, offers_, false)),
        cap_steps_per_s_(speed_cap(all_options_, options.architecture)),
        mixed_(market_options_, fixed_usd_per_h(support), cap_steps_per_s_, options.max_servers,
               !options.heterogeneous, options.max_regions),
        homogeneous_(market_options_, fixed_usd_per_h(support), cap_steps_per_s_,
                     options.max_servers, true),
        on_demand_(restricted(all_options_, offers_, true), fixed_usd_per_h(support),
                   cap_steps_per_s_, options.max_servers, true) {}

  Candidates run(const MipConstraints& constraints) {
    Candidates out;
    const auto fastest = mixed_.fastest({});
    const auto cheapest = mixed_.cheapest({});
    MipConstraints top = constraints;
    for (int k = 0; k < options_.top_k; ++k) {
      const auto choice = best(mixed_, top);
      if (!choice) break;
      append_new(out.pool, configuration_of(*choice));
      top.excluded.push_back(choice->counts);
    }
    if (const auto choice = best(homogeneous_, constraints)) {
      append_new(out.always, configuration_of(*choice));
    }
    if (const auto choice = best(on_demand_, constraints)) {
      append_new(out.always, configuration_of(*choice));
    }
    if (usable(fastest) && usable(cheapest)) {
      for (const auto& c : sweep(mixed_, *fastest, constraints)) append_new(out.pool, c);
      // With all-reduce the programme's additive speed of a mix overstates it (with a fixed
      // global batch every group alone already trains on the whole batch), so the front also
      // gets the homogeneous clusters, whose speeds in the programme are the model's own.
      if (options_.architecture == perf::Architecture::allreduce) {
        for (const auto& c : sweep(homogeneous_, *fastest, constraints)) append_new(out.pool, c);
      }
    }
    if (fastest) out.fastest = configuration_of(*fastest);
    if (cheapest) out.cheapest = configuration_of(*cheapest);
    out.mip_solves = mixed_.solves() + homogeneous_.solves() + on_demand_.solves();
    out.offers = offers_;
    return out;
  }

 private:
  Configuration configuration_of(const MipChoice& choice) const {
    std::vector<sim::ServerGroup> workers;
    for (std::size_t o = 0; o < offers_.size(); ++o) {
      if (choice.counts[o] > 0)
        workers.push_back({offers_[o].type, offers_[o].market, choice.counts[o]});
    }
    return with_support_server(std::move(workers), support_);
  }

  // The request's best choice of `mip`: the cheapest per step under a deadline, else the fastest.
  std::optional<MipChoice> best(ClusterMip& mip, const MipConstraints& c) {
    std::optional<MipChoice> choice;
    if (std::isfinite(c.min_steps_per_s)) {
      choice = request_.has_deadline() ? mip.cheapest(c) : mip.fastest(c);
    }
    return usable(choice) ? choice : std::nullopt;
  }

  // From the slowest single server (or the deadline's speed) to the fastest plan, at the lowest
  // price per hour of `mip` for each floor.
  std::vector<Configuration> sweep(ClusterMip& mip, const MipChoice& fastest,
                                   const MipConstraints& constraints) {
    std::vector<Configuration> out;
    const int points = options_.pareto_points;
    if (points <= 0) return out;
    double low = fastest.steps_per_s;
    for (const auto& option : market_options_) {
      if (option.steps_per_s[0] > 0.0) low = std::min(low, option.steps_per_s[0]);
    }
    low = std::max(low, std::min(constraints.min_steps_per_s, fastest.steps_per_s));
    const double high = fastest.steps_per_s;
    for (int j = 0; j < points; ++j) {
      const double share = points == 1 ? 1.0 : j / (points - 1.0);
      MipConstraints floor;
      floor.min_steps_per_s = low * std::pow(high / low, share) * (1.0 - 1e-9);
      const auto choice = j + 1 == points && &mip == &mixed_ ? std::optional<MipChoice>(fastest)
                                                             : mip.lowest_price(floor);
      if (usable(choice)) append_new(out, configuration_of(*choice));
    }
    return out;
  }

  std::vector<Offer> offers_;
  const PlanOptions& options_;
  const Request& request_;
  const SupportServers& support_;
  std::vector<MipOption> all_options_;     // every offer's speeds
  std::vector<MipOption> market_options_;  // each type in one market (restricted())
  double cap_steps_per_s_;
  ClusterMip mixed_;
  ClusterMip homogeneous_;
  ClusterMip on_demand_;
};

}  // namespace

Candidates enumerate_candidates(const std::vector<FloppEntry>& flopp,
                                const perf::ThroughputModel& throughput, const PlanOptions& options,
                                const Request& request, const SupportServers& support,
                                const MipConstraints& constraints) {
  return Search(flopp, throughput, options, request, support).run(constraints);
}

}  // namespace transient::plan::internal
