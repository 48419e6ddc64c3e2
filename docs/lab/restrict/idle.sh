#!/usr/bin/env bash
# One invocation of the CPUs' idle share (pvbench's idle% column) on
# lockloop, ebizzy and dbench at 1x-4x: the PV locks with restriction,
# pv-qspin without it, and sync.Mutex, side by side.
#
#   docs/lab/restrict/idle.sh 13 normal   # at normal priority, as users run
#   docs/lab/restrict/idle.sh 14 nice     # in its own scheduler group at nice -20
#
# Outputs go to docs/lab/restrict/idle-<workload>-<invocation>.txt and
# -rows.json.
set -euo pipefail
cd "$(dirname "$0")/../../.."
inv=${1:?invocation number}
prio=${2:-normal}
out=docs/lab/restrict
. docs/lab/restrict/prio.sh # run: the invocation's priority
go build -o /tmp/pvbench-idle ./bench/cmd/pvbench
for w in lockloop ebizzy dbench; do
	run /tmp/pvbench-idle -workload $w -locks pv-qspin,pv-ticket,pv-qspin-unrestricted,sync.Mutex \
		-json "$out/idle-$w-$inv-rows.json" -out "" >"$out/idle-$w-$inv.txt"
done
