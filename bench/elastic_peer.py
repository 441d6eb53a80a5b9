#!/usr/bin/python3
"""The torchrun elastic-agent peer of `transient train --revoke`, for bench/elastic.bench.sh.

Three commands:

  train    DDP over Gloo as torchrun users write it for fault tolerance, run by torchrun's elastic
           agent (one process per rank; the agent restarts the whole group after a failure):

             torchrun --nnodes 1 --nproc_per_node 3 --rdzv_backend c10d \\
                 --rdzv_endpoint 127.0.0.1:PORT --max_restarts 4 --redirects 1:2 --tee 0:1 \\
                 bench/elastic_peer.py train --steps 600 --checkpoint DIR/ckpt.pt --step-log DIR/steps.log

           The model, data, sharding and optimiser are bench/ddp_peer.py's (imported from it).
           Rank 0 saves a checkpoint every --checkpoint-every steps (torch.save to a temporary
           file, then os.replace, so a kill never leaves a torn one); every rank of every attempt
           starts from the latest checkpoint if there is one (model, momentum, step and the data
           order), and rank 0 appends to --log one line "step,time" per completed step (step
           counts completed steps, so the first is 1; time is time.time()). Each attempt first
           appends a marker line "# attempt R resume S launch T ... ready T", so the steps an
           attempt redoes appear twice in the log, after different markers.

  kill     The kill driver: SIGKILLs one worker (a child of the torchrun agent, never the agent)
           at each scheduled time, rotating over the given local ranks, and writes one CSV line
           per kill. A kill waits until the attempt running has completed a step, so that every
           kill measures one whole recovery (a kill during a restart would only lengthen it).

  summary  Reads the step log, the kill CSV and the launch and exit times, writes a JSON summary:
           per kill, the time from the kill to the first step completed by the restarted group,
           the steps redone (the highest step the killed attempt completed minus the step the
           restart resumed from) and the phases of the restart; the wall time; the steps done.

(Debian's torchrun 1.13 on Python 3.11 crashes parsing its own defaults unless --redirects and
--tee are given.)
"""

import time

T_LAUNCH = time.time()  # before the imports: a restart's cost includes starting Python and torch

import argparse
import csv
import json
import os
import signal
import statistics
import sys


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)

    t = sub.add_parser("train", help="train under torchrun (every rank runs this)")
    t.add_argument("--model", choices=("cnn", "mlp"), default="cnn")
    t.add_argument("--steps", type=int, default=600)
    t.add_argument("--global-batch", type=int, default=128)
    t.add_argument("--lr", type=float, default=0.05)
    t.add_argument("--momentum", type=float, default=0.9)
    t.add_argument("--seed", type=int, default=1)
    t.add_argument("--threads", type=int, default=1, help="torch.set_num_threads per rank")
    t.add_argument("--checkpoint-every", type=int, default=20, help="steps between checkpoints")
    t.add_argument("--checkpoint", required=True, help="checkpoint file (rank 0 writes it)")
    # Not --log: torchrun 2.x takes an abbreviation of its own --log-dir from the script's flags.
    t.add_argument("--step-log", dest="log", required=True, help="step log (rank 0 appends to it)")
    t.add_argument("--mean", type=float, default=0.2860, help="normalisation mean")
    t.add_argument("--std", type=float, default=0.3530, help="normalisation std")
    t.add_argument("--data-dir", default="/usr/share/datasets/fashion-mnist")

    k = sub.add_parser("kill", help="SIGKILL workers of a torchrun agent on a schedule")
    k.add_argument("--agent-pid", type=int, required=True, help="the torchrun process")
    k.add_argument("--t0", type=float, required=True, help="launch time (time.time()) of the run")
    k.add_argument("--at", required=True, help="kill times in seconds after --t0, e.g. 15,30,45")
    k.add_argument("--ranks", default="1", help="local ranks to kill, in rotation (default 1)")
    k.add_argument("--log", required=True, help="the step log of the run")
    k.add_argument("--out", required=True, help="CSV written with one line per kill")

    s = sub.add_parser("summary", help="summarise a run's step log and kills as JSON")
    s.add_argument("--log", required=True)
    s.add_argument("--kills", help="the kill driver's CSV (absent: a run without kills)")
    s.add_argument("--t0", type=float, required=True, help="launch time (time.time())")
    s.add_argument("--t-end", type=float, required=True, help="exit time (time.time())")
    s.add_argument("--out", required=True)
    return p.parse_args()


# --- train ---------------------------------------------------------------------------------------


