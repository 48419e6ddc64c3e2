"""Pools alternated pvbench runs (alternate.sh) and prints them side by side.

A run is the JSON rows one build wrote for one workload in one round, keyed
"<build>-<workload>-<round>". For each workload, factor, lock and build,
table prints the lock's throughput over sync.Mutex's in the same run and
the lock's max/min, as median [min-max] and the number of runs.
"""
import collections
import glob
import json
import os
import statistics


def from_dir(path):
    """The runs of one alternate.sh output directory."""
    for f in sorted(glob.glob(os.path.join(path, "*.json"))):
        yield os.path.basename(f)[:-5], json.load(open(f))


def from_merged(path):
    """The runs of one merged file: {"<build>-<workload>-<round>": rows}."""
    yield from json.load(open(path)).items()


def pool(runs):
    """Ratios to sync.Mutex and max/min, keyed (workload, factor, lock, build)."""
    ratio = collections.defaultdict(list)
    spread = collections.defaultdict(list)
    for key, rows in runs:
        build, workload, _ = key.split("-")
        mutex = {r["overcommit"]: r["ops_per_sec"] for r in rows if r["lock"] == "sync.Mutex"}
        for r in rows:
            k = (workload, r["overcommit"], r["lock"], build)
            spread[k].append(r["fairness_max_min"])
            if r["lock"] != "sync.Mutex":
                ratio[k].append(r["ops_per_sec"] / mutex[r["overcommit"]])
    return ratio, spread


def fmt(v):
    if not v:
        return "-"
    v = sorted(v)
    return f"{statistics.median(v):.2f} [{v[0]:.2f}-{v[-1]:.2f}] {len(v)}"


def table(runs, builds, width=24):
    """Prints the pooled runs, one column per build that has any."""
    ratio, spread = pool(runs)
    builds = [b for b in builds if any(k[3] == b for k in spread)]
    print("cell".ljust(38) + "".join(b.ljust(width) for b in builds))
    for cell in sorted({k[:3] for k in spread}):
        work, oc, lock = cell
        name = f"{work} {oc}x {lock}"
        if lock != "sync.Mutex":
            print(name.ljust(38) + "".join(fmt(ratio[cell + (b,)]).ljust(width) for b in builds))
        print((name + " max/min").ljust(38) + "".join(fmt(spread[cell + (b,)]).ljust(width) for b in builds))
