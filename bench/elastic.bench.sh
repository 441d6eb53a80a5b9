#!/usr/bin/env bash
# Elastic recovery: `transient train --revoke` against torchrun's elastic agent (PyTorch DDP over
# Gloo, restarted from its latest checkpoint) and against torchft (its Lighthouse and Manager, a
# quorum per step, live recovery from a peer; bench/torchft_peer.py), side by side in one run:
# same model (cnn), data (Fashion-MNIST), global batch, workers (3 x 1 thread), steps and kills,
# all on the torch of the project's .venv/ (torchft 0.2.0 is installed into it on first use).
#
#   bench/elastic.bench.sh [BUILD_DIR] [--peer-only]
#
# Each system trains STEPS steps twice: once while KILLS workers are SIGKILLed, one every
# KILL_EVERY seconds from the launch, and once undisturbed (the base). KILL_EVERY is 17 s, not a
# multiple of torchrun's 5 s monitor interval: the agent notices a failure only when it next
# polls its workers, and with kills 15 s apart every kill would fall at the same point of its
# poll cycle (measured: 1.2-1.4 s before the poll, each time); 17 s spreads them over it.
# Measured, per system:
#   - kill -> next step: from a worker's SIGKILL to the next training step completed by the
#     re-formed group (median and max over the kills);
#   - steps redone per kill: the highest step completed before the kill minus the step the
#     re-formed group resumed from (lost to the kill, trained again);
#   - wall time to finish the STEPS steps with the kills and without them (launch to exit).
#
# torchrun: `torchrun --nnodes 1 --nproc_per_node 3 --rdzv_backend c10d --rdzv_endpoint
# 127.0.0.1:PORT --max_restarts KILLS+1 --monitor_interval 5 ... bench/elastic_peer.py train`
# (c10d rendezvous on a free loopback port rather than --standalone, whose fixed port 29400 would
# collide with another benchmark's; --monitor_interval 5 is torchrun's default). The kill
# driver (`bench/elastic_peer.py kill`) SIGKILLs a worker, a child of the agent, rotating over
# local ranks KILL_RANKS, at KILL_EVERY, 2 x KILL_EVERY, ... seconds after the launch; a kill
# waits until the attempt running has completed a step, so that each kill measures one whole
# recovery. The figures come from the step log rank 0 appends ("step,time" per completed step,
# and a marker line per attempt) and the driver's kill times.
#
# transient: `transient train --model cnn --workers 3 --threads 1 --global-batch 128 --steps STEPS
# --checkpoint-every 20 --revoke kill@17s:any --revoke kill@34s:any ... --replace 0s` (one rule
# per kill; transient counts these times from its first completed step, a second or two after the
# launch), with `--test-subset 512` so that its
# evaluations at the ends of epochs and of the run (which the peer does not do) stay short. The
# figures come from events.jsonl: each `revocation_injected` is paired with the next `recovery`
# (emitted when the re-formed group completes its first step): kill -> next step is the
# difference of their `t`, steps redone the recovery's `redone_steps`.
#
# torchft: `bench/torchft_peer.py run --replicas 3 --kill-at 17,34,51 -- --steps STEPS ...`: a
# Lighthouse and 3 replica groups of one process each; a killed replica is started again at once
# and heals from a peer. Its figures come from the replicas' logs of committed steps.
#
# --peer-only runs only the peers (to check them without a trainer that has --revoke).
# Environment: STEPS (1000), KILLS (3), KILL_EVERY (17, seconds), CHECKPOINT_EVERY (20, steps),
# BATCH (128), WORKERS (3), KILL_RANKS (1,2: torchrun local ranks killed in rotation),
# MONITOR_INTERVAL (5: torchrun's default), LR (0.05), MOMENTUM (0.9), SEED (1),
# TIMEOUT (1200, seconds per training), PYTHON (.venv/bin/python3), TORCHRUN (.venv/bin/torchrun),
# PEERS ("torchrun torchft": the peers to run), KEEP=1 keeps the job directories and logs.
set -euo pipefail

