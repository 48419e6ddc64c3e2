#!/usr/bin/env bash
# One invocation of the concurrency-restriction tables: Go's own contended
# Mutex benchmarks, locks on self-pinned threads, and the lab's ebizzy,
# dbench and lockloop at 1x-4x, 16x and 128x, each lock side by side with
# sync.Mutex and its native twin in the same run.
#
#   docs/lab/restrict/run.sh 1 nice     # in its own scheduler group at nice -20
#   docs/lab/restrict/run.sh 3 normal   # at normal priority, as users run
#   docs/lab/restrict/run.sh 1 nice rw  # only the reader-writer tables
#   docs/lab/restrict/run.sh 13 normal idle  # only the CPUs' idle share
#   docs/lab/restrict/run.sh 49 normal long  # only the 16x and 128x rows of 8 s runs
#   docs/lab/restrict/run.sh 52 normal vcpu  # only the tables on vCPUs
#   docs/lab/restrict/run.sh 61 normal criteria  # only ebizzy, dbench and lockloop at 1x-4x, in nine rounds
#   GOROUNDS=9 docs/lab/restrict/run.sh 64 normal go  # only Go's benchmarks and the self-pinned threads, nine rounds each
#
# The reader-writer tables (run with every invocation, or alone with "rw"):
# Go's own RWMutex benchmarks with qspin.RWLock beside sync.RWMutex, and
# pvbench rwroles on vCPUs.
#
# The idle tables (alone, with "idle"): lockloop, ebizzy and dbench at
# 1x-4x for the restricted PV locks, pv-qspin without restriction and
# sync.Mutex, for pvbench's idle% column; every other table's rows carry
# it too.
#
# The criteria tables (alone, with "criteria"): ebizzy, dbench and
# lockloop at 1x-4x with the locks their bars name, in ROUNDS rounds
# (default 9) rather than three. One 1 s round of ebizzy at 2x-4x has a
# standard deviation of 16% of its mean (the median over pv-qspin's and
# sync.Mutex's cells in invocations 58-60; up to 46%), so the ratio of two
# means of three rounds moves by about 13%, more than the few per cent
# its bars are about; over nine rounds, by about 8%. dbench's round has
# 5%, lockloop's 1.5%.
#
# Outputs go to docs/lab/restrict/<name>-<invocation>.txt.
set -euo pipefail
cd "$(dirname "$0")/../../.."
inv=${1:?invocation number}
prio=${2:-normal}
tables=${3:-all}
out=docs/lab/restrict
. docs/lab/restrict/prio.sh # run: the invocation's priority
go build -o /tmp/pvbench-restrict ./bench/cmd/pvbench
# Every pvbench table measures each cell in three rounds of one run, the
# locks taking turns at each factor in every round, so that a lock and
# sync.Mutex beside it fall in the same spells of the host (invocations up
# to 20 ran each lock's three runs back to back).
pvbin=/tmp/pvbench-restrict
pv="$pvbin -runs 1 -rounds 3"
# The 16x and 128x fairness rows again, with runs of 8 s. In a 1 s run a
# vCPU gets a sixteenth (16x) or a 128th (128x) of a CPU-second, and its
# count follows which vCPUs the host's scheduler ran in that second, as
# much for sync.Mutex as for the PV locks: the two halves of a 2 s run at
# 16x are each as spread as a 1 s run, and the whole is half as spread
# (README, "How long a run fairness needs"). The 1 s rows stay as they were.
long() {
	for w in lockloop ebizzy dbench; do
		run $pv -duration 8s -workload $w -oc 16 -locks pv-qspin,pv-ticket,pv-qspin-nosteal,sync.Mutex -json "$out/scale16long-$w-$inv-rows.json" -out "" >"$out/scale16long-$w-$inv.txt"
	done
	run $pv -duration 8s -oc 128 -locks pv-qspin,pv-ticket,pv-qspin-nosteal,sync.Mutex -json "$out/scale128long-$inv-rows.json" -out "" >"$out/scale128long-$inv.txt"
}
# The tables whose locks wait on vCPUs: ebizzy, dbench and lockloop at
# 1x-4x, 16x and 128x, and the long rows. "vcpu" runs only these, for a
# change that a goroutine that is not a vCPU never reaches (a vCPU's spin).
vcpus() {
	for w in ebizzy dbench; do
		run $pv -workload $w -locks pv-qspin,pv-ticket,pv-qspin-nosteal,pv-qspin-unrestricted,sync.Mutex,native-ticket -json "$out/$w-$inv-rows.json" -out "" >"$out/$w-$inv.txt"
	done
	run $pv -locks pv-qspin,pv-ticket,pv-qspin-nosteal,pv-qspin-unrestricted,pv-ticket-unrestricted,pv-qspin-nosteal-unrestricted,sync.Mutex,native-ticket,native-qspin \
		-json "$out/lockloop-$inv-rows.json" -out "" >"$out/lockloop-$inv.txt"
	for w in lockloop ebizzy dbench; do
		run $pv -workload $w -oc 16 -locks pv-qspin,pv-ticket,pv-qspin-nosteal,sync.Mutex -json "$out/scale16-$w-$inv-rows.json" -out "" >"$out/scale16-$w-$inv.txt"
	done
	run $pv -oc 128 -locks pv-qspin,pv-ticket,pv-qspin-nosteal,sync.Mutex -json "$out/scale128-$inv-rows.json" -out "" >"$out/scale128-$inv.txt"
	long
}
# Go's own Mutex benchmarks and the self-pinned threads, with the host's
# hand-off before and after. "go" runs only these, in GOROUNDS rounds
# (default 5 for Go's benchmarks and 9 for the pinned threads).
gobench() {
	go test -c -o /tmp/bench-restrict.test ./bench
	# The host's price of a hand-off to a waiter that is not running, before
	# and after Go's benchmarks: a futex wake on the same CPU and across CPUs,
	# which moves with the host's spells (a restricted lock's passive waits
	# pay it; the summary prints it beside the tables).
	go test -c -o /tmp/kick-restrict.test ./kick
	handoff() { run /tmp/kick-restrict.test -test.run '^$' -test.bench 'Handoff/(same|cross)-cpu/futex' -test.count 3 -test.benchtime 20000x >>"$out/handoff-$inv.txt"; }
	: >"$out/handoff-$inv.txt"
	handoff
	# Rounds of every lock (GOROUNDS, five by default), one count each, rather
	# than five counts of one lock after another: a lock and sync.Mutex are
	# measured seconds apart, not a minute, and the host's slower spells fall
	# on both. -cpu 1 gives the work shapes' cost with the work on one CPU,
	# the other side of their floor (summary.py).
	: >"$out/gomutex-$inv.txt"
	for round in $(seq 1 "${GOROUNDS:-5}"); do
		run /tmp/bench-restrict.test -test.run '^$' -test.bench 'GoMutex' -test.cpu 1,2,8 -test.count 1 -test.benchtime 100ms >>"$out/gomutex-$inv.txt"
	done
	handoff
	# The self-pinned threads in rounds too: each count lands at about 60-85 or
	# at 110-140 ns/op, whatever the lock (the shared counter's line and the
	# work, as Go's work shapes), and five counts of one lock in a row can all
	# land in one mode (invocation 39: pv-ticket at 8 Ps 129-138 against
	# sync.Mutex's 64-82 just before it). Five rounds still left the median
	# to how many counts fell in each mode (invocation 41 at 2 Ps: pv-qspin
	# three of five at 112-113, sync.Mutex two, 0.78x), so there are nine
	# by default (GOROUNDS).
	: >"$out/pinned-$inv.txt"
	for round in $(seq 1 "${GOROUNDS:-9}"); do
		run /tmp/bench-restrict.test -test.run '^$' -test.bench 'PinnedThreads' -test.cpu 2,8 -test.count 1 -test.benchtime 300000x >>"$out/pinned-$inv.txt"
	done
}
if [ "$tables" = criteria ]; then
	pv="$pvbin -runs 1 -rounds ${ROUNDS:-9}"
	for w in ebizzy dbench; do
		run $pv -workload $w -locks pv-qspin,pv-ticket,pv-qspin-nosteal,sync.Mutex,native-ticket -json "$out/$w-$inv-rows.json" -out "" >"$out/$w-$inv.txt"
	done
	run $pv -locks pv-qspin,pv-ticket,pv-qspin-nosteal,sync.Mutex,native-ticket,native-qspin \
		-json "$out/lockloop-$inv-rows.json" -out "" >"$out/lockloop-$inv.txt"
	exit 0
fi
if [ "$tables" = vcpu ]; then
	vcpus
	exit 0
fi
if [ "$tables" = long ]; then
	long
	exit 0
fi
if [ "$tables" = go ]; then
	gobench
	exit 0
fi
if [ "$tables" = idle ]; then
	for w in lockloop ebizzy dbench; do
		run $pv -workload $w -locks pv-qspin,pv-ticket,pv-qspin-unrestricted,sync.Mutex \
			-json "$out/idle-$w-$inv-rows.json" -out "" >"$out/idle-$w-$inv.txt"
	done
	exit 0
fi
go test -c -o /tmp/qspin-restrict.test ./qspin
run /tmp/qspin-restrict.test -test.run '^$' -test.bench 'RWMutex' -test.cpu 2,8 -test.count 5 -test.benchtime 100ms >"$out/gorwmutex-$inv.txt"
run $pvbin rwroles -runs 2 -duration 500ms -json "$out/rwroles-$inv.json" >"$out/rwroles-$inv.txt"
[ "$tables" = rw ] && exit 0
gobench
vcpus
