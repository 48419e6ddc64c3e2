#!/usr/bin/env bash
# One invocation of the 4x fairness tables with one CPU half taken by a
# host load (pvbench -hostload 1:50: a real-time thread busy for half of
# every 2 ms on CPU 1, as a host's other guests would take it), the PV
# locks with and without restriction side by side with sync.Mutex and the
# native locks, each cell in three rounds of one run with the locks taking
# turns. Needs root for the real-time thread.
#
#   docs/lab/restrict/hostload.sh 4 normal   # at normal priority, as users run
#   docs/lab/restrict/hostload.sh 5 nice     # in its own scheduler group at nice -20
#
# Outputs go to docs/lab/restrict/hostload-<workload>-<invocation>.txt and
# -rows.json; summary.py prints them.
set -euo pipefail
cd "$(dirname "$0")/../../.."
inv=${1:?invocation number}
prio=${2:-normal}
out=docs/lab/restrict
. docs/lab/restrict/prio.sh # run: the invocation's priority
go build -o /tmp/pvbench-hostload ./bench/cmd/pvbench
for w in lockloop ebizzy dbench; do
	run /tmp/pvbench-hostload -workload $w -oc 4 -hostload 1:50 -runs 1 -rounds 3 \
		-locks pv-qspin,pv-ticket,pv-qspin-nosteal,pv-qspin-unrestricted,pv-ticket-unrestricted,sync.Mutex,native-ticket,native-qspin \
		-json "$out/hostload-$w-$inv-rows.json" -out "" >"$out/hostload-$w-$inv.txt"
done
