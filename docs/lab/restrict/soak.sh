#!/usr/bin/env bash
# The soak with concurrency restriction on (the default): the torture of
# each PV lock at 2x and 4x, all six at once on the machine's CPUs, for
# DURATION (default 5m) each, so that every PV lock passes 10^8
# acquisitions in all.
#
#   docs/lab/restrict/soak.sh
#
# Outputs go to docs/lab/restrict/soak-<lock>-<factor>x.txt; each ends
# with "End of test: SUCCESS" or "FAILURE" and the exit status.
set -euo pipefail
cd "$(dirname "$0")/../../.."
out=docs/lab/restrict
dur=${DURATION:-5m}
go build -o /tmp/pvbench-soak ./bench/cmd/pvbench
rev=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
for lock in pv-ticket pv-qspin pv-qspin-nosteal; do
	for oc in 2 4; do
		f="$out/soak-$lock-${oc}x.txt"
		{
			echo "# $lock soak, $(date -u), one of 6 torture processes run at the same time (3 PV locks x 2x, 4x), restriction on (the default); built from $rev"
			echo "# Command: pvbench torture -lock $lock -oc $oc -duration $dur -interval 60s"
			set +e
			/tmp/pvbench-soak torture -lock "$lock" -oc "$oc" -duration "$dur" -interval 60s 2>&1
			echo "exit status $?, $(date -u)"
		} >"$f" &
	done
done
wait
grep -h "End of test" "$out"/soak-*.txt
