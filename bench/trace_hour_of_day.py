#!/usr/bin/env python3
"""Does the hour of day tell more about a spot market's next tick than the age of its period?

For each availability trace of ../shared/data/spot-traces/aws-availability-2022-10, the chance
that the availability of a tick holds into the next is fitted as `market-aware`'s prior fits it
(by availability and age in ticks, ages from 16 pooled; sim/availability_prior.h), and again per
hour-of-day bin (2, 4 or 8 bins of the trace's day, shrunk towards the age-only chance by five
pseudo-observations). Each is scored on held-out data: the mean log-likelihood of the next tick
over every 3-day stretch, fitted on the rest of the trace. Higher is better.

Usage: bench/trace_hour_of_day.py [TRACE_DIR]   (docs/scenarios.md, "Deadline policies")
"""
import glob
import json
import math
import os
import sys
from collections import defaultdict

MAX_AGE = 16
HELD_OUT_TICKS = 3 * 144  # 3 days of 10-minute ticks
SHRINK = 5.0


def hour_bin(tick, bins):
    return (tick // 6 % 24) * bins // 24


def fit(ticks, held_from, held_to, bins):
    """(kind, age, bin) -> [transitions seen, of which the kind held]; bin -1 pools the day."""
    counts = defaultdict(lambda: [0.0, 0.0])
    age = 0
    for i in range(1, len(ticks)):
        if held_from <= i - 1 < held_to or held_from <= i < held_to:
            age = 0
            continue
        kind = ticks[i - 1]
        key_age = min(age, MAX_AGE)
        held = ticks[i] == kind
        for b in (hour_bin(i - 1, bins), -1):
            counts[(kind, key_age, b)][0] += 1
            counts[(kind, key_age, b)][1] += held
        age = age + 1 if held else 0
    return counts


def chance(counts, kind, age, b, bins):
    seen, held = counts.get((kind, age, -1), (0.0, 0.0))
    pooled = (held + 0.5) / (seen + 1.0)
    if bins > 1:
        seen_b, held_b = counts.get((kind, age, b), (0.0, 0.0))
        pooled = (held_b + SHRINK * pooled) / (seen_b + SHRINK)
    return min(max(pooled, 1e-3), 1 - 1e-3)


def score(ticks, bins):
    total, count = 0.0, 0
    for start in range(0, len(ticks), HELD_OUT_TICKS):
        end = min(len(ticks), start + HELD_OUT_TICKS)
        counts = fit(ticks, start, end, bins)
        age = 0
        for i in range(start + 1, end):
            kind = ticks[i - 1]
            p = chance(counts, kind, min(age, MAX_AGE), hour_bin(i - 1, bins), bins)
            held = ticks[i] == kind
            total += math.log(p if held else 1 - p)
            count += 1
            age = age + 1 if held else 0
    return total / count


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    default = os.path.join(here, "..", "..", "shared", "data", "spot-traces",
                           "aws-availability-2022-10")
    folder = sys.argv[1] if len(sys.argv) > 1 else default
    files = sorted(glob.glob(os.path.join(folder, "*.json")))
    if not files:
        sys.exit(f"trace_hour_of_day: no *.json trace in {folder}")
    print(f"{'trace':<20} {'age only':>9} {'2 bins':>9} {'4 bins':>9} {'8 bins':>9}")
    for path in files:
        with open(path) as f:
            ticks = json.load(f)["data"]
        scores = [score(ticks, bins) for bins in (1, 2, 4, 8)]
        name = os.path.basename(path)[:-5]
        print(f"{name:<20} " + " ".join(f"{s:9.4f}" for s in scores))


if __name__ == "__main__":
    main()
