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
import sys
from pathlib import Path

here = Path(__file__).parent
sys.path.insert(0, str(here.parent))
import alternated  # noqa: E402

names = sys.argv[1:] or sorted(p.stem for p in here.glob("r*.json"))
runs = (run for name in names for run in alternated.from_merged(here / f"{name}.json"))
print("÷ sync.Mutex, then max/min; median [range] samples")
alternated.table(runs, ["base", "var", "var2", "var3", "built", "var4"])
