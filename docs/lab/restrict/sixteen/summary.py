#!/usr/bin/env python3
"""The 16x and 128x experiments of 2026-12-06 (README, "Sixteen vCPUs per
CPU"): per-vCPU counts from the probe (pervcpu*.txt, pervcpu.diff), what
the FIFO locks without restriction give at 16x (fifo16-*.json), and the
turn rules alternated with the code as built (runs*/, written by
../alternate.sh; the builds are tenure.diff, turn.diff and turn2.diff
with the environment their names stand for).

    python3 docs/lab/restrict/sixteen/summary.py
"""
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import alternated  # noqa: E402


def field(words, key):
    for w in words:
        if w.startswith(key + "="):
            return float(w.split("=")[1].rstrip("ms"))
    return None


def pervcpu(name):
    """Acquisitions, CPU time and passive waits per vCPU, by workload and lock."""
    rows = [l.split() for l in open(os.path.join(HERE, name))]
    cells = {}
    for r in rows:
        cells.setdefault((r[0], r[1]), []).append(r)
    print(f"\n{name}: per vCPU, min / median / max")
    for (w, lock), rs in sorted(cells.items()):
        acq = [field(r, "acq") for r in rs]
        run = [field(r, "run") for r in rs]
        pas = [field(r, "passive") for r in rs]
        per = [a / p for a, p in zip(acq, pas) if p]

        def mm(v):
            return f"{min(v):.0f} / {statistics.median(v):.0f} / {max(v):.0f}"

        print(f"  {w:9} {lock:10} acquisitions {mm(acq):24} max/min {max(acq) / min(acq):6.1f}"
              f"  CPU ms {mm(run):14} passive waits {mm(pas):14} acquisitions per wait {mm(per)}")


for name in ("pervcpu-16x.txt", "pervcpu-128x.txt", "pervcpu-128x-turn.txt"):
    pervcpu(name)

print("\n16x, 3 rounds of 1 s in one run: throughput ÷ sync.Mutex, max/min")
for w in ("dbench", "ebizzy", "lockloop"):
    rows = json.load(open(os.path.join(HERE, f"fifo16-{w}.json")))
    mutex = next(r for r in rows if r["lock"] == "sync.Mutex")
    for r in rows:
        print(f"  {w:9} {r['lock']:31} {r['ops_per_sec'] / mutex['ops_per_sec']:6.3f}  {r['fairness_max_min']:6.2f}")

for d, builds in (
    ("runs", ["head", "ten30", "ten100", "ten300"]),
    ("runs-turn", ["head", "turn1000x0", "turn3000x0", "turn1000x3000"]),
    ("runs-128", ["head", "turn1000x0", "turn3000x0", "turn1000x3000", "tn4", "tn16", "tn4m3", "tm3", "tw1m3", "tw1", "tw300m1"]),
    ("runs-128e", ["head", "turn1000x3000"]),
):
    print(f"\n{d}")
    alternated.table(alternated.from_dir(os.path.join(HERE, d)), builds, 22)
