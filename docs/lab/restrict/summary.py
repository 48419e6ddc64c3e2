#!/usr/bin/env python3
"""The acceptance ratios of the concurrency-restriction tables.

    docs/lab/restrict/summary.py 1 2 3    # the invocations written by run.sh

For each table run.sh writes, prints the ratio each bar is about, one column
per invocation and the spread over them: Go's four Mutex benchmarks (median
ns/op of the 5 counts, divided by sync.Mutex's), the self-pinned threads,
the lab's ebizzy, dbench and lockloop at 1x-4x (throughput divided by
sync.Mutex's and by the lock's own 1x, pv-ticket by native-ticket, max/min
fairness), the 16x and 128x fairness rows (of 1 s runs, and of 8 s runs
where run.sh's long tables wrote them), the 4x rows with a host
load on one CPU (hostload.sh), and the CPUs' idle share (run.sh's idle tables).
"""
import json
import os
import re
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def load_rows(name, inv):
    path = os.path.join(HERE, f"{name}-{inv}-rows.json")
    if not os.path.exists(path):
        return None
    rows = json.load(open(path))
    return {(r["lock"], r["overcommit"]): r for r in rows}


def bench_medians(name, inv):
    """Median ns/op per benchmark name (without the -N suffix kept)."""
    vals = bench_rounds(name, inv)
    return vals and {k: statistics.median(v) for k, v in vals.items()}


def bench_rounds(name, inv):
    """ns/op per benchmark name, one value per count in file order: with
    run.sh's rounds of one count each, the k-th value is round k's."""
    path = os.path.join(HERE, f"{name}-{inv}.txt")
    if not os.path.exists(path):
        return None
    vals = {}
    for line in open(path):
        m = re.match(r"^(Benchmark\S+)\s+\d+\s+([\d.]+) ns/op", line)
        if m:
            vals.setdefault(m.group(1), []).append(float(m.group(2)))
    return vals


