// What to rent when a spot server is revoked: the plug-in point for replacement policies.
// Used when the scenario has no deadline-aware market policy (market_policy.h decides then).
// Policies are immutable and safe to share between threads.
#pragma once

#include "transient/core/registry.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "transient/cloud/instance_type.h"

namespace transient::sim {

// A server to request: an index into the simulator's instance types and a market.
struct ServerChoice {
  int type = 0;                                // index into ReplacementContext::types
  cloud::Market market = cloud::Market::spot;  // how to buy it
};

struct ReplacementContext {
  const std::vector<cloud::InstanceType>* types = nullptr;  // the types one may rent
  ServerChoice revoked;                                     // what was just revoked
  bool spot_available = true;  // can a spot server be had now (only if uses_availability())
};

class ReplacementPolicy {
 public:
  virtual ~ReplacementPolicy() = default;
  virtual std::string name() const = 0;
  virtual std::string describe() const = 0;
  // Whether choose() reads ReplacementContext::spot_available (asking the market costs time).
  virtual bool uses_availability() const { return false; }
  // The server to request in place of the revoked one, or nullopt to request nothing.
  virtual std::optional<ServerChoice> choose(const ReplacementContext& context) const = 0;
};

// Every registered one, in a stable order (core/registry.h).
const std::vector<PluginInfo>& replacement_policies();

// Throws InputError for an unknown name, listing the valid ones.
std::unique_ptr<ReplacementPolicy> create_replacement_policy(const std::string& name);

}  // namespace transient::sim
