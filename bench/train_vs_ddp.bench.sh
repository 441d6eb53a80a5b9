#!/usr/bin/env bash
# `transient train` against PyTorch DistributedDataParallel (Gloo backend, launched by torchrun),
# side by side in one run: same model, data, global batch, optimiser, steps and threads.
#
#   bench/train_vs_ddp.bench.sh [BUILD_DIR] [--peer-only]
#
# Each round runs four trainings: transient and DDP with 2 workers x 1 thread, and with 1 worker
# x 1 thread (for scaling efficiency: 2-worker samples/s over twice the 1-worker samples/s). The
# order alternates between rounds and the figures are medians over rounds, because the machine is
# shared and noisy. Prints a table, the ratio transient/DDP (target >= 1.1) and the scaling
# efficiency of each (target >= 90%), and where transient's step time goes (steps.csv).
#
# Samples/s: transient's is summary.json `samples_per_s` (from its first to its last completed
# step, as the coordinator sees them); DDP's is bench/ddp_peer.py's, over the steps after its
# warm-up (WARMUP). A second, like-for-like "steady" figure is the global batch over the mean
# step time after the warm-up: for transient, the slowest worker's data + compute + all-reduce +
# optimizer time from steps.csv; for DDP, the same wall-clock figure as above.
#
# --peer-only runs only the DDP half (to check the peer without a built trainer).
# Environment: STEPS (150), BATCH (128), ROUNDS (3), WARMUP (10), LR (0.05), MOMENTUM (0.9),
# SEED (1), PYTHON (.venv/bin/python3: the torch we build against, so both sides run the same
# kernels), TORCHRUN (.venv/bin/torchrun),
# KEEP=1 keeps the job directories and logs.
set -euo pipefail

build=${1:-build}
peer_only=0
[[ "${2:-}" == "--peer-only" ]] && peer_only=1
steps=${STEPS:-150}
batch=${BATCH:-128}
rounds=${ROUNDS:-3}
warmup=${WARMUP:-10}
lr=${LR:-0.05}
momentum=${MOMENTUM:-0.9}
seed=${SEED:-1}
model=cnn

