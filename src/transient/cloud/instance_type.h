// A kind of server one can rent: its hardware, its prices in each market, and where it is.
// Plain value type; copy freely.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace transient::cloud {

// How a server is bought. Spot (GCE "preemptible", EC2 "spot") servers are cheaper and can be
// revoked at any time after a short notice; on-demand ones are kept until released.
enum class Market { spot, on_demand };

std::string_view to_string(Market market);  // "spot", "on-demand"
// Accepts "spot", "preemptible", "on-demand", "ondemand", "on_demand"; nullopt otherwise.
std::optional<Market> parse_market(std::string_view text);

struct InstanceType {
  std::string name;                  // the cloud's name, e.g. "n1-standard-4+k80", "p3.2xlarge"
  std::string gpu;                   // GPU model, e.g. "K80", "V100"; empty for a CPU-only server
  int gpus = 0;                      // GPUs per server
  double gpu_tflops = 0.0;           // FP32 TFLOPS of one GPU (0 for CPU-only servers)
  int vcpus = 0;                     // virtual CPUs
  double memory_gib = 0.0;           // memory in GiB
  double network_gbps = 0.0;         // network bandwidth in Gbit/s
  double on_demand_usd_per_h = 0.0;  // on-demand price, $ per hour
  double spot_usd_per_h = 0.0;       // spot / preemptible price, $ per hour; 0 = no spot market
  std::string region;                // e.g. "us-east1", "us-west-2"
  std::string zone;                  // e.g. "us-east1-c", "us-west-2a"; may be empty

  // Price per hour in `market`. REQUIRES: has_market(market).
  double price_usd_per_h(Market market) const;
  bool has_market(Market market) const;
  // Sold on spot and on demand: what a market policy, which moves servers between the two, needs.
  bool sold_in_both_markets() const {
    return has_market(Market::spot) && has_market(Market::on_demand);
  }
  // GPU TFLOPS of the whole server.
  double total_tflops() const { return gpu_tflops * gpus; }
};

}  // namespace transient::cloud
