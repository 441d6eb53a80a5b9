#!/usr/bin/env bash
# The simulator's speed (events and Monte Carlo runs per second, 24 h job on 32 spot servers with
# trace-driven revocations) and the deadline policies' costs on the real spot traces.
# Usage: bench/sim.bench.sh BUILD_DIR (run by bench/run-all.sh).
set -euo pipefail
build=${1:-build}
bin="$build/bench/sim_bench"
if [ ! -x "$bin" ]; then
  echo "sim.bench.sh: $bin not built (configure with -DTRANSIENT_BUILD_BENCH=ON)" >&2
  exit 1
fi
echo "-- simulator speed"
"$bin" --benchmark_min_time=2
echo "-- deadline policies: cost / optimal cost (runs missing the deadline), one server,"
echo "   24 h of work, 36 h deadline, offsets every 12 h"
"$bin" --policy-costs
echo "-- the same, free to move between the two zones of each server (multi-region)"
"$bin" --multi-region
