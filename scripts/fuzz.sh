#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz/ with clang (address and undefined-behaviour
# sanitizers, no torch) in build-fuzz/ and runs each for SECONDS (default 10) on a copy of its
# seed corpus. A finding stops that target's run with the input libFuzzer saved
# (build-fuzz/findings/NAME/crash-*); the script goes on with the others and exits 1 if any target
# had a finding. Put the input in tests/fuzz/corpus/NAME/ once the parser is fixed, so that CTest
# replays it on every run (docs/errors.md, "Fuzzing").
#
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]   (e.g. scripts/fuzz.sh 60 workload_profile_fuzz)
# Environment: CXX (default clang++-14), JOBS (default 2), BUILD_DIR (default build-fuzz), RUNS
# (each target runs that many inputs instead of SECONDS: CTest's short run, which only keeps
# every target building and running), OPT (default -O1; CTest's short run builds at -O0),
# BUILD_ONLY=1 (build the targets and stop: `make build` builds CTest's tree so, and the short run
# then finds it up to date).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-10}
shift || true
build_dir=${BUILD_DIR:-build-fuzz}
jobs=${JOBS:-2}
cxx=${CXX:-clang++-14}
opt=${OPT:--O1}

# -O1 with line tables only, as libFuzzer suggests: symbolized reports, a little quicker to build
# than -O2 -g (13.0 s against 14.5 s of CPU for structured_input.cc, where toml++ is compiled).
# CTest's short run, 500 inputs a target, builds at -O0: 135 s of CPU against 221 s for the tree,
# and its inputs take about 5 s more in all.
# A unity build, each library one translation unit: the headers every file includes (nlohmann's
# JSON, the standard library) are compiled once per library, not once per file: 221 s of CPU for
# the whole tree against 344 s (docs/benchmarks.md, "The fuzzers' clang tree"). Its price, a
# library recompiled whole for a change to one file, is paid only here; the main tree, which
# compiles every one of these files on its own, keeps each file's includes honest.
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$opt -gline-tables-only -DNDEBUG" \
  -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=0 \
  -DCMAKE_CXX_COMPILER="$cxx" -DTRANSIENT_WITH_TORCH=OFF -DTRANSIENT_BUILD_TESTS=OFF \
  -DTRANSIENT_BUILD_BENCH=OFF -DTRANSIENT_BUILD_FUZZERS=ON >/dev/null
cmake --build "$build_dir" --target fuzzers -j "$jobs"
if [[ "${BUILD_ONLY:-}" == 1 ]]; then
  exit 0
fi

if [[ $# -gt 0 ]]; then
  targets=("$@")
else
  targets=()
  for source in tests/fuzz/*_fuzz.cc; do
    name=$(basename "$source" .cc)
    targets+=("$name")
  done
fi

# A search (SECONDS) goes on from what the searches before it found, in corpus/. The short run
# (RUNS) starts from the checked-in seeds each time, in a scratch folder of its own: what it runs
# does not grow with every search made in the same tree (in a tree whose searches had found 27,000
# inputs, the short run took 31 s; from the seeds, 18 s).
limit=(-max_total_time="$seconds")
budget="${seconds}s"
corpus_dir=corpus
if [[ -n "${RUNS:-}" ]]; then
  # Without the newly covered functions printed: each print starts llvm-symbolizer, about a
  # tenth of the short run's CPU (0.9 s of 9).
  limit=(-runs="$RUNS" -print_funcs=0)
  budget="$RUNS runs"
  corpus_dir=short-run-corpus
fi

failed=()
for name in "${targets[@]}"; do
  # libFuzzer adds what it finds to the first corpus folder: a scratch copy, so that the checked-in
  # seeds stay small and chosen.
  work="$build_dir/$corpus_dir/$name"
  findings="$build_dir/findings/$name"
  if [[ -n "${RUNS:-}" ]]; then rm -rf "$work"; fi
  mkdir -p "$work" "$findings"
  cp -n tests/fuzz/corpus/"$name"/* "$work"/ 2>/dev/null || true
  echo "== $name: $budget"
  if ! (cd "$build_dir" && "./tests/fuzz/$name" \
          "${limit[@]}" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
          -print_final_stats=1 -artifact_prefix="findings/$name/" \
          "$corpus_dir/$name" 2>&1 | tail -n 25); then
    failed+=("$name")
  elif compgen -G "$findings/*" >/dev/null; then
    failed+=("$name")
  fi
done

if [[ ${#failed[@]} -gt 0 ]]; then
  echo "fuzz: findings in ${failed[*]} (inputs under $build_dir/findings/)"
  exit 1
fi
echo "fuzz: ${#targets[@]} targets, $budget each, no finding"
