#!/usr/bin/env bash
# A TorchScript ResNet-18 (torchvision's, exported by examples/resnet18_image_folder.py) trained on
# an image folder by `transient train --model FILE.pt --data FOLDER` against the same file under
# PyTorch DDP (bench/ddp_image_peer.py: Gloo, torchrun, DataLoader with torchvision's
# transforms), side by side: 2 workers x THREADS threads, same global batch, optimiser, steps,
# image size and loader threads (DataLoader processes for the peer). Goal (issue 13): >= 1.0x.
# Also where transient's step goes (steps.csv): the data phase's share of a step (goal < 5%).
#
#   bench/resnet18_vs_ddp.bench.sh [BUILD_DIR]
# Environment: STEPS (60), BATCH (64), ROUNDS (2), THREADS (1), WARMUP (10), SIZE (32),
# KEEP=1 keeps the runs.
set -euo pipefail
build=${1:-build}
steps=${STEPS:-60}
batch=${BATCH:-64}
rounds=${ROUNDS:-2}
threads=${THREADS:-1}
warmup=${WARMUP:-10}
size=${SIZE:-32}
cd "$(dirname "$0")/.."
here=$PWD
python=$here/.venv/bin/python3
torchrun=$here/.venv/bin/torchrun
transient=$here/$build/transient
work=$(mktemp -d "${TMPDIR:-/tmp}/resnet18_vs_ddp.XXXXXX")
if [[ "${KEEP:-0}" == 1 ]]; then echo "keeping runs in $work"; else trap 'rm -rf "$work"' EXIT; fi

"$python" examples/resnet18_image_folder.py --out "$work/model" --train-per-class 1 \
  --val-per-class 1 >/dev/null
model=$work/model/resnet18.pt
data=${BENCH_WORK:-/tmp/transient-image-bench}/images-$size
[[ -d $data ]] || "$python" bench/make_image_folder.py --out "$data" --count 5000 --size "$size" >/dev/null

for round in $(seq 1 "$rounds"); do
  dir=$work/transient-r$round
  "$transient" train --model "$model" --data "$data" --image-size "$size" --workers 2 \
    --threads "$threads" --loader-threads 2 --steps "$steps" --global-batch "$batch" \
    --optimizer adamw --lr 0.001 --checkpoint-every 0 --test-subset 100 --job-dir "$dir" \
    >"$dir.log" 2>&1 || { tail -20 "$dir.log" >&2; exit 1; }
  "$torchrun" --standalone --nnodes 1 --nproc_per_node 2 bench/ddp_image_peer.py \
    --model-file "$model" --data "$data" --image-size "$size" --steps "$steps" \
    --warmup "$warmup" --global-batch "$batch" --optimizer adamw --lr 0.001 \
    --threads "$threads" --loader-workers 2 --out "$work/peer-r$round.json" \
    >"$work/peer-r$round.log" 2>&1 || { tail -20 "$work/peer-r$round.log" >&2; exit 1; }
done

"$python" - "$work" "$rounds" "$warmup" <<'PY'
import csv, json, statistics, sys
work, rounds, warmup = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ours, peers, shares = [], [], []
for r in range(1, rounds + 1):
    rows = list(csv.DictReader(open(f"{work}/transient-r{r}/steps.csv")))
    by_step = {}
    for row in rows:
        by_step.setdefault(int(row["step"]), []).append(row)
    # A step's time: its slowest member's phases (data + compute + all-reduce + optimizer).
    step_s, data_s = [], []
    for step, members in sorted(by_step.items()):
        if step <= warmup:
            continue
        total = [sum(float(m[k]) for k in ("data_s", "compute_s", "allreduce_s", "optimizer_s"))
                 for m in members]
        step_s.append(max(total))
        data_s.append(max(float(m["data_s"]) for m in members))
    batch = int(rows[0]["batch"]) * 0 + sum(int(m["batch"]) for m in by_step[warmup + 1])
    ours.append(batch / statistics.mean(step_s))
    shares.append(statistics.mean(data_s) / statistics.mean(step_s))
    peers.append(json.load(open(f"{work}/peer-r{r}.json"))["samples_per_s"])
o, p = statistics.median(ours), statistics.median(peers)
print(f"transient  samples/s {', '.join(f'{x:.1f}' for x in ours)} (median {o:.1f})")
print(f"DDP        samples/s {', '.join(f'{x:.1f}' for x in peers)} (median {p:.1f})")
print(f"ratio transient/DDP {o / p:.2f}x; transient's data phase "
      f"{', '.join(f'{100 * s:.1f}%' for s in shares)} of a step")
PY