build=build
peer_only=0
for arg in "$@"; do
  case "$arg" in
    --peer-only) peer_only=1 ;;
    -*)
      echo "error: unknown option $arg; accepted: [BUILD_DIR] [--peer-only]" >&2
      exit 2
      ;;
    *) build=$arg ;;
  esac
done
steps=${STEPS:-1000}
kills=${KILLS:-3}
kill_every=${KILL_EVERY:-17}
checkpoint_every=${CHECKPOINT_EVERY:-20}
batch=${BATCH:-128}
workers=${WORKERS:-3}
kill_ranks=${KILL_RANKS:-1,2}
monitor_interval=${MONITOR_INTERVAL:-5}
lr=${LR:-0.05}
momentum=${MOMENTUM:-0.9}
seed=${SEED:-1}
timeout_s=${TIMEOUT:-1200}
peers=${PEERS:-torchrun torchft}
model=cnn

cd "$(dirname "$0")/.."
here=$PWD
python=${PYTHON:-$here/.venv/bin/python3}
torchrun=${TORCHRUN:-$here/.venv/bin/torchrun}
transient="$build/transient"
[[ "$transient" == /* ]] || transient="$here/$transient"

if ((kills < 1 || workers < 2)); then
  echo "error: KILLS ($kills) must be at least 1 and WORKERS ($workers) at least 2" >&2
  exit 2
fi
if [[ ! -x "$torchrun" ]] || ! "$python" -c 'import torch.distributed' 2>/dev/null; then
  echo "error: PyTorch peer unavailable: needs $torchrun and $python with torch" \
    "(make deps installs torch into .venv/)" >&2
  exit 1
fi
# torchft, pinned, into the same environment (its only requirement on torch, >= 2.7, holds).
if ! "$python" -c 'import torchft' 2>/dev/null; then
  echo "installing torchft 0.2.0 into $("$python" -c 'import sys; print(sys.prefix)')" >&2
  "$python" -m pip install -q --disable-pip-version-check torchft==0.2.0
fi
if [[ $peer_only == 0 ]]; then
  if [[ ! -x "$transient" ]]; then
    echo "error: $transient not found or not executable: build transient first (make build," \
      "or pass the build directory as the first argument), or run with --peer-only" >&2
    exit 1
  fi
  if ! "$transient" train --help 2>&1 | grep -q -- '--revoke'; then
    echo "error: $transient train has no --revoke option (revocation injection is not in this" \
      "build): rebuild transient with it, or run with --peer-only for the torchrun half" >&2
    exit 1
  fi
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/elastic.XXXXXX")
groups=()  # process groups started here (torchrun and transient run in their own sessions)
pids=()    # other processes started here (kill drivers, watchdogs)
cleanup() {
  local g p
  for g in "${groups[@]}"; do kill -KILL -- "-$g" 2>/dev/null || true; done
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true  # reaps them quietly (no "Killed" job notices)
  if [[ "${KEEP:-0}" == 1 ]]; then
    echo "kept the runs in $work"
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

now() { echo "${EPOCHREALTIME/,/.}"; }  # time.time(), without a fork (bash 5)
free_port() {
  "$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
kill_times=""  # 17,34,51 for KILLS=3, KILL_EVERY=17
for ((i = 1; i <= kills; i++)); do kill_times+="${kill_times:+,}$((i * kill_every))"; done

# Waits for the process group leader $1 (started with setsid) to exit, killing its group after
# TIMEOUT seconds. Sets `status` to its exit status and `timed_out` to 1 if it was killed.
wait_group() {
  local leader=$1 watchdog
  "$python" -c 'import os, signal, sys, time
time.sleep(float(sys.argv[1]))
os.killpg(int(sys.argv[2]), signal.SIGKILL)' "$timeout_s" "$leader" 2>/dev/null &
  watchdog=$!
  pids+=("$watchdog")
  status=0
  wait "$leader" || status=$?
  timed_out=1
  if kill -0 "$watchdog" 2>/dev/null; then
    timed_out=0
    kill -KILL "$watchdog" 2>/dev/null || true
  fi
  wait "$watchdog" 2>/dev/null || true
}

run_torchrun() {  # name kills
  local dir="$work/torchrun-$1" driver="" t0 t1 port
  mkdir -p "$dir"
  port=$(free_port)
  uptime >"$dir/load" 2>/dev/null || true
  local start=$SECONDS
  t0=$(now)
  setsid "$torchrun" --nnodes 1 --nproc_per_node "$workers" --rdzv_backend c10d \
    --rdzv_endpoint "127.0.0.1:$port" --rdzv_id "elastic-bench-$$-$1" \
    --max_restarts $(($2 + 1)) --monitor_interval "$monitor_interval" --redirects 1:2 --tee 0:1 \
    bench/elastic_peer.py train --model "$model" --steps "$steps" --global-batch "$batch" \
    --lr "$lr" --momentum "$momentum" --seed "$seed" --threads 1 \
    --checkpoint-every "$checkpoint_every" --checkpoint "$dir/checkpoint.pt" \
    --step-log "$dir/steps.log" >"$dir/torchrun.log" 2>&1 &
  local agent=$!
  groups+=("$agent")
  if (($2 > 0)); then
    "$python" bench/elastic_peer.py kill --agent-pid "$agent" --t0 "$t0" --at "$kill_times" \
      --ranks "$kill_ranks" --log "$dir/steps.log" --out "$dir/kills.csv" >"$dir/kill.log" 2>&1 &
    driver=$!
    pids+=("$driver")
  fi
  wait_group "$agent"
  t1=$(now)
  if [[ -n "$driver" ]] && ! wait "$driver"; then
    echo "error: the kill driver failed; its output:" >&2
    tail -n 20 "$dir/kill.log" >&2
    exit 1
  fi
  if ((timed_out)); then
    echo "error: torchrun ($1) did not finish within TIMEOUT=$timeout_s s; killed" >&2
    exit 1
  fi
  if ((status != 0)); then
    echo "error: torchrun ($1) failed (exit status $status); its output:" >&2
    grep -v '^ ' "$dir/torchrun.log" | tail -n 20 >&2
    exit 1
  fi
  "$python" bench/elastic_peer.py summary --log "$dir/steps.log" \
    ${driver:+--kills "$dir/kills.csv"} --t0 "$t0" --t-end "$t1" --out "$dir/summary.json"
  printf '  torchrun   %-9s %4ds\n' "$1" $((SECONDS - start))
}

run_transient() {  # name kills
  local dir="$work/transient-$1" t0 t1 i
  local revoke=()
  for ((i = 1; i <= $2; i++)); do revoke+=(--revoke "kill@$((i * kill_every))s:any"); done
  if (($2 > 0)); then revoke+=(--replace 0s); fi
  uptime >"$dir.load" 2>/dev/null || true
  local start=$SECONDS
  t0=$(now)
  setsid "$transient" train --model "$model" --workers "$workers" --threads 1 \
    --global-batch "$batch" --steps "$steps" --lr "$lr" --momentum "$momentum" --seed "$seed" \
    --checkpoint-every "$checkpoint_every" --test-subset 512 "${revoke[@]}" \
    --job-dir "$dir" >"$dir.log" 2>&1 &
  local leader=$!
  groups+=("$leader")
  wait_group "$leader"
  t1=$(now)
  if ((timed_out)); then
    echo "error: transient train ($1) did not finish within TIMEOUT=$timeout_s s; killed" >&2
    exit 1
  fi
  if ((status != 0)); then
    echo "error: \`transient train\` ($1) failed (exit status $status); its output:" >&2
    tail -n 20 "$dir.log" >&2
    exit 1
  fi
  if [[ ! -s "$dir/summary.json" || ! -s "$dir/events.jsonl" ]]; then
    echo "error: \`transient train\` ($1) wrote no summary.json or events.jsonl in $dir" >&2
    exit 1
  fi
  echo "$t0 $t1" >"$dir.times"
  printf '  transient  %-9s %4ds\n' "$1" $((SECONDS - start))
}

run_torchft() {  # name kills
  local dir="$work/torchft-$1" t0 at=""
  mkdir -p "$dir"
  (($2 > 0)) && at=$kill_times
  uptime >"$dir/load" 2>/dev/null || true
  local start=$SECONDS
  if ! "$python" bench/torchft_peer.py run --replicas "$workers" --kill-at "$at" \
    --timeout "$timeout_s" --work "$dir" --out "$dir/summary.json" -- --model "$model" \
    --steps "$steps" --global-batch "$batch" --lr "$lr" --momentum "$momentum" --seed "$seed" \
    --threads 1 >"$dir/run.log" 2>&1; then
    echo "error: torchft ($1) failed; its output:" >&2
    tail -n 20 "$dir/run.log" >&2
    exit 1
  fi
  printf '  torchft    %-9s %4ds\n' "$1" $((SECONDS - start))
}

echo "elastic recovery, transient vs torchrun's elastic agent and torchft: model $model, $workers workers x" \
  "1 thread, global batch $batch, $steps steps, checkpoint every $checkpoint_every steps," \
  "$kills kills at ${kill_times//,/, } s, $(nproc) cores"
# Alternating systems, the runs with kills first.
[[ $peer_only == 1 ]] || run_transient kills "$kills"
[[ " $peers " == *" torchrun "* ]] && run_torchrun kills "$kills"
[[ " $peers " == *" torchft "* ]] && run_torchft kills "$kills"
[[ $peer_only == 1 ]] || run_transient base 0
[[ " $peers " == *" torchrun "* ]] && run_torchrun base 0
[[ " $peers " == *" torchft "* ]] && run_torchft base 0

"$python" - "$work" "$kills" "$peer_only" "$peers" <<'EOF'
import json, os, statistics, sys

work, kills_asked, peer_only = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
peers = sys.argv[4].split()


def load(path):
    try:
        with open(path) as f:
            return f.read().split("load average:")[-1].split(",")[0].strip()
    except OSError:
        return "?"


def torchft(name):
    d = os.path.join(work, f"torchft-{name}")
    with open(os.path.join(d, "summary.json")) as f:
        s = json.load(f)
    s["load"] = load(os.path.join(d, "load"))
    s["recoveries"] = [k["recovery_s"] for k in s["kills"] if "recovery_s" in k]
    s["redone"] = [k["redone_steps"] for k in s["kills"] if "recovery_s" in k]
    for k in s["kills"]:
        k["worker"] = f"replica {k['replica']}"
    return s


def torchrun(name):
    d = os.path.join(work, f"torchrun-{name}")
    with open(os.path.join(d, "summary.json")) as f:
        s = json.load(f)
    s["load"] = load(os.path.join(d, "load"))
    s["recoveries"] = [k["recovery_s"] for k in s["kills"] if "recovery_s" in k]
    s["redone"] = [k["redone_steps"] for k in s["kills"] if "recovery_s" in k]
    return s


def transient(name):
    d = os.path.join(work, f"transient-{name}")
    with open(os.path.join(d, "summary.json")) as f:
        summary = json.load(f)
    with open(os.path.join(d, "events.jsonl")) as f:
        events = [json.loads(line) for line in f if line.strip()]
    with open(d + ".times") as f:
        t0, t1 = map(float, f.read().split())
    injected = [e for e in events if e["event"] == "revocation_injected"]
    recoveries = [e for e in events if e["event"] == "recovery"]
    s = {"wall_s": t1 - t0, "summary_wall_s": summary.get("wall_s"), "steps": summary["steps"],
         "load": load(d + ".load"), "kills": [], "recoveries": [], "redone": []}
    used = 0
    for inj in injected:
        while used < len(recoveries) and recoveries[used]["t"] <= inj["t"]:
            used += 1
        k = {"at_s": inj["t"], "worker": inj.get("worker"), "rule": inj.get("rule")}
        if used < len(recoveries):
            rec = recoveries[used]
            used += 1
            k.update(recovery_s=rec["t"] - inj["t"], redone_steps=rec.get("redone_steps"),
                     detect_s=rec.get("detect_s"), reform_s=rec.get("reform_s"),
                     duration_s=rec.get("duration_s"), gen=rec.get("gen"))
            s["recoveries"].append(k["recovery_s"])
            s["redone"].append(k["redone_steps"])
        else:
            k["error"] = "no recovery event after this injection"
        s["kills"].append(k)
    return s


systems = [(n, f) for n, f in (("torchrun", torchrun), ("torchft", torchft)) if n in peers] + (
    [] if peer_only else [("transient", transient)])
runs = {name: (f("kills"), f("base")) for name, f in systems}


def ms(x):
    return f"{1000 * x:8.0f}" if isinstance(x, (int, float)) else "       -"


print()
print(f"  {'':9s} {'kills':>5s} {'median ms':>9s} {'max ms':>8s} {'redone/kill':>11s}"
      f" {'wall, kills':>11s} {'wall, base':>10s} {'s per kill':>10s} {'steps':>6s}")
for name, (k, b) in runs.items():
    rec = k["recoveries"]
    med = statistics.median(rec) if rec else None
    redone = statistics.fmean(k["redone"]) if k["redone"] else None
    per_kill = (k["wall_s"] - b["wall_s"]) / len(rec) if rec else None
    print(f"  {name:9s} {len(rec):5d} {ms(med):>9s} {ms(max(rec) if rec else None)}"
          f" {'-' if redone is None else f'{redone:.1f}':>11s} {k['wall_s']:10.1f}s"
          f" {b['wall_s']:9.1f}s {'-' if per_kill is None else f'{per_kill:.1f}':>10s}"
          f" {k['steps']:6d}")
print("  median/max ms: from a worker's SIGKILL to the next step completed after the recovery;"
      " redone/kill: steps completed before the kill and trained again after it (mean);")
print("  wall: launch to exit; s per kill: (wall with kills - base wall) / kills.")
print()
print("per kill (s after the launch, 1-min load average at the start of the run in brackets):")
for name, (k, b) in runs.items():
    print(f"  {name} (load {k['load']}, base run {b['load']}):")
    for i, x in enumerate(k["kills"], 1):
        who = f"local rank {x['local_rank']}" if "local_rank" in x else x.get("worker") or "?"
        if "error" in x:
            print(f"    kill {i} at {x['at_s']:6.1f} s ({who}): {x['error']}")
            continue
        line = (f"    kill {i} at {x['at_s']:6.1f} s ({who}): next step after"
                f" {1000 * x['recovery_s']:6.0f} ms, {x['redone_steps']} steps redone")
        if name == "torchrun":
            line += (f"; old workers gone {x['old_workers_gone_s']:.2f} s, new started"
                     f" {x['new_workers_started_s']:.2f} s, torch imported {x['torch_imported_s']:.2f}"
                     f" s, group {x['group_formed_s']:.2f} s, data {x['data_loaded_s']:.2f} s,"
                     f" ready {x['ready_s']:.2f} s (resumed from {x['resumed_from']})")
        elif name == "transient":
            line += (f"; detected {ms(x['detect_s']).strip()} ms, re-formed"
                     f" {ms(x['reform_s']).strip()} ms, recovery {ms(x['duration_s']).strip()} ms"
                     f" (generation {x['gen']})")
        print(line)

problems = []
for name, (k, b) in runs.items():
    if len(k["recoveries"]) < kills_asked:
        problems.append(f"{name}: {len(k['recoveries'])} of {kills_asked} kills measured (the run"
                        " ended first, or a recovery was not seen): raise STEPS")
    if k["steps"] != b["steps"]:
        problems.append(f"{name}: the runs with and without kills ended at steps {k['steps']}"
                        f" and {b['steps']}")
print()
for peer in peers:
    if not peer_only and runs[peer][0]["recoveries"] and runs["transient"][0]["recoveries"]:
        ratio = statistics.median(runs[peer][0]["recoveries"]) / statistics.median(
            runs["transient"][0]["recoveries"])
        print(f"{peer}/transient, median kill -> next step: {ratio:.1f}x")
for p in problems:
    print(f"error: {p}", file=sys.stderr)
sys.exit(1 if problems else 0)
EOF
