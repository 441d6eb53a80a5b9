# Sourced by the GPU benchmarks (gpu_vs_ddp.bench.sh, gpu_trace.bench.sh) with the build folder
# as $1: the repository's root as the working directory and $here, $build, $python (PYTHON, else
# .venv's), or an exit with the reason where no NVIDIA GPU works.
set -uo pipefail
build=${1:-build}
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "skipped: needs an NVIDIA GPU (no working nvidia-smi here)"
  exit 0
fi
here=$PWD
python=${PYTHON:-$here/.venv/bin/python3}
