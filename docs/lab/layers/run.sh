#!/usr/bin/env bash
# One invocation of the layers side-by-side: the main job (pvbench's
# lockloop at 1x-4x, every lock) and BenchmarkGoShapes at -cpu 2, each run
# by the code before the layers work (commit 5b716ff, or $BEFORE) and by
# this tree, one after the other, in the same invocation.
#
#   docs/lab/layers/run.sh 1 normal   # at normal priority, as users run
#   docs/lab/layers/run.sh 2 nice     # in its own scheduler group at nice -20
#
# Outputs go to docs/lab/layers/{mainjob,goshapes}-{before,after}-<n>.txt.
set -euo pipefail
cd "$(dirname "$0")/../../.."
inv=${1:?invocation number}
prio=${2:-normal}
before=${BEFORE:-5b716ff}
out=docs/lab/layers
bin=$(mktemp -d)
trap 'git worktree remove --force "$bin/src" >/dev/null 2>&1 || true; rm -rf "$bin"' EXIT
git worktree add --detach "$bin/src" "$before" >/dev/null 2>&1
(cd "$bin/src" && go build -o "$bin/pvbench-before" ./bench/cmd/pvbench && go test -c -o "$bin/bench-before.test" ./bench)
go build -o "$bin/pvbench-after" ./bench/cmd/pvbench
go test -c -o "$bin/bench-after.test" ./bench
run() {
	if [ "$prio" = nice ]; then
		setsid sh -c 'echo -20 > /proc/self/autogroup 2>/dev/null; exec nice -n -20 "$@"' sh "$@"
	else
		"$@"
	fi
}
for side in before after; do
	run "$bin/pvbench-$side" -out "" -json "$out/mainjob-$side-$inv-rows.json" >"$out/mainjob-$side-$inv.txt"
done
rm -f "$out/goshapes-before-$inv.txt" "$out/goshapes-after-$inv.txt"
for round in 1 2; do
	for side in before after; do
		run "$bin/bench-$side.test" -test.run '^$' -test.bench 'GoShapes' -test.cpu 2 -test.count 2 -test.benchtime 100ms >>"$out/goshapes-$side-$inv.txt"
	done
done
