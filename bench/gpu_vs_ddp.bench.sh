#!/usr/bin/env bash
# transient on a CUDA GPU against PyTorch DDP over NCCL on the same GPU(s) (issue 14), with
# torchvision's ResNet-18 and ResNet-50 as TorchScript files on synthetic CIFAR-sized (32x32) and
# ImageNet-sized (224x224) uint8 images (bench/gpu_models.py), in fp32 and bf16: one worker per
# GPU (`transient train --device cuda --workers GPUS`) and DDP with one process per GPU
# (bench/ddp_gpu_peer.py under torchrun), the same global batch, SGD with momentum, steps and
# input pipeline. Goal: >= 1.0x. Then, on the GPU:
# - kill -> next step: three workers sharing the GPU(s), one killed (`--revoke
#   kill@step80:rank1`): the recovery event's seconds (goal under 1 s);
# - the checkpoint's stall of the training step: ResNet-50 224 bf16 with a checkpoint every 25
#   steps (about 1.5 s: the writer is done with one before the next), the checkpoint_snapshot
#   events' seconds, as a share of a minute of training at one
#   checkpoint a minute (goal under 2%).
#
#   bench/gpu_vs_ddp.bench.sh [BUILD_DIR]
# Environment: PYTHON (.venv/bin/python3), GPUS (1), WORK (a temporary folder), CASES (all: e.g.
# "resnet18:32:256 resnet50:224:128"), PRECISIONS ("fp32 bf16"; fp16 too), STEPS (40), WARMUP (10),
# THREADS (4), ONLY (all; or "throughput", "recovery", "checkpoint").
source "$(dirname "$0")/gpu_common.sh" "${1:-build}"
gpus=${GPUS:-1}
steps=${STEPS:-40}
warmup=${WARMUP:-10}
threads=${THREADS:-4}
cases=${CASES:-"resnet18:32:256 resnet50:32:256 resnet18:224:128 resnet50:224:128"}
precisions=${PRECISIONS:-"fp32 bf16"}
only=${ONLY:-all}
transient=$here/$build/transient
work=${WORK:-$(mktemp -d "${TMPDIR:-/tmp}/gpu_vs_ddp.XXXXXX")}
mkdir -p "$work"
sizes=$(for c in $cases; do echo "$c" | cut -d: -f2; done | sort -u | sed 's/^/--size /' | tr '\n' ' ')
"$python" bench/gpu_models.py --out "$work" $sizes --size 32 --samples 8192 || exit 1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader

# The mean samples/s of a transient job's steps after the warm-up: the global batch over the
# slowest member's phases (data + compute + all-reduce + optimizer) of each step.
ours_speed() {
  "$python" - "$1" "$warmup" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1] + "/steps.csv")))
warmup = int(sys.argv[2])
by_step = {}
for row in rows:
    by_step.setdefault(int(row["step"]), []).append(row)
step_s, batch = [], 0
for step, members in sorted(by_step.items()):
    if step <= warmup:
        continue
    step_s.append(max(sum(float(m[k]) for k in ("data_s", "compute_s", "allreduce_s",
                                                  "optimizer_s")) for m in members))
    batch = sum(int(m["batch"]) for m in members)
print(f"{batch / statistics.mean(step_s):.1f}")
PY
}

if [[ $only == all || $only == throughput ]]; then
  for c in $cases; do
    IFS=: read -r model size batch <<<"$c"
    for precision in $precisions; do
      name=$model-$size-$batch-$precision
      rm -rf "$work/ours-$name"
      "$transient" train --model "$work/$model.pt" --dataset npy --data-dir "$work/npy-$size" \
        --device cuda --workers "$gpus" --threads "$threads" --steps "$steps" \
        --global-batch "$batch" --optimizer sgd --lr 0.01 --precision "$precision" \
        --checkpoint-every 0 --test-subset 64 --memory-format contiguous \
        --job-dir "$work/ours-$name" >"$work/ours-$name.log" 2>&1 ||
        { echo "$name: transient failed"; tail -5 "$work/ours-$name.log"; continue; }
      "$python" -m torch.distributed.run --standalone --nnodes 1 --nproc_per_node "$gpus" \
        bench/ddp_gpu_peer.py --model-file "$work/$model.pt" --data "$work/npy-$size" \
        --steps "$steps" --warmup "$warmup" --global-batch "$batch" --precision "$precision" \
        --threads "$threads" --out "$work/peer-$name.json" >"$work/peer-$name.log" 2>&1 ||
        { echo "$name: DDP failed"; tail -5 "$work/peer-$name.log"; continue; }
      o=$(ours_speed "$work/ours-$name")
      p=$("$python" -c "import json; print(f\"{json.load(open('$work/peer-$name.json'))['samples_per_s']:.1f}\")")
      echo "$name batch $batch: transient $o samples/s, DDP $p samples/s, ratio $("$python" -c "print(f'{$o / $p:.3f}')")x"
    done
  done
fi

if [[ $only == all || $only == recovery ]]; then
  job=$work/recovery
  rm -rf "$job"
  "$transient" train --model "$work/resnet18.pt" --dataset npy --data-dir "$work/npy-32" \
    --device cuda --workers 3 --threads 2 --steps 200 --global-batch 192 --optimizer sgd \
    --lr 0.01 --checkpoint-every 0 --test-subset 64 --memory-format contiguous \
    --revoke kill@step80:rank1 --replace 0s --heartbeat-timeout 30s --job-dir "$job" \
    >"$job.log" 2>&1 || { echo "recovery: transient failed"; tail -5 "$job.log"; }
  "$python" - "$job" <<'PY'
import json, sys
events = [json.loads(l) for l in open(sys.argv[1] + "/events.jsonl")]
for e in events:
    if e.get("event") == "recovery":
        print(f"kill -> next step on the GPU (3 workers sharing it): {e['duration_s']:.3f} s, "
              f"{e.get('redone_steps')} step(s) redone, cause {e.get('cause')}")
PY
fi

if [[ $only == all || $only == checkpoint ]]; then
  job=$work/checkpoint
  rm -rf "$job"
  "$transient" train --model "$work/resnet50.pt" --dataset npy --data-dir "$work/npy-224" \
    --device cuda --workers "$gpus" --threads "$threads" --steps 80 --global-batch 128 \
    --optimizer sgd --lr 0.01 --precision bf16 --checkpoint-every 25 --test-subset 64 \
    --memory-format contiguous --job-dir "$job" >"$job.log" 2>&1 ||
    { echo "checkpoint: transient failed"; tail -5 "$job.log"; }
  step=$(ours_speed "$job")
  "$python" - "$job" "$step" <<'PY'
import json, statistics, sys
events = [json.loads(l) for l in open(sys.argv[1] + "/events.jsonl")]
stalls = [e["seconds"] for e in events if e.get("event") == "checkpoint_snapshot"]
print(f"checkpoint snapshots of ResNet-50 (SGD momentum) off the GPU: {len(stalls)}, "
      f"{1000 * statistics.mean(stalls):.1f} ms each (max {1000 * max(stalls):.1f}); at one a "
      f"minute {100 * statistics.mean(stalls) / 60:.3f}% of the training time "
      f"({sys.argv[2]} samples/s)")
PY
fi
echo "runs in $work"
