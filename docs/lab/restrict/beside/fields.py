"""Prints the medians over rounds of pvbench's idle%, passive/1k, halts/1k
and max/min for each cell and build of an alternation (alternate.sh), the
fields that alternated.table leaves out:

    python3 docs/lab/restrict/beside/fields.py DIR BUILD...
    python3 docs/lab/restrict/beside/fields.py nocullb-rounds base nocullb
"""
import collections
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import alternated  # noqa: E402


def main(path, builds):
    acc = collections.defaultdict(list)
    for key, rows in alternated.from_dir(path):
        build, workload, _ = key.split("-")
        if build in builds:
            for row in rows:
                acc[(workload, row["overcommit"], row["lock"], build)].append(row)
    for k in sorted(acc):
        rs = acc[k]

        def med(field):
            return statistics.median(r[field] for r in rs)

        print("%-8s %gx %-11s %-9s idle %5.1f passive %5.2f halts %6.2f maxmin %5.2f" % (
            k[0], k[1], k[2], k[3], med("idle_pct"), med("passive"), med("halts"), med("fairness_max_min")))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
