#!/usr/bin/env bash
# On a GPU machine lent through the workplace's device tool, in one `run` (docs/benchmarks.md,
# "GPUs"): after scripts/device-prepare.sh --data here, carry [".dev",
# "build/transient-torch", "build/libtransient_cuda.so", "build/tests/train/transient_train_tests",
# "build/tests/train/transient_train_process_tests"] and run `bash scripts/device-check.sh` with a timeout_s of about 540. In order, each part's
# output in $OUT/device.tar, written again after each part (and the summary on stdout):
#   1. the GPU tests (`Gpu.*`);
#   2. where a step's time goes (bench/gpu_trace.bench.sh: ResNet-18 on 32x32, fp32 bf16 fp16,
#      transient's and DDP's traces, DDP with transient's CPU check of the model first);
#   3. transient against DDP (bench/gpu_vs_ddp.bench.sh, PRECISIONS="fp32 bf16 fp16");
#   4. the elastic process tests with every `train` and `coordinator` on the GPU
#      (TRANSIENT_TEST_DEVICE=cuda), in 4 shards side by side.
# PARTS ("1 2 3 4") picks some.
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/device-setup.sh || exit 1
out=${OUT:-/tmp/device-out}
logs=$(mktemp -d /tmp/device-logs.XXXXXX)
parts=${PARTS:-"1 2 3 4"}
tests=build/tests/train/transient_train_tests
# The elastic process tests that read no checkpoint's tensors: a program without libtorch.
process_tests=build/tests/train/transient_train_process_tests
started=$(date +%s)
mark() { echo "== $1 ($(($(date +%s) - started)) s in)"; }
for part in $parts; do
  case $part in
  1)
    mark "Gpu.* tests"
    "$tests" --gtest_filter='Gpu.*' >"$logs/gpu-tests.log" 2>&1
    grep -E "^\[ +(OK|FAILED|SKIPPED) +\]|PASSED|FAILED TEST|accuracy|recovery" "$logs/gpu-tests.log"
    ;;
  2)
    mark "trace: transient and DDP, ResNet-18 32x32"
    PYTHON=python3 PRECISIONS="fp32 bf16 fp16" OUT="$logs/trace" bench/gpu_trace.bench.sh build 2>&1 |
      tee "$logs/trace.log"
    ;;
  3)
    mark "transient against DDP"
    PYTHON=python3 PRECISIONS="fp32 bf16 fp16" bench/gpu_vs_ddp.bench.sh build 2>&1 |
      tee "$logs/vs-ddp.log"
    ;;
  4)
    mark "Elastic.* with TRANSIENT_TEST_DEVICE=cuda, 4 shards"
    for shard in 0 1 2 3; do
      (for program in "$tests" "$process_tests"; do
        TRANSIENT_TEST_DEVICE=cuda GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$shard \
          "$program" --gtest_filter='Elastic.*'
      done) >"$logs/elastic-$shard.log" 2>&1 &
    done
    wait
    grep -h -E "^\[ +(OK|FAILED) +\]|FAILED TEST" "$logs"/elastic-*.log
    ;;
  esac
  # After each part: a run stopped at its limit still brings back what was done.
  mkdir -p "$out" && tar cf "$out/device.tar" -C "$logs" .
done
mark "done"
