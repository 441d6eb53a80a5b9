#!/usr/bin/env bash
# The planner's speed: a generated catalog of 50 instance types in 10 zones (500 offers per
# market), planned with the risk check (200 Monte Carlo runs per plan), timed end to end.
# Usage: bench/plan.bench.sh BUILD_DIR (run by bench/run-all.sh).
set -euo pipefail
build=${1:-build}
bin="$build/transient"
if [ ! -x "$bin" ]; then
  echo "plan.bench.sh: $bin not built" >&2
  exit 1
fi
catalog=$(mktemp --suffix=.csv)
trap 'rm -f "$catalog"' EXIT
# 45 GPU types (5 GPU models x 1/2/4/8 GPUs, and sizes) and 5 CPU-only types, in 10 zones whose
# prices differ by up to 18%.
awk 'BEGIN {
  print "type,gpu,gpus,gpu_tflops,vcpus,memory_gib,network_gbps,on_demand_usd_h,spot_usd_h,region,zone";
  split("K80 P100 V100 T4 A10G", gpu, " "); split("4.113 9.3 14.0 8.1 31.2", tflops, " ");
  split("0.45 1.46 2.48 0.35 1.01", od, " ");
  split("1 2 4 8 1 2 4 8 1", gpus, " ");
  for (z = 0; z < 10; z++) {
    zone = sprintf("zone-%d", z); f = 1 + 0.02 * z;
    for (g = 1; g <= 5; g++) for (s = 1; s <= 9; s++) {
      n = gpus[s]; size = (s <= 4 ? "std" : "hi");
      price = od[g] * n * f * (size == "hi" ? 1.15 : 1.0) + 0.05 * s;
      printf "%s-%s-%d,%s,%d,%s,%d,%d,%d,%.4f,%.4f,region-%d,%s\n", tolower(gpu[g]), size, s, gpu[g],
             n, tflops[g], 4 * n, 15 * n, 10, price, price * (0.3 + 0.01 * s), int(z / 2), zone;
    }
    for (c = 1; c <= 5; c++) {
      printf "cpu-%d,,0,0,%d,%d,10,%.4f,%.4f,region-%d,%s\n", c, 4 * c, 15 * c, 0.1 * c * f,
             0.03 * c * f, int(z / 2), zone;
    }
  }
}' > "$catalog"
echo "-- catalog: $(($(wc -l < "$catalog") - 1)) rows (50 types x 10 zones)"
# Wall time, and CPU time (user + system, all threads): on a shared machine the wall time is the
# CPU time stretched by the other processes' share of the cores.
for arch in allreduce ps; do
  for runs in 200 1000; do
    /usr/bin/time -f "transient plan --arch $arch --deadline 2h --runs $runs: %e s wall, %U s user + %S s system" \
      "$bin" plan --workload resnet-32 --steps 64000 --deadline 2h --arch "$arch" \
      --catalog "$catalog" --runs "$runs" --json > /dev/null
  done
done
echo "-- machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1-3 /proc/loadavg)"