def train(args):
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    import torch.nn.functional as F

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from ddp_peer import MODELS, load_train, shard

    t_imported = time.time()
    torch.set_num_threads(args.threads)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    t_group = time.time()

    x, y = load_train(args.data_dir, args.mean, args.std)
    n = x.shape[0]
    t_data = time.time()

    torch.manual_seed(args.seed)
    model = MODELS[args.model]()
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    gen = torch.Generator().manual_seed(args.seed)
    step, cursor, epoch = 0, 0, 0
    perm = torch.randperm(n, generator=gen)
    if os.path.exists(args.checkpoint):
        # Every attempt starts here, so the file is the one the last attempt's rank 0 renamed
        # into place: no rank of this attempt writes before all have passed the barrier below.
        state = torch.load(args.checkpoint)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        step, cursor, epoch, perm = state["step"], state["cursor"], state["epoch"], state["perm"]
        gen.set_state(state["generator"])
    ddp = nn.parallel.DistributedDataParallel(model)  # broadcasts rank 0's weights
    dist.barrier()
    t_ready = time.time()
    resume = step

    log = None
    if rank == 0:
        log = open(args.log, "a", buffering=1)
        if log.tell() == 0:
            log.write("step,time\n")
        restart = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
        log.write(
            f"# attempt {restart} resume {resume} launch {T_LAUNCH:.6f} imported {t_imported:.6f}"
            f" group {t_group:.6f} data {t_data:.6f} ready {t_ready:.6f}\n"
        )

    while step < args.steps:
        if cursor == n:  # new epoch, new permutation
            perm, cursor, epoch = torch.randperm(n, generator=gen), 0, epoch + 1
        batch = min(args.global_batch, n - cursor)
        begin, count = shard(batch, world, rank)
        idx = perm[cursor + begin : cursor + begin + count]
        cursor += batch
        xb, yb = x.index_select(0, idx), y.index_select(0, idx)
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(ddp(xb), yb).backward()
        opt.step()
        step += 1
        if rank == 0:
            log.write(f"{step},{time.time():.6f}\n")
            if step % args.checkpoint_every == 0 or step == args.steps:
                state = {
                    "model": model.state_dict(),
                    "optimizer": opt.state_dict(),
                    "step": step,
                    "cursor": cursor,
                    "epoch": epoch,
                    "perm": perm,
                    "generator": gen.get_state(),
                }
                tmp = args.checkpoint + ".tmp"
                torch.save(state, tmp)
                os.replace(tmp, args.checkpoint)
    dist.barrier()
    if log:
        log.close()
    dist.destroy_process_group()
    return 0


# --- kill ----------------------------------------------------------------------------------------


class StepLog:
    """A step log read as it grows: attempts is a list of dicts with the marker's fields (attempt,
    resume, launch, imported, group, data, ready) and steps, a list of (step, time). Only whole
    lines are read, so a line being written (or cut short by a kill) is never half-parsed."""

    def __init__(self, path):
        self.path, self.offset, self.attempts = path, 0, []

    def update(self):
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                chunk = f.read()
        except FileNotFoundError:
            return self.attempts
        end = chunk.rfind(b"\n") + 1
        self.offset += end
        for line in chunk[:end].decode().splitlines():
            if line.startswith("# attempt"):
                words = line[2:].split()
                marker = {words[i]: float(words[i + 1]) for i in range(0, len(words) - 1, 2)}
                marker["attempt"], marker["resume"] = int(marker["attempt"]), int(marker["resume"])
                marker["steps"] = []
                self.attempts.append(marker)
            elif line[:1].isdigit() and self.attempts:
                step, t = line.split(",")
                self.attempts[-1]["steps"].append((int(step), float(t)))
        return self.attempts


def children(pid):
    """Live (not zombie) child processes of `pid`, as {pid: its LOCAL_RANK or None}."""
    found = {}
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    kids = []
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children") as f:
                kids += [int(c) for c in f.read().split()]
        except OSError:
            continue
    for kid in kids:
        if not alive(kid):
            continue
        try:
            with open(f"/proc/{kid}/environ", "rb") as f:
                env = dict(kv.split(b"=", 1) for kv in f.read().split(b"\0") if b"=" in kv)
        except OSError:
            continue  # exited while being read
        rank = env.get(b"LOCAL_RANK")
        found[kid] = int(rank) if rank is not None else None
    return found


