#!/usr/bin/env bash
# Alternates pvbench builds on lockloop, ebizzy and dbench, the builds
# taking turns for each workload in every round, each run with sync.Mutex
# beside the FIFO PV locks, and writes one JSON file of rows per build,
# workload and round: <out>/<build>-<workload>-<round>.json.
#
#   alternate.sh OUT ROUNDS FACTORS BUILD...
#   alternate.sh /tmp/r1 5 2,3,4,16 base floor   # /tmp/alt/base, /tmp/alt/floor
#
# A build is a pvbench binary in /tmp/alt, built from the commit under
# test (go build -o /tmp/alt/NAME ./bench/cmd/pvbench).
set -euo pipefail
out=$1 rounds=$2 oc=$3
shift 3
mkdir -p "$out"
for r in $(seq 1 "$rounds"); do
	for w in lockloop ebizzy dbench; do
		for b in "$@"; do
			/tmp/alt/$b -workload $w -oc "$oc" -runs 1 -rounds 1 \
				-locks pv-ticket,pv-qspin-nosteal,sync.Mutex -out "" \
				-json "$out/$b-$w-$r.json" >/dev/null
		done
	done
done
