#!/usr/bin/env bash
# Runs every benchmark against the build directory given as $1 (default: build).
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
shopt -s nullglob
for script in bench/*.bench.sh; do
  echo "== $script"
  "$script" "$build"
done