def alive(pid):
    """Whether `pid` exists and is not a zombie (a dead worker the agent has not reaped yet)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
        # The command name, in parentheses, may hold spaces: the state follows the last ')'.
        return stat[stat.rindex(")") + 2] != "Z"
    except (OSError, ValueError):
        return False


def kill(args):
    schedule = [float(a) for a in args.at.split(",") if a]
    ranks = [int(r) for r in args.ranks.split(",")]
    poll_s = 0.02
    log = StepLog(args.log)
    with open(args.out, "w", buffering=1) as out:
        out.write("kill,scheduled_s,time,pid,local_rank,old_gone,new_started\n")
        for i, at in enumerate(schedule):
            while time.time() < args.t0 + at:
                if not alive(args.agent_pid):
                    return 0
                time.sleep(min(0.1, max(0.0, args.t0 + at - time.time())))
            # Wait for the attempt running to have completed a step, and for the group to have
            # been restarted since the previous kill (its marker is written before its first step).
            while True:
                if not alive(args.agent_pid):
                    return 0
                attempts = log.update()
                if len(attempts) > i and attempts[-1]["steps"]:
                    break
                time.sleep(poll_s)
            rank = ranks[i % len(ranks)]
            workers = children(args.agent_pid)
            victims = [pid for pid, r in workers.items() if r == rank]
            if not victims:
                print(f"elastic_peer kill: no worker of local rank {rank} among the agent's"
                      f" children {workers}", file=sys.stderr)
                return 1
            t_kill = time.time()
            os.kill(victims[0], signal.SIGKILL)
            # Follow the agent: when the old workers are all gone (exited by themselves or
            # stopped by the agent), and when the first of the new ones appears.
            old, t_gone, t_new = set(workers), None, None
            while t_new is None and alive(args.agent_pid):
                now = children(args.agent_pid)
                if t_gone is None and not old & set(now):
                    t_gone = time.time()
                if set(now) - old:
                    t_new = time.time()
                    t_gone = t_gone or t_new
                time.sleep(poll_s)
            out.write(f"{i + 1},{at},{t_kill:.6f},{victims[0]},{rank},"
                      f"{t_gone or 0:.6f},{t_new or 0:.6f}\n")
    return 0


# --- summary -------------------------------------------------------------------------------------


def summary(args):
    attempts = StepLog(args.log).update()
    kills = []
    if args.kills:
        with open(args.kills) as f:
            kills = list(csv.DictReader(f))
    result = {"wall_s": args.t_end - args.t0, "attempts": len(attempts), "kills": []}
    steps = [s for a in attempts for s in a["steps"]]
    result["steps"] = max((s for s, _ in steps), default=0)
    result["step_lines"] = len(steps)
    if attempts and attempts[0]["steps"]:
        result["first_step_s"] = attempts[0]["steps"][0][1] - args.t0
        result["last_step_s"] = steps[-1][1] - args.t0
    for k in kills:
        t_kill = float(k["time"])
        before = [a for a in attempts if a["launch"] < t_kill]
        after = [a for a in attempts if a["launch"] > t_kill]
        killed = before[-1] if before else None
        restarted = next((a for a in after if a["steps"]), None)
        entry = {"at_s": t_kill - args.t0, "scheduled_s": float(k["scheduled_s"]),
                 "local_rank": int(k["local_rank"])}
        if killed is None or restarted is None:
            entry["error"] = "no restarted attempt completed a step after this kill"
            result["kills"].append(entry)
            continue
        reached = max((s for s, _ in killed["steps"]), default=killed["resume"])
        t_first = restarted["steps"][0][1]
        entry.update({
            "recovery_s": t_first - t_kill,
            "reached": reached,
            "resumed_from": restarted["resume"],
            "redone_steps": reached - restarted["resume"],
            "restarts": len([a for a in after if a["launch"] < restarted["launch"]]) + 1,
            # The phases of the recovery, each from the kill:
            "old_workers_gone_s": float(k["old_gone"]) - t_kill if float(k["old_gone"]) else None,
            "new_workers_started_s":
                float(k["new_started"]) - t_kill if float(k["new_started"]) else None,
            "python_started_s": restarted["launch"] - t_kill,
            "torch_imported_s": restarted["imported"] - t_kill,
            "group_formed_s": restarted["group"] - t_kill,
            "data_loaded_s": restarted["data"] - t_kill,
            "ready_s": restarted["ready"] - t_kill,
        })
        result["kills"].append(entry)
    recoveries = [k["recovery_s"] for k in result["kills"] if "recovery_s" in k]
    if recoveries:
        result["recovery_median_s"] = statistics.median(recoveries)
        result["recovery_max_s"] = max(recoveries)
        result["redone_steps"] = sum(k["redone_steps"] for k in result["kills"] if "recovery_s" in k)
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    os.replace(tmp, args.out)
    return 0


def main():
    args = parse_args()
    return {"train": train, "kill": kill, "summary": summary}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