def spread(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return "-"
    return f"{min(xs):.2f}-{max(xs):.2f}" if len(xs) > 1 else f"{xs[0]:.2f}"


def line(label, xs):
    cells = "  ".join("-" if x is None else f"{x:7.2f}" for x in xs)
    print(f"  {label:<44} {cells}   [{spread(xs)}]")


def heavy(invs, length):
    """The 16x and 128x fairness rows, of 1 s runs (length "") or of 8 s
    runs (length "long")."""
    for wl in ("lockloop", "ebizzy", "dbench"):
        rows = [load_rows(f"scale16{length}-{wl}", i) for i in invs]
        for lock in ("pv-qspin", "pv-ticket", "pv-qspin-nosteal", "sync.Mutex"):
            line(f"16x {wl} {lock}", [r and r[(lock, 16)]["fairness_max_min"] for r in rows])
    rows = [load_rows(f"scale128{length}", i) for i in invs]
    for lock in ("pv-qspin", "pv-ticket", "pv-qspin-nosteal", "sync.Mutex"):
        line(f"128x lockloop {lock} max/min", [r and r[(lock, 128)]["fairness_max_min"] for r in rows])
        line(f"128x lockloop {lock} worst acquisition, ms", [r and r[(lock, 128)]["lat_max_ns"] / 1e6 for r in rows])


def main(invs):
    print("invocations:", " ".join(invs))
    print("\nGo's Mutex benchmarks, median ns/op / sync.Mutex (bar: pv-qspin <= 1.0, pv-ticket <= 1.5;")
    print("sync.Mutex-again: sync.Mutex run once more after the others, the A/A spread)")
    meds = [bench_medians("gomutex", i) for i in invs]
    for shape in ("mutex", "slack", "work", "workslack"):
        for cpu in ("2", "8"):
            for lock in ("pv-qspin", "pv-ticket", "pv-qspin-nosteal", "sync.Mutex-again"):
                xs = []
                for m in meds:
                    if not m:
                        xs.append(None)
                        continue
                    base = m.get(f"BenchmarkGoMutex/shape={shape}/lock=sync.Mutex-{cpu}")
                    v = m.get(f"BenchmarkGoMutex/shape={shape}/lock={lock}-{cpu}")
                    xs.append(v / base if base and v else None)
                line(f"{shape} -cpu {cpu} {lock}", xs)
    print("\nthe same paired by round: median over the rounds of the lock's ns/op / the mean of")
    print("sync.Mutex's and sync.Mutex-again's in the same round. Each count lands in one of the")
    print("host's modes (the work shapes: 55-60 or 85-100 ns/op, floor-atomic too), and a median of")
    print("the rounds' counts moves with how many fall in each; a round's pair shares its mode more often")
    rounds = [bench_rounds("gomutex", i) for i in invs]
    for shape in ("mutex", "slack", "work", "workslack"):
        for cpu in ("2", "8"):
            for lock in ("pv-qspin", "pv-ticket"):
                xs = []
                for r in rounds:
                    key = f"BenchmarkGoMutex/shape={shape}/lock=%s-{cpu}"
                    v, a, b = (r or {}).get(key % lock), (r or {}).get(key % "sync.Mutex"), (r or {}).get(key % "sync.Mutex-again")
                    if not (v and a and b) or not len(v) == len(a) == len(b):
                        xs.append(None)
                        continue
                    xs.append(statistics.median(x / ((y + z) / 2) for x, y, z in zip(v, a, b)))
                line(f"{shape} -cpu {cpu} {lock}", xs)
    print("\nthe host's hand-off to a halted waiter (kick's BenchmarkHandoff, one round trip = two")
    print("futex wake-ups), median µs per round trip, before and after Go's benchmarks")
    hand = [bench_medians("handoff", i) for i in invs]
    for case in ("same-cpu", "cross-cpu"):
        xs = []
        for m in hand:
            v = m and m.get(f"BenchmarkHandoff/{case}/futex-2")
            xs.append(v / 1000 if v else None)
        line(f"{case} futex round trip", xs)
    print("\nthe same, median ns/op / floor-atomic (one shared atomic add per operation, no lock):")
    print("at 1.00 a lock costs what moving one cache line between the CPUs costs")
    for shape in ("work", "workslack"):
        for cpu in ("2", "8"):
            for lock in ("pv-qspin", "pv-ticket", "sync.Mutex", "floor-none", "floor-none at -cpu 1"):
                xs = []
                for m in meds:
                    base = m and m.get(f"BenchmarkGoMutex/shape={shape}/lock=floor-atomic-{cpu}")
                    if lock == "floor-none at -cpu 1":  # the work on one CPU: what keeping all but one goroutine asleep gives
                        v = m and m.get(f"BenchmarkGoMutex/shape={shape}/lock=floor-none")
                    else:
                        v = m and m.get(f"BenchmarkGoMutex/shape={shape}/lock={lock}-{cpu}")
                    xs.append(v / base if base and v else None)
                line(f"{shape} -cpu {cpu} {lock}", xs)

    print("\nself-pinned threads, 4 per CPU: sync.Mutex ns/op / lock ns/op (bar >= 0.8)")
    meds = [bench_medians("pinned", i) for i in invs]
    for lock in ("pv-qspin", "pv-ticket"):
        for cpu in ("2", "8"):
            xs = []
            for m in meds:
                if not m:
                    xs.append(None)
                    continue
                base = next((v for k, v in m.items() if "lock=sync.Mutex" in k and k.endswith(f"-{cpu}")), None)
                v = next((v for k, v in m.items() if f"lock={lock}" in k and k.endswith(f"-{cpu}")), None)
                xs.append(base / v if base and v else None)
            line(f"{lock} -cpu {cpu}", xs)

    for wl in ("ebizzy", "dbench", "lockloop"):
        rows = [load_rows(wl, i) for i in invs]
        print(f"\n{wl}")
        for oc in (1, 2, 3, 4):
            line(f"{oc}x pv-qspin / sync.Mutex", [r and r[("pv-qspin", oc)]["ops_per_sec"] / r[("sync.Mutex", oc)]["ops_per_sec"] for r in rows])
        for lock in ("pv-ticket", "pv-qspin-nosteal"):
            for oc in (2, 3, 4):
                line(f"{oc}x {lock} / its 1x", [r and r[(lock, oc)]["ops_per_sec"] / r[(lock, 1)]["ops_per_sec"] for r in rows])
        if wl != "lockloop":
            for oc in (2, 3, 4):
                line(f"{oc}x pv-ticket / native-ticket", [r and r[("pv-ticket", oc)]["ops_per_sec"] / r[("native-ticket", oc)]["ops_per_sec"] for r in rows])
        else:
            line("1x pv-qspin / native-qspin", [r and r[("pv-qspin", 1)]["ops_per_sec"] / r[("native-qspin", 1)]["ops_per_sec"] for r in rows])
            line("1x pv-ticket / native-ticket", [r and r[("pv-ticket", 1)]["ops_per_sec"] / r[("native-ticket", 1)]["ops_per_sec"] for r in rows])
            # The bar is on the lock's throughput itself; sync.Mutex's own
            # min/max over the same invocations is the host's part of it (a
            # host that ran everything a quarter faster in one invocation
            # moves both), and the lock's ratio to sync.Mutex in each run
            # takes the host out.
            def minmax(vals):
                vals = [v for v in vals if v]
                return min(vals) / max(vals) if vals else None

            for lock in ("pv-ticket", "pv-qspin-nosteal"):
                for oc in (2, 3, 4):
                    own = minmax([r and r[(lock, oc)]["ops_per_sec"] for r in rows])
                    host = minmax([r and r[("sync.Mutex", oc)]["ops_per_sec"] for r in rows])
                    rel = minmax([r and r[(lock, oc)]["ops_per_sec"] / r[("sync.Mutex", oc)]["ops_per_sec"] for r in rows])
                    if own is not None:
                        print(f"  {oc}x {lock} min/max over invocations: {own:.2f} (sync.Mutex's own {host:.2f}; ÷ sync.Mutex in each run {rel:.2f})")
        for lock in ("pv-qspin", "pv-ticket", "pv-qspin-nosteal", "sync.Mutex"):
            line(f"4x {lock} max/min", [r and r[(lock, 4)]["fairness_max_min"] for r in rows])
        # The CPUs' idle share, in rows written since pvbench reports it.
        if any(r and "idle_pct" in r[("sync.Mutex", 4)] for r in rows):
            for lock in ("pv-qspin", "pv-ticket", "pv-qspin-nosteal", "sync.Mutex"):
                line(f"4x {lock} idle%", [r and r[(lock, 4)].get("idle_pct") for r in rows])

    print("\n16x and 128x fairness, max/min (bars: <= 3 at 16x; <= 10 at 128x)")
    heavy(invs, "")

    # The same rows with runs of 8 s (run.sh's long tables), where written.
    if any(load_rows("scale128long", i) for i in invs):
        print("\nthe same with runs of 8 s (run.sh ... long)")
        heavy(invs, "long")
        for wl in ("lockloop", "ebizzy", "dbench"):
            rows = [load_rows(f"scale16long-{wl}", i) for i in invs]
            for lock in ("pv-qspin", "pv-ticket", "pv-qspin-nosteal"):
                line(f"16x {wl} {lock} / sync.Mutex", [r and r[(lock, 16)]["ops_per_sec"] / r[("sync.Mutex", 16)]["ops_per_sec"] for r in rows])

    print("\n4x with CPU 1 half taken by a host load (hostload.sh): max/min, and throughput / sync.Mutex")
    for wl in ("lockloop", "ebizzy", "dbench"):
        rows = [load_rows(f"hostload-{wl}", i) for i in invs]
        if not any(rows):
            continue
        locks = ("pv-qspin", "pv-ticket", "pv-qspin-nosteal", "pv-qspin-unrestricted", "pv-ticket-unrestricted", "sync.Mutex", "native-ticket", "native-qspin")
        for lock in locks:
            line(f"{wl} {lock} max/min", [r and (lock, 4) in r and r[(lock, 4)]["fairness_max_min"] or None for r in rows])
        for lock in ("pv-qspin", "pv-ticket", "pv-qspin-nosteal", "native-ticket", "native-qspin"):
            line(f"{wl} {lock} / sync.Mutex", [r and (lock, 4) in r and r[(lock, 4)]["ops_per_sec"] / r[("sync.Mutex", 4)]["ops_per_sec"] or None for r in rows])

    header = "\nthe CPUs' idle share (run.sh ... idle): idle%, and throughput / sync.Mutex"
    for wl in ("lockloop", "ebizzy", "dbench"):
        rows = [load_rows(f"idle-{wl}", i) for i in invs]
        if not any(rows):
            continue
        if header:
            print(header)
            header = None
        for oc in (1, 2, 3, 4):
            for lock in ("pv-qspin", "pv-ticket", "pv-qspin-unrestricted", "sync.Mutex"):
                line(f"{wl} {oc}x {lock} idle%", [r and (lock, oc) in r and r[(lock, oc)].get("idle_pct") for r in rows])
                if lock != "sync.Mutex":
                    line(f"{wl} {oc}x {lock} / sync.Mutex", [r and (lock, oc) in r and r[(lock, oc)]["ops_per_sec"] / r[("sync.Mutex", oc)]["ops_per_sec"] or None for r in rows])


if __name__ == "__main__":
    main(sys.argv[1:] or ["1", "2", "3"])
