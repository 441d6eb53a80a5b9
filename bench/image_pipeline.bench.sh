#!/usr/bin/env bash
# Image-folder pipeline: images/s decoded and augmented on one core by transient's loader
# (bench/image_pipeline_bench.cc) against PyTorch's DataLoader with torchvision's transforms
# (bench/image_pipeline_peer.py, one loader process), on the same 5000 JPEG files, in the same
# run. Goal (issue 13): >= 1.5x. Two sizes: 32x32 with pad-and-crop, 160x160 resized-crop to 128.
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
python=.venv/bin/python3
work=${BENCH_WORK:-/tmp/transient-image-bench}
mkdir -p "$work"
for case in "32 32 crop" "160 128 resized-crop"; do
  read -r side size augment <<<"$case"
  folder="$work/images-$side"
  [[ -d $folder ]] || "$python" bench/make_image_folder.py --out "$folder" --count 5000 --size "$side" >/dev/null
  ours=$("$build/bench/image_pipeline_bench" --data "$folder" --image-size "$size" --augment "$augment" --threads 1 --epochs 3)
  peer=$("$python" bench/image_pipeline_peer.py --data "$folder" --image-size "$size" --augment "$augment" --workers 1 --epochs 3)
  echo "${side}px -> ${size} $augment: transient $ours"
  echo "${side}px -> ${size} $augment: DataLoader $peer"
  "$python" - "$ours" "$peer" <<'PY'
import json, sys
ours, peer = json.loads(sys.argv[1]), json.loads(sys.argv[2])
print(f"  per core: transient {ours['images_per_cpu_s']:.0f} images/s, DataLoader "
      f"{peer['images_per_cpu_s']:.0f} images/s: {ours['images_per_cpu_s'] / peer['images_per_cpu_s']:.2f}x")
PY
done
