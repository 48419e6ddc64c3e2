"""max/min at 16x and 128x against the length of the run.

runs16/ and runs128/ hold one pvbench JSON file per run length, workload and
pass (d<length>-<workload>-<pass>.json, one run per lock, the locks taking
turns); halves16.txt and halves128.txt the same kind of runs by the probe in
halves.diff, which also notes each vCPU's count halfway through a run, and
prints max/min over the first half, the second half and the whole.

    python3 docs/lab/restrict/window/summary.py
"""
import collections
import glob
import json
import os
import statistics

HERE = os.path.dirname(os.path.abspath(__file__))
LOCKS = ("pv-qspin", "pv-ticket", "pv-qspin-nosteal", "sync.Mutex")


def lengths(runs):
    spread = collections.defaultdict(list)
    ratio = collections.defaultdict(list)
    worst = collections.defaultdict(list)
    for f in sorted(glob.glob(os.path.join(HERE, runs, "d*.json"))):
        d, w, _ = os.path.basename(f)[:-5].split("-")
        rows = json.load(open(f))
        mutex = [r["ops_per_sec"] for r in rows if r["lock"] == "sync.Mutex"][0]
        for r in rows:
            k = (w, r["overcommit"], r["lock"], d[1:])
            spread[k].append(r["fairness_max_min"])
            ratio[k].append(r["ops_per_sec"] / mutex)
            worst[k].append(r["lat_max_ns"] / 1e6)
    ds = sorted({k[3] for k in spread}, key=lambda s: float(s[:-1]))
    print(f"{runs}: max/min of each run [throughput / sync.Mutex, median] {{worst acquisition, ms}}")
    for w, oc in sorted({k[:2] for k in spread}):
        for lock in LOCKS:
            cells = []
            for d in ds:
                k = (w, oc, lock, d)
                if spread[k]:
                    cells.append(f"{d}: " + " ".join(f"{x:.2f}" for x in spread[k])
                                 + f" [{statistics.median(ratio[k]):.2f}]"
                                 + " {" + " ".join(f"{x:.0f}" for x in worst[k]) + "}")
            print(f"  {w} {oc}x {lock:17} " + " | ".join(cells))


def halves(name):
    path = os.path.join(HERE, name)
    if not os.path.exists(path):
        return
    cells = collections.defaultdict(list)
    for line in open(path):
        f = line.split()
        # <length> SNAP <workload> <lock> <factor> first A second B whole C
        cells[(f[0], f[2], f[4], f[3])].append((float(f[6]), float(f[8]), float(f[10])))
    print(f"{name}: max/min over the first half / the second half / the whole run")
    for k in sorted(cells, key=lambda k: (float(k[0][:-1]), k[1], k[2], LOCKS.index(k[3]))):
        print(f"  {k[0]:3} {k[1]} {k[2]} {k[3]:17} " + "  ".join("%.2f / %.2f / %.2f" % v for v in cells[k]))


if __name__ == "__main__":
    lengths("runs16")
    if glob.glob(os.path.join(HERE, "runs128", "*.json")):
        print()
        lengths("runs128")
    print()
    halves("halves16.txt")
    print()
    halves("halves128.txt")
