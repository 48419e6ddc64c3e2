#!/usr/bin/env bash
# The swap experiment's alternated batches, as they were run with
# ../alternate.sh (builds: head, and the diffs here applied to it as
# noswap and sparelast):
#
#   r1: ../alternate.sh OUT 12 3,4 pv-qspin head noswap
#   r2: ../alternate.sh OUT 10 3,4 pv-ticket,pv-qspin,pv-qspin-nosteal head noswap sparelast
#   r3: ../alternate.sh OUT 10 3,4 pv-qspin head sparelast noswap
#   r4: ../alternate.sh OUT 10 2 pv-qspin head sparelast noswap
#
#   alternate.sh OUT ROUNDS FACTORS LOCKS BUILD...
set -euo pipefail
exec "$(dirname "$0")/../alternate.sh" "$@"
