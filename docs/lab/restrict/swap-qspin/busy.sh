#!/usr/bin/env bash
# dbench and ebizzy at 4x, pv-qspin beside sync.Mutex (../alternate.sh),
# with a CFS busy loop pinned to CPU 1 in a session (and so a scheduler
# group) of its own: one CPU slowed by a load the guest sees.
#
#   busy.sh OUT ROUNDS BUILD...
#   busy.sh /tmp/busy1 6 head sparelast noswap   # busy1
set -euo pipefail
out=$1 rounds=$2
shift 2
setsid taskset -c 1 sh -c 'while :; do :; done' &
loop=$!
trap 'kill $loop' EXIT
sleep 1
WORKLOADS="dbench ebizzy" "$(dirname "$0")/../alternate.sh" "$out" "$rounds" 4 pv-qspin "$@"
