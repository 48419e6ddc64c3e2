#!/usr/bin/env python3
"""How fast each CPU runs right now, side by side.

    docs/lab/restrict/cpuspeed.py            # 10 rounds of 0.5 s on CPUs 0 and 1
    docs/lab/restrict/cpuspeed.py 20 0 1     # rounds, then the CPUs

One process per CPU, pinned to it, counts loop iterations for half a second,
all CPUs at the same time; each round prints every CPU's count and its ratio
to the first CPU's. On a guest whose host runs other load, one CPU can run
at half the other's speed for seconds at a time with no steal time reported
to the guest. A lock whose acquisitions follow which vCPUs run (any lock
with concurrency restriction, sync.Mutex included) then sees the vCPUs of
the slow CPU take fewer: compare a fairness cell of pvbench with the ratio
printed just before and after it.
"""
import multiprocessing as mp
import os
import sys
import time

ROUND = 0.5  # seconds per round


def count(cpu, start, out):
    os.sched_setaffinity(0, {cpu})
    while time.perf_counter() < start:
        pass
    end, n = start + ROUND, 0
    while time.perf_counter() < end:
        n += 1
    out.put((cpu, n))


def main(argv):
    rounds = int(argv[0]) if argv else 10
    cpus = [int(c) for c in argv[1:]] or [0, 1]
    allowed = os.sched_getaffinity(0)
    for c in cpus:
        if c not in allowed:
            sys.exit(f"cpuspeed: CPU {c} is not in this process's affinity set {sorted(allowed)}")
    print("round  " + "  ".join(f"cpu{c:<9}" for c in cpus) + "  ratios to cpu%d" % cpus[0])
    for r in range(rounds):
        out = mp.Queue()
        start = time.perf_counter() + 0.05
        procs = [mp.Process(target=count, args=(c, start, out)) for c in cpus]
        for p in procs:
            p.start()
        counts = dict(out.get() for _ in procs)
        for p in procs:
            p.join()
        base = counts[cpus[0]]
        ratios = "  ".join(f"{counts[c] / base:.2f}" for c in cpus[1:])
        print(f"{r:5}  " + "  ".join(f"{counts[c]:<12}" for c in cpus) + "  " + ratios)


if __name__ == "__main__":
    main(sys.argv[1:])
