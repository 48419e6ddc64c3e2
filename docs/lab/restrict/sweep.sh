#!/usr/bin/env bash
# The sweep with concurrency restriction on: the adaptive waiting policy
# against each fixed spin threshold and halt-poll window, and restriction
# off, for every PV lock on lockloop and ebizzy at 1x-4x. RUNS runs of
# DURATION per cell (default 3 of 500ms), so that the best of a cell's
# thirteen settings is less often just its luckiest sample; then CONFIRM
# rounds (default 3) of adaptive and that best setting again, alternated,
# for the table's "confirmed" column.
#
#   docs/lab/restrict/sweep.sh 1
#
# Outputs go to docs/lab/restrict/sweep-<invocation>.txt and .json.
set -euo pipefail
cd "$(dirname "$0")/../../.."
inv=${1:?invocation number}
out=docs/lab/restrict
go build -o /tmp/pvbench-sweep ./bench/cmd/pvbench
/tmp/pvbench-sweep sweep -runs "${RUNS:-3}" -duration "${DURATION:-500ms}" -confirm "${CONFIRM:-3}" -out "" -json "$out/sweep-$inv.json" >"$out/sweep-$inv.txt"
