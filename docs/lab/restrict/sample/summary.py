#!/usr/bin/env python3
"""Go's Mutex shapes, the fairness clock's sample: median ns/op per lock
over the rounds of each file, and its ratio to sync.Mutex's in the same file.

    python3 docs/lab/restrict/sample/summary.py docs/lab/restrict/sample/gomutex-*.txt

gomutex-head-0.txt / gomutex-cheaprand.txt: the code before and a scratch
build that picks the sample with the runtime's cheap generator
(cheaprand.diff), 5 alternated rounds. gomutex-head.txt / gomutex-seq.txt:
the code before and as built (the lock's own count of its releases), 5
alternated rounds. runs/: the vCPU workloads, alternate.sh 4 rounds at
2x-4x (alternated.py pools them).
"""
import collections
import re
import statistics
import sys

LINE = re.compile(r'BenchmarkGoMutex/shape=(\w+)/lock=([\w.-]+)-(\d+)\s+\d+\s+([\d.]+) ns/op')


def load(path):
    rows = collections.defaultdict(list)
    for line in open(path):
        m = LINE.match(line)
        if m:
            rows[(m[1], int(m[3]), m[2])].append(float(m[4]))
    return rows


def main(paths):
    for path in paths:
        rows = load(path)
        print(path)
        for (shape, cpu, lock), ns in sorted(rows.items()):
            base = rows.get((shape, cpu, 'sync.Mutex'))
            if lock == 'sync.Mutex' or not base:
                continue
            med, bmed = statistics.median(ns), statistics.median(base)
            print(f'  {shape:9} -cpu {cpu} {lock:17} {med:7.2f} ns/op  '
                  f'{med / bmed:.2f}x sync.Mutex ({bmed:.2f})')


if __name__ == '__main__':
    main(sys.argv[1:])
