#!/usr/bin/env python3
"""Where the test phase's CPU goes: runs a command (by default `ctest --test-dir build -j4`) with
the kernel's process accounting on (acct(2), so as root), then prints the CPU of every program
(its processes summed, forked-but-not-exec'd children apart) and of the CTest tests that cost the
most (each process charged to the child of CTest it descends from). docs/benchmarks.md, "OpenMP's
spinning under CTest".

Usage: sudo bench/test_phase_cpu.py [--top N] [COMMAND...]
"""
import collections
import ctypes
import os
import re
import struct
import subprocess
import sys
import tempfile

# struct acct_v3 (linux/acct.h): 64 bytes; times are comp_t (13-bit mantissa, 3-bit base-8
# exponent) in AHZ = 100 ticks a second.
RECORD = struct.Struct("<BBHIIIIIIfHHHHHHHH16s")
AFORK = 0x01


def comp_t(value):
    return (value & 0x1FFF) << (3 * (value >> 13))


def read_records(path):
    data = open(path, "rb").read()
    for offset in range(0, len(data) - RECORD.size + 1, RECORD.size):
        f = RECORD.unpack_from(data, offset)
        if f[1] != 3:
            sys.exit(f"{path}: accounting record version {f[1]}; accepted: 3 (acct_v3)")
        yield {"pid": f[6], "ppid": f[7], "forked": bool(f[0] & AFORK),
               "cpu": (comp_t(f[10]) + comp_t(f[11])) / 100.0, "elapsed": f[9] / 100.0,
               "comm": f[18].split(b"\0")[0].decode(errors="replace")}


def main():
    args = sys.argv[1:]
    top = 20
    if args[:1] == ["--top"]:
        top, args = int(args[1]), args[2:]
    command = args or ["ctest", "--test-dir", "build", "-j4"]
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    with tempfile.NamedTemporaryFile(prefix="transient-acct-") as accounting:
        if libc.acct(accounting.name.encode()) != 0:
            sys.exit(f"acct: {os.strerror(ctypes.get_errno())}; process accounting needs root")
        try:
            run = subprocess.run(command, stdout=subprocess.PIPE, text=True)
        finally:
            libc.acct(None)
        records = list(read_records(accounting.name))
    sys.stdout.write(run.stdout)

    programs = collections.defaultdict(lambda: [0, 0.0])
    for r in records:
        entry = programs[r["comm"] + (" (forked)" if r["forked"] else "")]
        entry[0] += 1
        entry[1] += r["cpu"]
    print(f"\nCPU {sum(r['cpu'] for r in records):.1f} s in {len(records)} processes; by program:")
    for name, (count, cpu) in sorted(programs.items(), key=lambda item: -item[1][1])[:top]:
        print(f"{cpu:8.1f} s {count:5d}  {name}")

    # A test is a child of CTest; CTest's report gives each test's wall time, which names it.
    ctest = [r["pid"] for r in records if r["comm"] == "ctest"]
    if not ctest:
        return run.returncode
    by_pid = {r["pid"]: r for r in records}

    def test_of(record):
        for _ in range(64):
            if record["ppid"] == ctest[-1]:
                return record["pid"]
            if record["ppid"] not in by_pid:
                return None
            record = by_pid[record["ppid"]]
        return None

    per_test = collections.defaultdict(float)
    for r in records:
        per_test[test_of(r)] += r["cpu"]
    walls = {m.group(1): float(m.group(2)) for m in re.finditer(
        r"Test +#\d+: (\S+) .*? ([\d.]+) sec", run.stdout)}
    print(f"\nby test (named by the nearest wall time CTest reported; "
          f"{per_test.pop(None, 0):.1f} s charged to none):")
    for pid, cpu in sorted(per_test.items(), key=lambda item: -item[1])[:top]:
        elapsed = by_pid[pid]["elapsed"]
        name = min(walls, key=lambda test: abs(walls[test] - elapsed)) if walls else "?"
        print(f"{cpu:8.1f} s CPU {elapsed:7.1f} s wall  {name}")
    return run.returncode


if __name__ == "__main__":
    sys.exit(main())
