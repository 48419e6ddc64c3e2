#!/usr/bin/env python3
"""Turns by CPU time on a deep queue (README, "Turns by CPU time"):

  runs-scratch/  a scratch build (cpu-scratch.diff) with the turn's bounds
                 from the environment, alternated with the code before at
                 128x: cMINmMAX for PVLOCK_CPUMIN/PVLOCK_CPUMAX in µs of CPU
                 (a minimum enters past the cap, a maximum goes outside)
  runs/          the code as built (turncpu) against the code before (head),
                 128x, 4 rounds
  runs-4x/       the same at 2x and 4x, where no queue is deep, 6 rounds
  scale128-N     three runs of the lab's 128x row as built

    python3 docs/lab/restrict/turns/summary.py
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import alternated  # noqa: E402

for d, builds in (
    ("runs-scratch", ["head", "c200m1000", "c100m500", "c200", "cm1000", "cm500", "cm250", "cm100"]),
    ("runs", ["head", "turncpu"]),
    ("runs-4x", ["head", "turncpu"]),
):
    print(f"\n{d}")
    alternated.table(alternated.from_dir(os.path.join(HERE, d)), builds, 22)

print("\nthe lab's 128x row as built (3 rounds each): max/min, worst acquisition")
for i in (1, 2, 3):
    rows = json.load(open(os.path.join(HERE, f"scale128-{i}-rows.json")))
    print(f"  {i}: " + "   ".join(f"{r['lock']} {r['fairness_max_min']:.1f}, {r['lat_max_ns'] / 1e6:.0f} ms" for r in rows))
