#!/usr/bin/env bash
# Alternates pvbench builds: in every round, for each workload, the builds
# take turns, each run with sync.Mutex beside the locks under test, and
# each writes one JSON file of rows per build, workload and round:
# <out>/<build>-<workload>-<round>.json (alternated.py pools them).
#
#   alternate.sh OUT ROUNDS FACTORS LOCKS BUILD...
#   alternate.sh /tmp/r1 12 3,4 pv-qspin head noswap
#   WORKLOADS="dbench ebizzy" alternate.sh /tmp/b1 6 4 pv-qspin head noswap
#
# A build is a pvbench binary in /tmp/alt, built from the commit under
# test, with a scratch diff applied or none (go build -o /tmp/alt/NAME
# ./bench/cmd/pvbench). WORKLOADS defaults to lockloop, ebizzy and dbench.
set -euo pipefail
out=$1 rounds=$2 oc=$3 locks=$4
shift 4
mkdir -p "$out"
for r in $(seq 1 "$rounds"); do
	for w in ${WORKLOADS:-lockloop ebizzy dbench}; do
		for b in "$@"; do
			/tmp/alt/$b -workload "$w" -oc "$oc" -runs 1 -rounds 1 \
				-locks "$locks,sync.Mutex" -out "" \
				-json "$out/$b-$w-$r.json" >/dev/null 2>&1
		done
	done
done
