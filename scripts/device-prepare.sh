#!/usr/bin/env bash
# Here, before a run on a GPU machine lent through the workplace's device tool (an image with
# CUDA and its own PyTorch, the same torch 2.11.0+cu130 as .venv's, and none of Debian's
# libraries): copies into .dev/ (ignored by git) what the built programs need there and the
# machine lacks: the Debian libraries that transient-torch and the test binary link outside
# glibc, libstdc++ and zlib, and, with --data, a 10000-sample cut of Fashion-MNIST and ../shared/data
# for the tests.
# Then `run` with carry [".dev", "build/transient-torch", "build/libtransient_cuda.so",
# "build/tests/train/transient_train_tests", "build/tests/train/transient_train_process_tests"]
# and a command that begins with
# `source scripts/device-setup.sh;` (docs/benchmarks.md, "GPUs"), or scripts/device-check.sh.
#
#   scripts/device-prepare.sh [--data]
set -euo pipefail
cd "$(dirname "$0")/.."
grep -qx '/.dev/' .git/info/exclude 2>/dev/null || { mkdir -p .git/info; echo /.dev/ >>.git/info/exclude; }
rm -rf .dev
mkdir -p .dev/lib
ldd build/transient-torch build/libtransient_cuda.so build/tests/train/transient_train_tests \
  build/tests/train/transient_train_process_tests |
  awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u |
  grep -v -E '/(libc|libm|libdl|libpthread|librt|libutil|libgcc_s|libstdc\+\+|libz)\.so|site-packages' |
  while read -r lib; do cp -L "$lib" .dev/lib/; done
if [[ ${1:-} == --data ]]; then
  # The shared measurements and traces (a few MB): some process tests read them.
  cp -r ../shared/data .dev/shared-data
  # The first 10000 training and 10000 test samples: the IDX headers say 10000.
  .venv/bin/python3 - <<'PY'
import gzip, os, struct
src, out = "/usr/share/datasets/fashion-mnist", ".dev/fashion-mnist"
os.makedirs(out, exist_ok=True)
for name in os.listdir(src):
    data = gzip.open(os.path.join(src, name)).read()
    magic, count = struct.unpack(">II", data[:8])
    keep = 10000
    header = 16 if magic == 2051 else 8
    item = 28 * 28 if magic == 2051 else 1
    cut = data[:4] + struct.pack(">I", keep) + data[8:header] + data[header:header + keep * item]
    with gzip.open(os.path.join(out, name), "wb", compresslevel=6) as f:
        f.write(cut)
PY
fi
du -sh .dev
