#!/usr/bin/env bash
# Runs every benchmark against the build directory given as $1 (default: build). A script that
# fails, or cannot run here (multi_host.bench.sh needs root for its network namespaces), says why
# on stderr; the others still run, and the exit status is 1 with the failed ones named.
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
shopt -s nullglob
failed=()
for script in bench/*.bench.sh; do
  echo "== $script"
  if ! "$script" "$build"; then failed+=("$script"); fi
done
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "bench: ${#failed[@]} benchmark(s) failed: ${failed[*]}" >&2
  exit 1
fi
