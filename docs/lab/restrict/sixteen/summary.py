#!/usr/bin/env python3
"""The 16x experiments of 2026-12-06: the tenure cap, alternated with the
code as built (runs/, written by ../alternate.sh), and what the FIFO locks
without restriction give at 16x (fifo16-*.json).

    python3 docs/lab/restrict/sixteen/summary.py
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import alternated  # noqa: E402

alternated.table(alternated.from_dir(os.path.join(HERE, "runs")), ["head", "ten30", "ten100", "ten300"], 22)

print("\n16x, 3 rounds of 1 s in one run: throughput ÷ sync.Mutex, max/min")
for w in ("dbench", "ebizzy", "lockloop"):
    rows = json.load(open(os.path.join(HERE, f"fifo16-{w}.json")))
    mutex = next(r for r in rows if r["lock"] == "sync.Mutex")
    for r in rows:
        print(f"  {w:9} {r['lock']:31} {r['ops_per_sec'] / mutex['ops_per_sec']:6.3f}  {r['fairness_max_min']:6.2f}")
