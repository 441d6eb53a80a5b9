#include "transient/perf/throughput_model.h"

#include <algorithm>

namespace transient::perf {

std::string_view to_string(Architecture architecture) {
  return architecture == Architecture::async_ps ? "async-ps" : "allreduce";
}

bool parse_architecture(std::string_view text, Architecture& out) {
  if (text == "async-ps" || text == "ps") {
    out = Architecture::async_ps;
    return true;
  }
  if (text == "allreduce" || text == "sync") {
    out = Architecture::allreduce;
    return true;
  }
  return false;
}

int ClusterShape::total_workers() const {
  int total = 0;
  for (const auto& group : workers) total += group.count * std::max(1, group.type.gpus);
  return total;
}

int ClusterShape::total_servers() const {
  int total = 0;
  for (const auto& group : workers) total += group.count;
  return total;
}

}  // namespace transient::perf
