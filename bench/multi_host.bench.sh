#!/usr/bin/env bash
# transient across hosts against PyTorch DDP across hosts (torchrun multi-node, Gloo, the same torch
# of .venv/), each host a network namespace on a bridge (root; veth; addresses 10.79.0.0/24),
# every host's link limited by tc tbf to the profile's rate:
#
#   bench/multi_host.bench.sh [BUILD_DIR]       (HOSTS=3 workers, PROFILE=zone|region)
#
# COMPRESS=none|bf16|fp16 and BUCKET_BYTES (the buckets after the first, which closes at 1 MiB or
# BUCKET_BYTES if smaller; default 25 MiB, the trainer's) go to transient's job. The CNN has two
# buckets (its 1.6 MB fc1 and what follows it, then the convolutions) whatever BUCKET_BYTES >= 1 MiB.
# zone: 10 Gbit/s and 0.5 ms round trip; region: 1 Gbit/s and 30 ms round trip. The rate is tc's
# tbf on each host's way out; the latency is tests/tools/link_delay holding each packet a host
# receives for half the round trip (an NFQUEUE rule: this machine's kernel has no sch_netem).
# LATENCY=0 leaves the latency out (the rate alone, as the figures before link_delay were taken).
# MEMORY_FORMAT (auto, channels-last, contiguous) goes to transient's job: auto lays the ResNets'
# convolution weights out channels-last. DDP_CHANNELS_LAST=1 does the same to DDP's model (its
# users must ask for it: DDP's default is contiguous, the peer as users run it).
# Same model (MODEL, default cnn), data (Fashion-MNIST), global batch 128, 1 thread per worker,
# STEPS steps. Measured:
#   - samples/s of each (transient: summary.json's samples_per_s, first to last step; DDP:
#     bench/ddp_peer.py's steady-state samples_per_s) and their ratio;
#   - transient only: one worker SIGKILLed once training runs (a second run): kill -> next step
#     (the recovery's duration_s) and steps redone.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$here/build}" && pwd)
transient=$build/transient
python=${PYTHON:-$here/.venv/bin/python3}
torchrun=${TORCHRUN:-$here/.venv/bin/torchrun}
workers=${HOSTS:-3}
profile=${PROFILE:-zone}
model=${MODEL:-cnn}
steps=${STEPS:-300}
compress=${COMPRESS:-none}
bucket_bytes=${BUCKET_BYTES:-26214400}
latency=${LATENCY:-1}
memory_format=${MEMORY_FORMAT:-auto}
ddp_layout=()
[[ ${DDP_CHANNELS_LAST:-0} == 1 ]] && ddp_layout=(--channels-last)
link_delay=$build/tests/tools/link_delay
case $profile in
  zone) rate=10gbit one_way_ms=0.25 ;;
  region) rate=1gbit one_way_ms=15 ;;
  *) echo "error: PROFILE=$profile; accepted: zone, region" >&2; exit 2 ;;
esac
[[ $latency == 0 ]] && one_way_ms=0
if [[ $one_way_ms != 0 && ! -x $link_delay ]]; then
  echo "error: $link_delay is not built (the tests' build makes it); LATENCY=0 runs without" >&2
  exit 2
fi
if [[ $(id -u) -ne 0 ]]; then echo "error: needs root (ip netns)" >&2; exit 2; fi
work=$(mktemp -d /tmp/transient-multihost.XXXXXX)
tag=mh$$
hosts=$((workers + 1))
cleanup() {
  for ((i = 0; i < hosts; i++)); do
    ip netns pids "$tag$i" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
    ip netns del "$tag$i" 2>/dev/null || true
    ip link del "${tag}v$i" 2>/dev/null || true
  done
  ip link del "${tag}b" 2>/dev/null || true
}
trap cleanup EXIT
ip link add "${tag}b" type bridge
ip link set "${tag}b" up
for ((i = 0; i < hosts; i++)); do
  ip netns add "$tag$i"
  ip link add "${tag}v$i" type veth peer name eth0 netns "$tag$i"
  ip link set "${tag}v$i" master "${tag}b" up
  ip -n "$tag$i" addr add "10.79.0.$((i + 1))/24" dev eth0
  ip -n "$tag$i" link set eth0 up
  ip -n "$tag$i" link set lo up
  ip netns exec "$tag$i" tc qdisc replace dev eth0 root tbf rate $rate burst 1mbit latency 50ms
  if [[ $one_way_ms != 0 ]]; then
    # Held on the way in (see link_delay.cc); "ready" once the queue is bound.
    ip netns exec "$tag$i" "$link_delay" --queue 1 --delay-ms "$one_way_ms" \
      >"$work/delay-$i.out" 2>&1 &
    disown  # ended by cleanup (kill -9), which bash would otherwise report
    for ((t = 0; t < 50; t++)); do
      grep -qs ready "$work/delay-$i.out" && break
      sleep 0.1
    done
    grep -qs ready "$work/delay-$i.out" ||
      { echo "error: link_delay did not start on host $i: $(cat "$work/delay-$i.out")" >&2; exit 1; }
    for tables in iptables ip6tables; do
      ip netns exec "$tag$i" $tables -w -A INPUT -i eth0 -j NFQUEUE --queue-num 1
    done
  fi
