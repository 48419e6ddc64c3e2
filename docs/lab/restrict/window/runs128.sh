#!/bin/bash
# 128x lockloop, max/min against the run's length, with the halves probe:
# /tmp/alt/snap is pvbench built with halves.diff applied
# (git apply docs/lab/restrict/window/halves.diff; go build -o /tmp/alt/snap ./bench/cmd/pvbench).
# Rows go to runs128/, the probe's lines to halves128.txt.
for p in 1 2 3; do for d in 1s 4s 8s; do
/tmp/alt/snap -workload lockloop -oc 128 -runs 1 -rounds 1 -duration $d -locks pv-qspin,pv-ticket,pv-qspin-nosteal,sync.Mutex -out "" -json docs/lab/restrict/window/runs128/d$d-lockloop-$p.json 2>&1 >/dev/null | grep SNAP | sed "s/^/$d /"
done; done
