#!/bin/bash
# 16x, max/min against the run's length: the locks taking turns, one run per cell.
# /tmp/alt/asbuilt is pvbench as built (go build -o /tmp/alt/asbuilt ./bench/cmd/pvbench).
# halves16.txt came from the same loop over 2s and 8s with /tmp/alt/snap (see runs128.sh).
for p in 1 2 3; do
  for d in 1s 4s 8s; do
    for w in lockloop ebizzy dbench; do
      /tmp/alt/asbuilt -workload $w -oc 16 -runs 1 -rounds 1 -duration $d \
        -locks pv-qspin,pv-ticket,pv-qspin-nosteal,sync.Mutex -out "" \
        -json docs/lab/restrict/window/runs16/d$d-$w-$p.json >/dev/null 2>&1
    done
  done
done
