"""Prints the medians over rounds of pvbench's idle%, passive/1k, halts/1k
and max/min for each cell and build of an alternation (alternate.sh):

    python3 fields.py DIR BUILD...
    python3 fields.py nocullb-rounds base nocullb
"""
import collections
import glob
import json
import statistics
import sys


def main(d, builds):
    acc = collections.defaultdict(list)
    for f in glob.glob(d + '/*.json'):
        b, w, _ = f.split('/')[-1][:-5].rsplit('-', 2)
        if b in builds:
            for row in json.load(open(f)):
                acc[(w, row['overcommit'], row['lock'], b)].append(row)
    for k in sorted(acc):
        rs = acc[k]
        med = lambda key: statistics.median(r[key] for r in rs)
        print("%-8s %gx %-11s %-9s idle %5.1f passive %5.2f halts %6.2f maxmin %5.2f" % (
            k[0], k[1], k[2], k[3], med('idle_pct'), med('passive'), med('halts'), med('fairness_max_min')))


if __name__ == '__main__':
    main(sys.argv[1], sys.argv[2:])
