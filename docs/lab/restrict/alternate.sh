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
#
# The builds run in the order given in odd rounds and in the reverse order
# in even ones, so that a build's place in the round (first, or right
# after another build's run) weighs on every build alike: in ten rounds of
# an A/A (one binary under two names, always in the same order), the
# second came out 3% ahead on dbench at 1x and 7% at 4x.
set -euo pipefail
out=$1 rounds=$2 oc=$3 locks=$4
shift 4
mkdir -p "$out"
builds=("$@")
reversed=()
for ((i = ${#builds[@]} - 1; i >= 0; i--)); do
	reversed+=("${builds[i]}")
done
for r in $(seq 1 "$rounds"); do
	order=("${builds[@]}")
	if ((r % 2 == 0)); then
		order=("${reversed[@]}")
	fi
	for w in ${WORKLOADS:-lockloop ebizzy dbench}; do
		for b in "${order[@]}"; do
			/tmp/alt/$b -workload "$w" -oc "$oc" -runs 1 -rounds 1 \
				-locks "$locks,sync.Mutex" -out "" \
				-json "$out/$b-$w-$r.json" >/dev/null 2>&1
		done
	done
done
