#!/usr/bin/env bash
# A cut of the coordinator's own link, as the workers see it: the coordinator on host 0 and a
# worker on each of hosts 1 and 2 (network namespaces on a bridge; root; veth; 10.78.0.0/24),
# host 0's link cut for CUT seconds (default 20) once the job trains, then mended:
#
#   bench/coordinator_cut.bench.sh [BUILD_DIR]
#
# Measured every 2 s: each worker's resident memory (VmRSS) before, during and after the cut, and
# whether the job ends with every step and no worker lost (the hold of membership.h). The job: the
# MLP on Fashion-MNIST, global batch 100, 1 thread a worker, --heartbeat-timeout 3s, no checkpoint
# but the last (--checkpoint-every 0).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$here/build}" && pwd)
transient=$build/transient
cut=${CUT:-20}
work=$(mktemp -d /tmp/coordinator-cut.XXXXXX)
teardown() {
  for i in 0 1 2; do
    ip netns pids trcut$i 2>/dev/null | xargs -r kill -9 2>/dev/null || true
    ip netns del trcut$i 2>/dev/null || true
    ip link del trcutv$i 2>/dev/null || true
  done
  ip link del trcutbr 2>/dev/null || true
}
trap teardown EXIT
teardown
ip link add trcutbr type bridge && ip link set trcutbr up
for i in 0 1 2; do
  ip netns add trcut$i
  ip link add trcutv$i type veth peer name eth0 netns trcut$i
  ip link set trcutv$i master trcutbr up
  ip -n trcut$i addr add 10.78.0.$((i + 1))/24 dev eth0
  ip -n trcut$i link set eth0 up
  ip -n trcut$i link set lo up
done
job=$work/job
ip netns exec trcut0 "$transient" coordinator --job-dir "$job" --model mlp --steps 40000 \
  --global-batch 100 --threads 1 --train-subset 2000 --test-subset 500 --min-workers 2 \
  --bind 10.78.0.1 --dashboard off --heartbeat-timeout 3s --checkpoint-every 0 \
  > "$work/coordinator.out" 2> "$work/coordinator.err" &
coordinator=$!
for _ in $(seq 100); do [ -f "$job/coordinator.json" ] && break; sleep 0.2; done
door=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["front_door"])' "$job/coordinator.json")
for i in 1 2; do
  ip netns exec trcut$i "$transient" worker --coordinator "$door" --token-file "$job/token" \
    --threads 1 > "$work/worker$i.out" 2> "$work/worker$i.err" &
done
for _ in $(seq 300); do grep -q '"event":"epoch"' "$job/events.jsonl" 2>/dev/null && break; sleep 0.2; done
rss() {
  for i in 1 2; do
    pid=$(ip netns pids trcut$i | tail -1)
    printf ' worker%d %s MB' "$i" "$(awk '/VmRSS/{printf "%.0f", $2 / 1024}' /proc/$pid/status)"
  done
  echo
}
for t in 0 2; do printf 'before t=%2ds' "$t"; rss; sleep 2; done
ip link set trcutv0 nomaster
for t in $(seq 0 2 $((cut - 1))); do printf 'cut    t=%2ds' "$t"; rss; sleep 2; done
ip link set trcutv0 master trcutbr
for t in 0 2 4; do printf 'after  t=%2ds' "$t"; rss; sleep 2; done
kill -INT $coordinator
wait $coordinator || true
python3 - "$job" <<'PY'
import json, sys
events = [json.loads(line) for line in open(sys.argv[1] + "/events.jsonl")]
left = [e for e in events if e["event"] == "worker_left"]
print("workers lost:", len(left), "; hold:",
      [e["event"] for e in events if e["event"].startswith("workers_")])
PY
