#!/usr/bin/env bash
# The sibling floor's alternation (r1-r9): the FIFO PV locks beside
# sync.Mutex on lockloop, ebizzy and dbench (../alternate.sh). Each batch's
# files were then merged into one rN.json, keyed by <build>-<workload>-<round>.
#
#   alternate.sh OUT ROUNDS FACTORS BUILD...
#   alternate.sh /tmp/r1 5 2,3,4,16 base floor   # /tmp/alt/base, /tmp/alt/floor
set -euo pipefail
exec "$(dirname "$0")/../alternate.sh" "$1" "$2" "$3" pv-ticket,pv-qspin-nosteal "${@:4}"
