"""The serial ceiling: each lock's throughput on two CPUs at 1x-4x divided
by pv-qspin's with one vCPU alone on one CPU in the same round (run.sh).

    python3 docs/lab/restrict/serial/summary.py [DIR]

DIR defaults to the stored rounds, serial/runs.

A workload whose every operation is inside the lock cannot run faster on
two CPUs than one vCPU runs it alone: that is its ceiling, and a lock's
ratio to it is how much of it the lock keeps under overcommit.
"""
import collections
import glob
import json
import os
import statistics
import sys


def main(d):
    for w in ("dbench", "ebizzy"):
        cells = collections.defaultdict(list)
        for one in sorted(glob.glob(os.path.join(d, f"one-{w}-*.json"))):
            two = one.replace(f"one-{w}-", f"two-{w}-")
            if not os.path.exists(two):
                continue
            alone = {r["lock"]: r["ops_per_sec"] for r in json.load(open(one))}
            ceiling = alone["pv-qspin"]
            cells["one vCPU alone, pv-qspin, M ops/s"].append(ceiling / 1e6)
            cells["one vCPU alone, sync.Mutex, M ops/s"].append(alone["sync.Mutex"] / 1e6)
            for r in json.load(open(two)):
                key = f"{r['lock']} {r['overcommit']}x / ceiling"
                cells[key].append(r["ops_per_sec"] / ceiling)
        n = len(cells["one vCPU alone, pv-qspin, M ops/s"])
        print(f"{w}, {n} rounds: median [min-max]")
        for k in sorted(cells, key=lambda k: (not k.startswith("one"), k.split()[-3:-2], k)):
            v = cells[k]
            print(f"  {k:40s} {statistics.median(v):6.2f} [{min(v):.2f}-{max(v):.2f}]")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "runs"))