done
# exec: a command started with `on ... &` has the pid $! names (ip netns exec execs it too).
on() { local host=$1; shift; exec ip netns exec "$tag$host" "$@"; }

# transient: coordinator on host 0, a worker on each other host. $1: extra worker to kill ("" = none).
run_transient() {
  local job=$work/job-$1 kill=$2
  on 0 "$transient" coordinator --job-dir "$job" --model "$model" --steps "$steps" \
    --global-batch 128 --threads 1 --test-subset 512 --checkpoint-every 0 --min-workers "$workers" \
    --bind 10.79.0.1 --port 29411 --compress "$compress" --bucket-bytes "$bucket_bytes" \
    --memory-format "$memory_format" >"$work/c-$1.out" 2>"$work/c-$1.err" &
  local coordinator=$!
  while [[ ! -f $job/coordinator.json ]]; do sleep 0.1; done
  local pids=()
  for ((i = 1; i <= workers; i++)); do
    on "$i" "$transient" worker --coordinator 10.79.0.1:29411 --token-file "$job/token" \
      --threads 1 >"$work/w$i-$1.out" 2>&1 &
    pids+=($!)
  done
  if [[ -n $kill ]]; then
    # Once training runs for a while, one worker is SIGKILLed.
    local rows=$job/records/steps-w0.part.csv
    until [[ -s $rows ]] && (($(wc -l <"$rows") > steps / 3)); do sleep 0.2; done
    kill -9 "${pids[1]}"
  fi
  wait "$coordinator" || true
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}

run_ddp() {
  local pids=()
  for ((i = 1; i <= workers; i++)); do
    on "$i" env GLOO_SOCKET_IFNAME=eth0 "$torchrun" --nnodes "$workers" --nproc_per_node 1 \
      --node_rank $((i - 1)) --master_addr 10.79.0.2 --master_port 29412 --redirects 1:2 --tee 0:1 \
      "$here/bench/ddp_peer.py" --model "$model" --steps "$steps" --global-batch 128 --threads 1 \
      "${ddp_layout[@]}" --out "$work/ddp-$i.json" >"$work/ddp-$i.out" 2>&1 &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid"; done
}

echo "transient vs DDP across $workers hosts (network namespaces), profile $profile ($rate," \
  "$one_way_ms ms each way), model $model, $steps steps of 128, 1 thread per worker;" \
  "transient: --compress $compress --bucket-bytes $bucket_bytes --memory-format $memory_format;" \
  "DDP: ${ddp_layout[*]:-contiguous}"
run_transient plain ""
run_ddp
run_transient kill yes
"$python" - "$work" <<'EOF'
import json, sys
work = sys.argv[1]
t = json.load(open(f"{work}/job-plain/summary.json"))
d = json.load(open(f"{work}/ddp-1.json"))
print(f"transient {t['samples_per_s']:.0f} samples/s, DDP {d['samples_per_s']:.0f} samples/s: "
      f"{t['samples_per_s'] / d['samples_per_s']:.2f}x")
events = [json.loads(l) for l in open(f"{work}/job-kill/events.jsonl")]
for e in events:
    if e["event"] == "recovery":
        print(f"kill -> next step {1000 * e['duration_s']:.0f} ms, {e['redone_steps']} step(s) redone")
k = json.load(open(f"{work}/job-kill/summary.json"))
print(f"with the kill: {k['steps']} steps, {k['recoveries']} recovery")
EOF