cd "$(dirname "$0")/.."
here=$PWD
python=${PYTHON:-$here/.venv/bin/python3}
torchrun=${TORCHRUN:-$here/.venv/bin/torchrun}
transient="$build/transient"
[[ "$transient" == /* ]] || transient="$here/$transient"

if [[ $peer_only == 0 && ! -x "$transient" ]]; then
  echo "error: $transient not found or not executable: build transient first (make build," \
    "or pass the build directory as the first argument)" >&2
  exit 1
fi
if [[ ! -x "$torchrun" ]] || ! "$python" -c 'import torch.distributed' 2>/dev/null; then
  echo "error: PyTorch peer unavailable: needs $torchrun and $python with torch" \
    "(make deps installs torch into .venv/)" >&2
  exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/train_vs_ddp.XXXXXX")
if [[ "${KEEP:-0}" == 1 ]]; then
  echo "keeping runs in $work"
else
  trap 'rm -rf "$work"' EXIT
fi

run_transient() {  # workers round
  local dir="$work/transient-w$1-r$2"
  local start=$SECONDS
  uptime >"$dir.load" 2>/dev/null || true
  if ! "$transient" train --workers "$1" --model "$model" --steps "$steps" \
    --global-batch "$batch" --lr "$lr" --momentum "$momentum" --seed "$seed" --threads 1 \
    --job-dir "$dir" >"$dir.log" 2>&1; then
    echo "error: \`transient train --workers $1\` failed; its output:" >&2
    tail -n 20 "$dir.log" >&2
    exit 1
  fi
  if [[ ! -s "$dir/summary.json" || ! -s "$dir/steps.csv" ]]; then
    echo "error: \`transient train\` wrote no summary.json or steps.csv in $dir" >&2
    exit 1
  fi
  printf '  transient  %d worker(s): %3ds\n' "$1" $((SECONDS - start))
}

run_ddp() {  # workers round
  local out="$work/ddp-w$1-r$2.json"
  local start=$SECONDS
  uptime >"$out.load" 2>/dev/null || true
  if ! "$torchrun" --standalone --nnodes 1 --nproc_per_node "$1" --redirects 1:2 --tee 0:1 \
    bench/ddp_peer.py --model "$model" --steps "$steps" --warmup "$warmup" \
    --global-batch "$batch" --lr "$lr" --momentum "$momentum" --seed "$seed" --threads 1 \
    --out "$out" >"$out.log" 2>&1 || [[ ! -s "$out" ]]; then
    echo "error: DDP peer with $1 worker(s) failed; its output:" >&2
    tail -n 20 "$out.log" >&2
    exit 1
  fi
  printf '  DDP        %d worker(s): %3ds\n' "$1" $((SECONDS - start))
}

echo "transient train vs PyTorch DDP (Gloo, torchrun): model $model, global batch $batch," \
  "$steps steps, 1 thread per worker, $rounds rounds, $(nproc) cores"
for ((r = 1; r <= rounds; r++)); do
  echo "round $r/$rounds"
  if ((r % 2 == 1)); then
    [[ $peer_only == 1 ]] || run_transient 2 "$r"
    run_ddp 2 "$r"
    [[ $peer_only == 1 ]] || run_transient 1 "$r"
    run_ddp 1 "$r"
  else
    run_ddp 1 "$r"
    [[ $peer_only == 1 ]] || run_transient 1 "$r"
    run_ddp 2 "$r"
    [[ $peer_only == 1 ]] || run_transient 2 "$r"
  fi
done

"$python" - "$work" "$rounds" "$warmup" "$batch" "$peer_only" <<'EOF'
import csv, json, os, statistics, sys

work, rounds, warmup, batch, peer_only = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), \
    int(sys.argv[4]), sys.argv[5] == "1"
PHASES = ("data_s", "compute_s", "allreduce_s", "optimizer_s")
med = statistics.median


def load(path):
    with open(path) as f:
        return f.read().split("load average:")[-1].split(",")[0].strip()


def transient(workers, r):
    d = os.path.join(work, f"transient-w{workers}-r{r}")
    with open(os.path.join(d, "summary.json")) as f:
        summary = json.load(f)
    per_step = {}  # step -> list of per-worker phase sums
    sums = dict.fromkeys(PHASES, 0.0)
    rows = 0
    with open(os.path.join(d, "steps.csv")) as f:
        for row in csv.DictReader(f):
            step = int(row["step"])  # 1-based: the row of the step that took the model to `step`
            if step <= warmup:
                continue
            t = [float(row[p]) for p in PHASES]
            per_step.setdefault(step, []).append(sum(t))
            for p, v in zip(PHASES, t):
                sums[p] += v
            rows += 1
    # A synchronous step ends when its slowest worker ends: step time = max over workers.
    step_s = statistics.fmean(max(v) for v in per_step.values())
    out = {"samples_per_s": float(summary["samples_per_s"]), "steady": batch / step_s,
           "step_s": step_s, "load": load(d + ".load"), "wall_s": summary.get("wall_s")}
    out.update({p: sums[p] / rows for p in PHASES})
    return out


def ddp(workers, r):
    p = os.path.join(work, f"ddp-w{workers}-r{r}.json")
    with open(p) as f:
        j = json.load(f)
    out = {"samples_per_s": j["samples_per_s"], "steady": j["samples_per_s"],
           "step_s": j["step_s"], "load": load(p + ".load"), "wall_s": j["wall_s"],
           "data_s": j["data_s"], "compute_s": j["compute_s"], "allreduce_s": None,
           "optimizer_s": j["optimizer_s"]}
    return out


sides = [("DDP", ddp)] + ([] if peer_only else [("transient", transient)])
runs = {(name, w): [f(w, r) for r in range(1, rounds + 1)] for name, f in sides for w in (1, 2)}

print()
print("per round, samples/s (1-min load average at the start of the run):")
for (name, w), rs in runs.items():
    cells = "  ".join(f"{x['samples_per_s']:8.1f} ({x['load']})" for x in rs)
    print(f"  {name:9s} {w} worker(s): {cells}")

m = {k: {f: med(x[f] for x in rs) for f in ("samples_per_s", "steady", "step_s")}
     for k, rs in runs.items()}
print()
print(f"medians over {rounds} rounds:")
print(f"  {'':9s} {'workers':>7s} {'samples/s':>10s} {'steady':>10s} {'step ms':>8s}"
      f" {'data ms':>8s} {'compute':>8s} {'allred.':>8s} {'optim.':>8s}")
for (name, w), rs in runs.items():
    ph = []
    for p in PHASES:
        vals = [x[p] for x in rs]
        ph.append("       -" if vals[0] is None else f"{1000 * med(vals):8.2f}")
    print(f"  {name:9s} {w:7d} {m[name, w]['samples_per_s']:10.1f} {m[name, w]['steady']:10.1f}"
          f" {1000 * m[name, w]['step_s']:8.2f} " + " ".join(ph))
print("  samples/s: transient's summary.json samples_per_s; DDP's over the steps after the"
      f" {warmup}-step warm-up.")
print(f"  steady: global batch / mean step time after the first {warmup} steps (transient: slowest"
      " worker's data+compute+allreduce+optimizer from steps.csv).")
print("  phases: per-worker means; DDP's all-reduce overlaps its backward pass, so it is inside"
      " 'compute'.")
print()
for name, _ in sides:
    eff = m[name, 2]["samples_per_s"] / (2 * m[name, 1]["samples_per_s"])
    eff_s = m[name, 2]["steady"] / (2 * m[name, 1]["steady"])
    print(f"scaling efficiency {name:9s}: {100 * eff:5.1f}%  (steady: {100 * eff_s:5.1f}%)"
          "  target >= 90%")
if not peer_only:
    for w in (2, 1):
        ratio = m["transient", w]["samples_per_s"] / m["DDP", w]["samples_per_s"]
        ratio_s = m["transient", w]["steady"] / m["DDP", w]["steady"]
        target = "  target >= 1.10x" if w == 2 else ""
        print(f"transient/DDP samples/s, {w} worker(s): {ratio:5.2f}x  (steady: {ratio_s:5.2f}x)"
              + target)
EOF
