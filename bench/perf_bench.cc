// Speed of fitting the throughput models (perf/throughput_fitting.h) on CM-DARE's measurements
// (../shared/data/cmdare): what `transient fit`, `fit --cross-validate model` and
// `fit --cross-validate gpu` compute, without the program's start-up and printing.
//
//   perf_bench [Google Benchmark flags]
#include <benchmark/benchmark.h>

#include <string>

#include "transient/perf/measurement_set.h"
#include "transient/perf/throughput_fitting.h"

namespace {

const transient::perf::MeasurementSet& cmdare() {
  static const transient::perf::MeasurementSet data =
      transient::perf::read_measurements(std::string(TRANSIENT_SHARED_DATA_DIR) + "/cmdare");
  return data;
}

// `transient fit` and `fit --cross-validate model`: every candidate and both models by
// leave-one-model-out (`fit` then fits the chosen form on all the data, a small part).
void cross_validate_models(benchmark::State& state) {
  const transient::perf::ThroughputFitOptions options;
  for (auto _ : state) {
    benchmark::DoNotOptimize(transient::perf::cross_validate(cmdare(), options).chosen);
  }
}
BENCHMARK(cross_validate_models)->Unit(benchmark::kMillisecond);

// `transient fit --cross-validate gpu`: each GPU left out in turn.
void cross_validate_gpus(benchmark::State& state) {
  const transient::perf::ThroughputFitOptions options;
  for (auto _ : state) {
    benchmark::DoNotOptimize(transient::perf::cross_validate_gpus(cmdare(), options).chosen);
  }
}
BENCHMARK(cross_validate_gpus)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
