#!/usr/bin/env bash
# Starting workers: from the launcher's fork server (the default where CUDA cannot run,
# launch/fork_server.h) against fork + exec (TRANSIENT_FORK_SERVER=off), side by side in one run.
#
#   bench/worker_start.bench.sh [BUILD_DIR] [RUNS]
#
# Measured, each way, RUNS times (default 5):
#   - the CPU (user + system, of the launcher and all its workers) and wall time of a job that
#     only starts: `transient train --model mlp --workers 4 --steps 1 --threads 1 --train-subset
#     2000 --test-subset 16`;
#   - a replacement's start: `--workers 2 --steps 200 --revoke kill@step20:rank1 --replace 0s`,
#     from the killed worker's `worker_left` to the replacement's `worker_joined` in events.jsonl
#     (its connection, hello and admission included).
# Prints the median of each and the ratio exec / fork server.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
runs="${2:-5}"
transient="$build/transient"
[[ -x "$transient" ]] || { echo "error: $transient: not built (make build)" >&2; exit 2; }
scratch="$(mktemp -d /tmp/transient-worker-start.XXXXXX)"
trap 'rm -rf "$scratch"' EXIT

median() { sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

# cpu_and_wall SETTING: "CPU WALL" of one start-only job.
cpu_and_wall() {
  rm -rf "$scratch/job"
  TRANSIENT_FORK_SERVER="$1" /usr/bin/time -f "%U %S %e" -o "$scratch/time" "$transient" train \
    --model mlp --workers 4 --steps 1 --threads 1 --train-subset 2000 --test-subset 16 \
    --job-dir "$scratch/job" > /dev/null 2>&1
  awk '{printf "%.3f %.3f\n", $1 + $2, $3}' "$scratch/time"
}

# replacement_s SETTING: seconds from the kill's worker_left to the replacement's worker_joined.
replacement_s() {
  rm -rf "$scratch/job"
  TRANSIENT_FORK_SERVER="$1" "$transient" train --model mlp --workers 2 --steps 200 --threads 1 \
    --train-subset 2000 --test-subset 16 --revoke kill@step20:rank1 --replace 0s \
    --job-dir "$scratch/job" > /dev/null 2>&1
  python3 - "$scratch/job/events.jsonl" <<'EOF'
import json, sys
events = [json.loads(line) for line in open(sys.argv[1])]
left = next(e["t"] for e in events if e["event"] == "worker_left")
joined = next(e["t"] for e in events if e["event"] == "worker_joined" and e["t"] > left)
print(f"{joined - left:.3f}")
EOF
}

echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores"
echo "runs: $runs each, alternating"
for setting in off on; do : > "$scratch/start-$setting"; : > "$scratch/replace-$setting"; done
for ((i = 0; i < runs; ++i)); do
  for setting in off on; do
    cpu_and_wall "$setting" >> "$scratch/start-$setting"
    replacement_s "$setting" >> "$scratch/replace-$setting"
  done
done
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
declare -A cpu wall replace
for setting in off on; do
  cpu[$setting]=$(cut -d' ' -f1 "$scratch/start-$setting" | median)
  wall[$setting]=$(cut -d' ' -f2 "$scratch/start-$setting" | median)
  replace[$setting]=$(median < "$scratch/replace-$setting")
done
printf "%-34s %12s %12s %8s\n" "median of $runs" "exec" "fork server" "ratio"
printf "%-34s %12s %12s %8s\n" "4-worker start, CPU s" "${cpu[off]}" "${cpu[on]}" \
  "$(ratio "${cpu[off]}" "${cpu[on]}")"
printf "%-34s %12s %12s %8s\n" "4-worker start, wall s" "${wall[off]}" "${wall[on]}" \
  "$(ratio "${wall[off]}" "${wall[on]}")"
printf "%-34s %12s %12s %8s\n" "worker left -> replacement in, s" "${replace[off]}" \
  "${replace[on]}" "$(ratio "${replace[off]}" "${replace[on]}")"
