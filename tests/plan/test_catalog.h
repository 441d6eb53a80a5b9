// A hand-checkable planning problem shared by the planner's tests: two GPU types whose speeds add
// up, so every plan's time and cost can be worked out on paper (docs/plan.md shows the table).
//   k80:  1 step/s per server, spot $0.20/h, on-demand $0.70/h
//   v100: 4 steps/s per server, spot $1.00/h, on-demand $3.00/h
//   cpu:  the coordinator, on-demand $0.10/h
// 36,000 steps: a plan of speed t steps/s and price P $/h takes 10/t hours and costs 10 P/t.
#pragma once

#include <memory>
#include <string>

#include "transient/cloud/catalog.h"
#include "transient/perf/throughput_model.h"

namespace transient::plan::testing {

inline cloud::InstanceType make_type(const std::string& name, const std::string& gpu, double tflops,
                                     double on_demand, double spot) {
  cloud::InstanceType t;
  t.name = name;
  t.gpu = gpu;
  t.gpus = gpu.empty() ? 0 : 1;
  t.gpu_tflops = tflops;
  t.vcpus = 4;
  t.on_demand_usd_per_h = on_demand;
  t.spot_usd_per_h = spot;
  t.region = "r1";
  t.zone = "r1-a";
  return t;
}

inline cloud::Catalog hand_catalog() {
  return cloud::Catalog(
      "hand", "tests/plan/test_catalog.h",
      {make_type("k80", "K80", 4.0, 0.70, 0.20), make_type("v100", "V100", 14.0, 3.00, 1.00),
       make_type("cpu", "", 0.0, 0.10, 0.0)});
}

// Speeds add up: 1 step/s per K80, 4 per V100, whatever the architecture.
class AdditiveModel : public perf::ThroughputModel {
 public:
  std::string name() const override { return "additive"; }
  std::string describe() const override { return "additive: K80 1, V100 4 steps/s"; }
  perf::Prediction predict(const perf::ClusterShape& cluster) const override {
    perf::Prediction p;
    for (const auto& g : cluster.workers) p.steps_per_s += g.count * (g.type.gpu == "V100" ? 4 : 1);
    p.bottleneck = "compute";
    return p;
  }
};

inline constexpr double kSteps = 36000.0;

}  // namespace transient::plan::testing
