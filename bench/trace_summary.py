#!/usr/bin/env python3
"""What a Chrome trace of training steps says about where their time goes: a trace written by
a transient worker (TRANSIENT_TRACE_STEPS, src/transient/train/step_trace.h) or by the DDP peer
(bench/ddp_gpu_peer.py --trace), both PyTorch profiler (Kineto) traces.

  bench/trace_summary.py TRACE.json [TRACE.json ...] [--top 15]

For each trace, per traced step (the "transient::step" or "peer::step" ranges): its wall time,
the CPU operators run (top-level ones: those inside no other operator), the CUDA kernels
launched and their summed GPU time, the CUDA runtime calls (launches, copies, synchronisations)
and the CPU's time blocked in synchronisations; then, over all traced steps, the top operators
by count and by self time, and the top kernels by GPU time. Comparing two traces of the same
model shows which side launches more work, and where the CPU waits.
"""

import argparse
import collections
import json


def load(path):
    with open(path) as f:
        return json.load(f)["traceEvents"]


def summarise(path, top):
    events = [e for e in load(path) if e.get("ph") == "X"]
    steps = sorted((e for e in events if e.get("name") in ("transient::step", "peer::step")
                    and e.get("cat") == "user_annotation"), key=lambda e: e["ts"])
    print(f"== {path}: {len(steps)} step(s)")
    ops_all, kernels_all = collections.Counter(), collections.Counter()
    op_time, kernel_time = collections.Counter(), collections.Counter()
    for step in steps:
        begin, end = step["ts"], step["ts"] + step["dur"]
        inside = [e for e in events if begin <= e["ts"] < end]
        cpu_ops = sorted((e for e in inside if e.get("cat") == "cpu_op"), key=lambda e: e["ts"])
        top_level, reach = [], -1.0
        for e in cpu_ops:
            if e["ts"] >= reach:
                top_level.append(e)
                reach = e["ts"] + e["dur"]
        runtime = [e for e in inside if e.get("cat") in ("cuda_runtime", "cuda_driver")]
        launches = [e for e in runtime if "Launch" in e["name"]]
        syncs = [e for e in runtime if "Synchronize" in e["name"] or "EventSynchronize" in e["name"]]
        copies = [e for e in runtime if "Memcpy" in e["name"]]
        # Kernels belong to the step whose launches they follow: matched by correlation id.
        correlations = {e["args"].get("correlation") for e in runtime if "args" in e}
        kernels = [e for e in events if e.get("cat") == "kernel"
                   and e.get("args", {}).get("correlation") in correlations]
        gpu_s = sum(e["dur"] for e in kernels) / 1e6
        print(f"  step: {step['dur'] / 1e3:.2f} ms wall; {len(top_level)} top-level operators "
              f"({len(cpu_ops)} in all); {len(kernels)} kernels, {1e3 * gpu_s:.2f} ms of GPU; "
              f"{len(launches)} launches; {len(copies)} memcpy calls; {len(syncs)} syncs "
              f"blocking {sum(e['dur'] for e in syncs) / 1e3:.2f} ms")
        for e in top_level:
            ops_all[e["name"]] += 1
        for e in cpu_ops:
            op_time[e["name"]] += e["dur"]
        for e in kernels:
            kernels_all[e["name"][:90]] += 1
            kernel_time[e["name"][:90]] += e["dur"]
        phases = [e for e in inside if e.get("cat") == "user_annotation" and e is not step]
        if phases:
            print("    " + ", ".join(f"{e['name'].split('::')[-1]} {e['dur'] / 1e3:.2f} ms"
                                     for e in sorted(phases, key=lambda e: e["ts"])))
    n = max(1, len(steps))
    print(f"  top-level operators per step (count): " +
          ", ".join(f"{name} {count / n:g}" for name, count in ops_all.most_common(top)))
    print(f"  operators by CPU time per step (inclusive, ms): " +
          ", ".join(f"{name} {t / n / 1e3:.2f}" for name, t in op_time.most_common(top)))
    print(f"  kernels by GPU time per step (ms, count):")
    for name, t in kernel_time.most_common(top):
        print(f"    {t / n / 1e3:7.3f} {kernels_all[name] / n:5g}  {name}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("traces", nargs="+")
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    for path in args.traces:
        summarise(path, args.top)


if __name__ == "__main__":
    main()
