#!/usr/bin/env python3
"""The torchft peer of `transient train --revoke`, for bench/elastic.bench.sh.

torchft (PyPI `torchft`, its Lighthouse and Manager, ProcessGroupGloo, on the CPU) is the
closest modern system to transient: a quorum per step, and live recovery of a new or restarted
replica from a peer instead of a restart of everyone from a checkpoint.

Two commands:

  replica  One replica group of one process: a Manager (min_replica_size 1) over torchft's
           ProcessGroupGloo and its OptimizerWrapper (the step is applied only when the quorum
           commits), the gradients all-reduced in one flat bucket with Manager.allreduce, and the
           model, data, normalisation and SGD of bench/ddp_peer.py. (torchft 0.2.0's
           DistributedDataParallel wrapper is not used: its comm hook asserts when a peer's
           death breaks the Gloo all-reduce, which ended the surviving replicas.) Every replica takes a fixed third of the global batch (torchft's
           usual fixed per-replica batch: 43 + 43 + 42 = 128 samples a step with 3 replicas)
           from the same seeded permutation, indexed by the step the Manager committed. It
           appends "step,time" to its own log after every committed step.

  run      The whole run: a Lighthouse on a free loopback port, REPLICAS replica processes, and,
           with --kill-at, a SIGKILL of one replica (rotating over replicas 1..N-1, as the
           torchrun benchmark spares the agent's rank 0) at each scheduled time after the
           launch; the killed replica is started again at once (as `transient train --replace
           0s` does) and recovers the state from a peer. It waits for every replica to commit
           --steps steps, and writes a JSON summary in the shape of elastic_peer.py's: per kill,
           the time from the kill to the next step committed by any replica, and the steps redone as
           transient counts them (the step in flight at the kill, the highest committed before
           it + 1, minus the step the replicas go on from, the next committed one - 1: 1 when the
           step in flight was lost, 0 when it was committed anyway); the wall time.
"""

import time

T_LAUNCH = time.time()

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("replica", help="one replica group (one process)")
    r.add_argument("--replica", type=int, required=True, help="replica index 0..N-1")
    r.add_argument("--replicas", type=int, required=True)
    r.add_argument("--lighthouse", required=True, help="http://HOST:PORT of the Lighthouse")
    r.add_argument("--model", choices=("cnn", "mlp"), default="cnn")
    r.add_argument("--steps", type=int, default=1000)
    r.add_argument("--global-batch", type=int, default=128)
    r.add_argument("--lr", type=float, default=0.05)
    r.add_argument("--momentum", type=float, default=0.9)
    r.add_argument("--seed", type=int, default=1)
    r.add_argument("--threads", type=int, default=1)
    r.add_argument("--log", required=True)
    r.add_argument("--mean", type=float, default=0.2860)
    r.add_argument("--std", type=float, default=0.3530)
    r.add_argument("--data-dir", default="/usr/share/datasets/fashion-mnist")

    run = sub.add_parser("run", help="a Lighthouse, the replicas and the kill schedule")
    run.add_argument("--replicas", type=int, default=3)
    run.add_argument("--kill-at", default="", help="kill times in seconds after the launch")
    run.add_argument("--work", required=True, help="directory for the logs")
    run.add_argument("--out", required=True, help="the JSON summary")
    run.add_argument("--timeout", type=float, default=1200)
    run.add_argument("--lighthouse-bin", default=os.path.join(os.path.dirname(sys.executable),
                                                              "torchft_lighthouse"))
    run.add_argument("replica_args", nargs=argparse.REMAINDER,
                     help="after --: the replica flags (--steps, --model, ...)")
    return p.parse_args()


def replica(args):
    from datetime import timedelta

    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from torchft import Manager, ProcessGroupGloo
    from torchft.optim import OptimizerWrapper

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from ddp_peer import MODELS, load_train

    torch.set_num_threads(args.threads)
    x, y = load_train(args.data_dir, args.mean, args.std)
    n = x.shape[0]
    torch.manual_seed(args.seed)
    model = MODELS[args.model]()
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)

    def state_dict():
        return {"model": model.state_dict(), "optim": opt.state_dict()}

    def load_state_dict(state):
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optim"])

    # The replica group's own store (one process: rank 0 of a group of 1).
    store = dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False)
    manager = Manager(
        pg=ProcessGroupGloo(),
        min_replica_size=1,
        load_state_dict=load_state_dict,
        state_dict=state_dict,
        replica_id=f"replica_{args.replica}",
        store_addr="127.0.0.1",
        store_port=store.port,
        rank=0,
        world_size=1,
        lighthouse_addr=args.lighthouse,
        timeout=timedelta(seconds=10),
        quorum_timeout=timedelta(seconds=30),
    )
    optimizer = OptimizerWrapper(manager, opt)
    params = list(model.parameters())

    # The per-epoch permutations, as ddp_peer.py draws them, computed up front.
    gen = torch.Generator().manual_seed(args.seed)
    share = [args.global_batch // args.replicas + (1 if r < args.global_batch % args.replicas else 0)
             for r in range(args.replicas)]
    begin = sum(share[: args.replica])
    perms = {}

    log = open(args.log, "a", buffering=1)
    while manager.current_step() < args.steps:
        step = manager.current_step()
        position = step * args.global_batch
        epoch, cursor = divmod(position, n - n % args.global_batch)
        while epoch not in perms:
            perms[len(perms)] = torch.randperm(n, generator=gen)
        idx = perms[epoch][cursor + begin: cursor + begin + share[args.replica]]
        optimizer.zero_grad()  # starts the step's quorum
        F.cross_entropy(model(x.index_select(0, idx)), y.index_select(0, idx)).backward()
        # The gradients in one flat bucket through the Manager's fault-tolerant all-reduce (an
        # error there is tracked, and the step is then not committed).
        flat = torch.cat([p.grad.reshape(-1) for p in params])
        manager.allreduce(flat).wait()
        offset = 0
        for p in params:
            p.grad.copy_(flat[offset: offset + p.numel()].view_as(p))
            offset += p.numel()
        optimizer.step()  # applied only if every member of the quorum committed
        if manager.current_step() > step:
            log.write(f"{manager.current_step()},{time.time():.6f}\n")
    log.close()
    manager.shutdown(wait=False)
    return 0


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def read_log(path):
    steps = []
    try:
        with open(path) as f:
            for line in f:
                if line[:1].isdigit():
                    step, t = line.strip().split(",")
                    steps.append((int(step), float(t)))
    except OSError:
        pass
    return steps


