#!/usr/bin/env bash
# The same as alternate.sh for dbench and ebizzy at 4x, pv-qspin beside
# sync.Mutex, with a CFS busy loop pinned to CPU 1 in a session (and so a
# scheduler group) of its own: one CPU slowed by a load the guest sees.
#
#   busy.sh OUT ROUNDS BUILD...
#   busy.sh /tmp/busy1 6 head sparelast noswap   # busy1
set -euo pipefail
out=$1 rounds=$2
shift 2
mkdir -p "$out"
setsid taskset -c 1 sh -c 'while :; do :; done' &
loop=$!
trap 'kill $loop' EXIT
sleep 1
for r in $(seq 1 "$rounds"); do
	for w in dbench ebizzy; do
		for b in "$@"; do
			/tmp/alt/$b -workload $w -oc 4 -runs 1 -rounds 1 \
				-locks pv-qspin,sync.Mutex -out "" \
				-json "$out/$b-$w-$r.json" >/dev/null 2>&1
		done
	done
done
