#!/usr/bin/env python3
"""Pools alternate.sh's and busy.sh's runs of the swap experiment.

For each workload, overcommit, lock and build: throughput over sync.Mutex's
in the same run, and max/min, as median [min-max] and the number of runs,
pooled over the alternated batches r1-r4 (r4 is 2x, pv-qspin only); then the same for the busy-loop
batch (busy1), with sync.Mutex's own max/min beside it.

    python3 docs/lab/restrict/swap-qspin/summary.py
"""
import collections
import glob
import json
import os
import statistics

HERE = os.path.dirname(os.path.abspath(__file__))
BUILDS = ["head", "sparelast", "noswap"]


def fmt(v):
    if not v:
        return "-"
    v = sorted(v)
    return f"{statistics.median(v):.2f} [{v[0]:.2f}-{v[-1]:.2f}] {len(v)}"


def pool(dirs):
    ratio = collections.defaultdict(list)
    spread = collections.defaultdict(list)
    for d in dirs:
        for f in glob.glob(os.path.join(HERE, d, "*.json")):
            build, work, _ = os.path.basename(f)[:-5].split("-")
            rows = json.load(open(f))
            mutex = {r["overcommit"]: r["ops_per_sec"] for r in rows if r["lock"] == "sync.Mutex"}
            for r in rows:
                key = (work, r["overcommit"], r["lock"], build)
                spread[key].append(r["fairness_max_min"])
                if r["lock"] != "sync.Mutex":
                    ratio[key].append(r["ops_per_sec"] / mutex[r["overcommit"]])
    return ratio, spread


def table(title, dirs):
    ratio, spread = pool(dirs)
    print(title)
    print("cell".ljust(34) + " | ".join(b.ljust(24) for b in BUILDS))
    for cell in sorted({k[:3] for k in spread}):
        work, oc, lock = cell
        name = f"{work} {oc}x {lock}"
        if lock != "sync.Mutex":
            print(name.ljust(34) + " | ".join(fmt(ratio[cell + (b,)]).ljust(24) for b in BUILDS))
        print((name + " max/min").ljust(34) + " | ".join(fmt(spread[cell + (b,)]).ljust(24) for b in BUILDS))
    print()


table("alternated, unloaded (r1-r4): throughput / sync.Mutex, max/min", ["r1", "r2", "r3", "r4"])
table("4x with a busy loop on CPU 1 (busy1)", ["busy1"])
