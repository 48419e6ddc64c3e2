#!/usr/bin/env bash
# The sweep with concurrency restriction on: the adaptive waiting policy
# against each fixed spin threshold and halt-poll window, and restriction
# off, for every PV lock on lockloop and ebizzy at 1x-4x. Two runs per cell,
# so that the best fixed setting is not just the luckiest single run.
#
#   docs/lab/restrict/sweep.sh 1
#
# Outputs go to docs/lab/restrict/sweep-<invocation>.txt and .json.
set -euo pipefail
cd "$(dirname "$0")/../../.."
inv=${1:?invocation number}
out=docs/lab/restrict
go build -o /tmp/pvbench-sweep ./bench/cmd/pvbench
/tmp/pvbench-sweep sweep -runs 2 -duration 300ms -out "" -json "$out/sweep-$inv.json" >"$out/sweep-$inv.txt"