def run(args):
    replica_args = [a for a in args.replica_args if a != "--"]
    steps_wanted = int(replica_args[replica_args.index("--steps") + 1])
    os.makedirs(args.work, exist_ok=True)
    port = free_port()
    lighthouse = subprocess.Popen(
        [args.lighthouse_bin, "--min_replicas", "1", "--bind", f"127.0.0.1:{port}",
         "--quorum_tick_ms", "100", "--join_timeout_ms", "1000", "--heartbeat_timeout_ms", "1000"],
        stdout=open(os.path.join(args.work, "lighthouse.log"), "w"), stderr=subprocess.STDOUT)
    procs, logs = {}, {}

    def start(r):
        logs[r] = os.path.join(args.work, f"replica{r}.steps")
        procs[r] = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "replica", "--replica", str(r),
             "--replicas", str(args.replicas), "--lighthouse", f"http://127.0.0.1:{port}",
             "--log", logs[r]] + replica_args,
            stdout=open(os.path.join(args.work, f"replica{r}.out"), "a"),
            stderr=subprocess.STDOUT)

    kills_at = [float(a) for a in args.kill_at.split(",") if a]
    kills = []
    try:
        for r in range(args.replicas):
            start(r)
        deadline = T_LAUNCH + args.timeout
        next_kill = 0
        while True:
            now = time.time()
            if now > deadline:
                raise SystemExit(f"torchft: not finished within {args.timeout} s")
            done = all(max((s for s, _ in read_log(logs[r])), default=0) >= steps_wanted
                       for r in logs)
            if done:
                break
            if next_kill < len(kills_at) and now >= T_LAUNCH + kills_at[next_kill]:
                # Only once the replicas train (a committed step since the last kill).
                committed = [s for r in logs for s in read_log(logs[r])]
                last_kill = kills[-1]["time"] if kills else 0
                if any(t > last_kill for _, t in committed):
                    victim = 1 + next_kill % max(1, args.replicas - 1)
                    reached = max((s for s, t in committed), default=0)
                    t_kill = time.time()
                    procs[victim].send_signal(signal.SIGKILL)
                    procs[victim].wait()
                    start(victim)  # the replacement, at once
                    kills.append({"replica": victim, "time": t_kill, "reached": reached,
                                  "scheduled_s": kills_at[next_kill]})
                    next_kill += 1
            for r, p in procs.items():
                if p.poll() not in (None, 0):
                    raise SystemExit(f"torchft: replica {r} failed (exit {p.returncode}); see "
                                     f"{args.work}/replica{r}.out")
            time.sleep(0.02)
        for p in procs.values():
            p.wait(timeout=60)
    finally:
        for p in list(procs.values()) + [lighthouse]:
            if p.poll() is None:
                p.kill()
                p.wait()
    t_end = time.time()

    committed = sorted(s for r in logs for s in read_log(logs[r]))
    result = {"wall_s": t_end - T_LAUNCH, "steps": max((s for s, _ in committed), default=0),
              "kills": []}
    for k in kills:
        # The next step: the first one above every step committed before the kill (a slower
        # replica may log one of those after it).
        after = [(s, t) for s, t in committed if t > k["time"] and s > k["reached"]]
        entry = {"at_s": k["time"] - T_LAUNCH, "scheduled_s": k["scheduled_s"],
                 "replica": k["replica"]}
        if not after:
            entry["error"] = "no step committed after this kill"
        else:
            step, t = min(after, key=lambda st: st[1])
            entry.update(recovery_s=t - k["time"], reached=k["reached"],
                         redone_steps=max(0, k["reached"] + 1 - step + 1))
        result["kills"].append(entry)
    recoveries = [k["recovery_s"] for k in result["kills"] if "recovery_s" in k]
    if recoveries:
        result["recovery_median_s"] = statistics.median(recoveries)
        result["recovery_max_s"] = max(recoveries)
    with open(args.out + ".tmp", "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    os.replace(args.out + ".tmp", args.out)
    return 0


def main():
    args = parse_args()
    return {"replica": replica, "run": run}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
