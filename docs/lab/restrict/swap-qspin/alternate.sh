#!/usr/bin/env bash
# Alternates pvbench builds on lockloop, ebizzy and dbench, the
# builds taking turns for each workload in every round, each run with
# sync.Mutex beside the locks under test, and writes one JSON file of rows
# per build, workload and round: <out>/<build>-<workload>-<round>.json.
#
#   alternate.sh OUT ROUNDS FACTORS LOCKS BUILD...
#   alternate.sh /tmp/r1 12 3,4 pv-qspin head noswap           # r1
#   alternate.sh /tmp/r2 10 3,4 pv-ticket,pv-qspin,pv-qspin-nosteal head noswap sparelast   # r2
#   alternate.sh /tmp/r3 10 3,4 pv-qspin head sparelast noswap  # r3
#   alternate.sh /tmp/r4 10 2 pv-qspin head sparelast noswap    # r4
#
# A build is a pvbench binary in /tmp/alt, built from the commit under
# test with one of this directory's diffs applied or none
# (git apply no-swap.diff && go build -o /tmp/alt/noswap ./bench/cmd/pvbench).
set -euo pipefail
out=$1 rounds=$2 oc=$3 locks=$4
shift 4
mkdir -p "$out"
for r in $(seq 1 "$rounds"); do
	for w in lockloop ebizzy dbench; do
		for b in "$@"; do
			/tmp/alt/$b -workload $w -oc "$oc" -runs 1 -rounds 1 \
				-locks "$locks,sync.Mutex" -out "" \
				-json "$out/$b-$w-$r.json" >/dev/null 2>&1
		done
	done
done
