#!/usr/bin/env bash
# The serial ceiling of ebizzy and dbench: how fast one vCPU alone on one
# CPU runs the workload, its lock never contended, beside the same
# workload on both CPUs at 1x-4x, round after round.
#
#   docs/lab/restrict/serial/run.sh OUT ROUNDS
#   docs/lab/restrict/serial/run.sh /tmp/serial 6
#   python3 docs/lab/restrict/serial/summary.py /tmp/serial
#
# (summary.py with no argument reads the stored rounds, serial/runs.)
#
# Each round writes <out>/one-<workload>-<round>.json (pvbench -cpus 0
# -oc 1: one vCPU, pv-qspin and sync.Mutex) and <out>/two-<workload>-<round>.json
# (both CPUs, 1x-4x, pv-qspin, pv-qspin-nosteal and sync.Mutex), one run of
# 1 s per cell. PVBENCH names the binary (default: built from this tree).
set -euo pipefail
out=$(realpath -m "${1:?output directory}") rounds=${2:?rounds}
cd "$(dirname "$0")/../../../.."
if [ -z "${PVBENCH:-}" ]; then
	PVBENCH=/tmp/pvbench-serial
	go build -o "$PVBENCH" ./bench/cmd/pvbench
fi
mkdir -p "$out"
for r in $(seq 1 "$rounds"); do
	for w in dbench ebizzy; do
		"$PVBENCH" -workload "$w" -cpus 0 -oc 1 -runs 1 -rounds 1 \
			-locks pv-qspin,sync.Mutex -out "" -json "$out/one-$w-$r.json" >/dev/null
		"$PVBENCH" -workload "$w" -oc 1,2,3,4 -runs 1 -rounds 1 \
			-locks pv-qspin,pv-qspin-nosteal,sync.Mutex -out "" -json "$out/two-$w-$r.json" >/dev/null
	done
done
