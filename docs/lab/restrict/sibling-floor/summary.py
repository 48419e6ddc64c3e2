#!/usr/bin/env python3
"""Pools the sibling floor's alternated runs (r1.json ... r10.json, each the
rows of alternate.sh's files, keyed by <build>-<workload>-<round>) and
prints, per workload, factor and PV lock, the lock's throughput over
sync.Mutex's in the same run and the lock's max/min, as median [range] n.

The builds, by the name they have in the files:

  base   the sibling window with its floor at 64 polls (b086fef)
  var    a floor of 16384/n^2 polls, at most 1024, at every factor n
         (so 1024 at 2x too), beside any runnable sibling
  var2   the same floor, applied only while two siblings or more are
         queued for the CPU
  var3   var2 with no floor below 3x (23a3c32)
  built  var3, as a binary, in r9 (against var4)
  var4   no floor below 3x, applied beside any runnable sibling: as built
         (7063581)

var2, var3, built and var4 run the same code at 3x-4x up to the
two-siblings rule, which r9 measured as no difference; at 2x var3 and
var4 run base's code. r10 is pv-qspin (with stealing) beside sync.Mutex
on ebizzy and dbench at 3x-4x, base and var4, 20 rounds at normal
priority (/tmp/alt/BUILD -workload W -oc 3,4 -runs 1 -rounds 1
-locks pv-qspin,sync.Mutex).

  python3 summary.py            # every file
  python3 summary.py r9         # some
"""
import collections
import json
import statistics
import sys
from pathlib import Path

here = Path(__file__).parent
names = sys.argv[1:] or sorted(p.stem for p in here.glob("r*.json"))
ratio = collections.defaultdict(list)
spread = collections.defaultdict(list)
for name in names:
    for key, rows in json.loads((here / f"{name}.json").read_text()).items():
        build, workload, _ = key.split("-")
        mutex = {x["overcommit"]: x["ops_per_sec"] for x in rows if x["lock"] == "sync.Mutex"}
        for x in rows:
            k = (workload, x["overcommit"], x["lock"], build)
            spread[k].append(x["fairness_max_min"])
            if x["lock"] != "sync.Mutex":
                ratio[k].append(x["ops_per_sec"] / mutex[x["overcommit"]])


def fmt(v):
    if not v:
        return "-"
    v = sorted(v)
    return f"{statistics.median(v):.2f} [{v[0]:.2f}-{v[-1]:.2f}] {len(v)}"


builds = [b for b in ("base", "var", "var2", "var3", "built", "var4") if any(k[3] == b for k in spread)]
print("÷ sync.Mutex, then max/min; median [range] samples")
print("cell".ljust(38) + "".join(b.ljust(24) for b in builds))
for cell in sorted({k[:3] for k in spread}, key=lambda c: (c[0], c[1], c[2])):
    w, oc, lock = cell
    if lock != "sync.Mutex":
        print(f"{w} {oc}x {lock}".ljust(38) + "".join(fmt(ratio[cell + (b,)]).ljust(24) for b in builds))
    print(f"{w} {oc}x {lock} max/min".ljust(38) + "".join(fmt(spread[cell + (b,)]).ljust(24) for b in builds))
