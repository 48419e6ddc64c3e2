"""Pools alternated pvbench runs (alternate.sh) and prints them side by side.

A run is the JSON rows one build wrote for one workload in one round, keyed
"<build>-<workload>-<round>". For each workload, factor, lock and build,
table prints the lock's throughput over sync.Mutex's in the same run and
the lock's max/min, as median [min-max] and the number of runs. paired
compares two builds round by round: build b's ratio over build a's from
the same round, and in how many rounds b came out ahead.
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
        for r in rows:
            spread[(workload, r["overcommit"], r["lock"], build)].append(r["fairness_max_min"])
        for (oc, lock), v in ratios(rows).items():
            ratio[(workload, oc, lock, build)].append(v)
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


def paired(dirs, a, b):
    """Prints, per workload, factor and lock, b's ratio to sync.Mutex over
    a's in the same round of the same alternate.sh directory: the median,
    the geometric mean and the rounds b won."""
    quot = collections.defaultdict(list)
    for path in dirs:
        by = collections.defaultdict(dict)  # (workload, round) -> build -> rows
        for key, rows in from_dir(path):
            build, workload, rnd = key.split("-")
            by[(workload, rnd)][build] = rows
        for (workload, _), builds in by.items():
            if a in builds and b in builds:
                ra, rb = ratios(builds[a]), ratios(builds[b])
                for cell in rb.keys() & ra.keys():
                    quot[(workload,) + cell].append(rb[cell] / ra[cell])
    print(f"{b} over {a}, paired by round")
    for cell in sorted(quot):
        q = quot[cell]
        wins = sum(x > 1 for x in q)
        print(f"{cell[0]} {cell[1]}x {cell[2]}".ljust(38)
              + f"median {statistics.median(q):.3f}  geomean {statistics.geometric_mean(q):.3f}  wins {wins}/{len(q)}")


def ratios(rows):
    """Each lock's throughput over sync.Mutex's, keyed (factor, lock)."""
    mutex = {r["overcommit"]: r["ops_per_sec"] for r in rows if r["lock"] == "sync.Mutex"}
    return {(r["overcommit"], r["lock"]): r["ops_per_sec"] / mutex[r["overcommit"]]
            for r in rows if r["lock"] != "sync.Mutex"}
