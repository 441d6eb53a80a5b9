#!/usr/bin/env bash
# Where a GPU training step's time goes, transient against PyTorch DDP on the same case (issue
# 14): each precision's job runs STEPS steps and traces the two after them
# (TRANSIENT_TRACE_STEPS; the DDP peer's --trace), and bench/trace_summary.py compares the
# traces: operators, kernels, launches and synchronisations per step. It also prints
# transient's per-step milliseconds (steps.csv), so that a slow stretch (after an evaluation,
# say) shows.
#
#   bench/gpu_trace.bench.sh [BUILD_DIR]
# Environment: PYTHON (.venv/bin/python3), CASE (resnet18:32:256), PRECISIONS ("fp32 bf16"),
# STEPS (40), SAMPLES (8192: with 8192 samples an epoch ends, and the test set is evaluated,
# at step 29 of a global batch of 256), OUT (a temporary folder: the gzipped traces and logs).
source "$(dirname "$0")/gpu_common.sh" "${1:-build}"
steps=${STEPS:-40}
samples=${SAMPLES:-8192}
precisions=${PRECISIONS:-"fp32 bf16"}
IFS=: read -r model size batch <<<"${CASE:-resnet18:32:256}"
out=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/gpu_trace.XXXXXX")}
work=$(mktemp -d "${TMPDIR:-/tmp}/gpu_trace_work.XXXXXX")
mkdir -p "$out"
"$python" bench/gpu_models.py --out "$work" --size "$size" --samples "$samples" || exit 1
for precision in $precisions; do
  name=$model-$size-$batch-$precision
  TRANSIENT_TRACE_STEPS=$((steps + 1))-$((steps + 2)) TRANSIENT_TRACE_DIR=$work \
    "$here/$build/transient" train --model "$work/$model.pt" --dataset npy \
    --data-dir "$work/npy-$size" --device cuda --workers 1 --threads 4 --steps $((steps + 2)) \
    --global-batch "$batch" --optimizer sgd --lr 0.01 --precision "$precision" \
    --checkpoint-every 0 --test-subset 64 --memory-format contiguous \
    --job-dir "$work/ours-$name" >"$out/ours-$name.log" 2>&1 ||
    { echo "$name: transient failed"; tail -5 "$out/ours-$name.log"; continue; }
  mv "$work/trace-w0.json" "$work/ours-$name.json"
  "$python" -m torch.distributed.run --standalone --nnodes 1 --nproc_per_node 1 \
    bench/ddp_gpu_peer.py --model-file "$work/$model.pt" --data "$work/npy-$size" \
    --steps "$steps" --warmup 10 --global-batch "$batch" --precision "$precision" --threads 4 \
    --trace "$work/peer-$name.json" >"$out/peer-$name.log" 2>&1 ||
    { echo "$name: DDP failed"; tail -5 "$out/peer-$name.log"; continue; }
  # transient's worker runs a model file once on the CPU (eval, no gradients) before training
  # (models.cc): the DDP peer doing the same says whether that first call slows TorchScript's
  # executor for what follows.
  "$python" -m torch.distributed.run --standalone --nnodes 1 --nproc_per_node 1 \
    bench/ddp_gpu_peer.py --model-file "$work/$model.pt" --data "$work/npy-$size" \
    --steps "$steps" --warmup 10 --global-batch "$batch" --precision "$precision" --threads 4 \
    --probe-first >"$out/peer-probed-$name.log" 2>&1 ||
    { echo "$name: DDP (probed first) failed"; tail -5 "$out/peer-probed-$name.log"; }
  echo "DDP with transient's CPU probe first: $(grep -h "samples/s" "$out/peer-probed-$name.log" | tail -1)"
  echo "== $name: transient's step ms (steps.csv: data + compute + allreduce + optimizer), DDP"
  "$python" - "$work/ours-$name/steps.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
ms = [1e3 * sum(float(r[k]) for k in ("data_s", "compute_s", "allreduce_s", "optimizer_s"))
      for r in rows]
print(" ".join(f"{m:.1f}" for m in ms))
print("compute ms: " + " ".join(f"{1e3 * float(r['compute_s']):.1f}" for r in rows))
PY
  grep -h "samples/s" "$out/peer-$name.log" | tail -1
  "$python" bench/trace_summary.py "$work/ours-$name.json" "$work/peer-$name.json" --top 12
  gzip -c "$work/ours-$name.json" >"$out/ours-$name.json.gz"
  gzip -c "$work/peer-$name.json" >"$out/peer-$name.json.gz"
done
rm -rf "$work"
