#!/usr/bin/env bash
# The speed of fitting the throughput models on CM-DARE's measurements (`transient fit`,
# `fit --cross-validate model|gpu`), mean of 3 (docs/benchmarks.md, "Fitting the throughput
# models").
# Usage: bench/fit.bench.sh BUILD_DIR (run by bench/run-all.sh).
set -euo pipefail
build=${1:-build}
bin="$build/bench/perf_bench"
if [ ! -x "$bin" ]; then
  echo "fit.bench.sh: $bin not built (configure with -DTRANSIENT_BUILD_BENCH=ON)" >&2
  exit 1
fi
"$bin" --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
