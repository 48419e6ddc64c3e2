#!/usr/bin/env python3
"""Pools the swap experiment's runs (alternate.sh, busy.sh).

For each workload, overcommit, lock and build: throughput over sync.Mutex's
in the same run, and max/min, as median [min-max] and the number of runs,
pooled over the alternated batches r1-r4 (r4 is 2x, pv-qspin only); then
the same for the busy-loop batch (busy1), with sync.Mutex's own max/min
beside it.

    python3 docs/lab/restrict/swap-qspin/summary.py
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import alternated  # noqa: E402

BUILDS = ["head", "sparelast", "noswap"]


def runs(dirs):
    for d in dirs:
        yield from alternated.from_dir(os.path.join(HERE, d))


print("alternated, unloaded (r1-r4): throughput / sync.Mutex, max/min")
alternated.table(runs(["r1", "r2", "r3", "r4"]), BUILDS)
print()
print("4x with a busy loop on CPU 1 (busy1)")
alternated.table(runs(["busy1"]), BUILDS)
