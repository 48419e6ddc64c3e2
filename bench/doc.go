// Package bench is pvlock's overcommit laboratory: it runs workloads on
// pinned vCPU threads at chosen overcommit factors, against every lock the
// lab knows, and measures throughput, halts, kicks, steal time, fairness
// and acquisition latency in the style of the PV ticketlock thread's
// tables.
//
// The lab is layered, the imports pointing one way (down this list):
//
//   - bench/cmd/pvbench, the CLI: the main job and the lockbreak,
//     shootdown, sweep and torture subcommands. It alone reaches gonum,
//     through bench/report.
//   - bench/report: the tables (WriteHeadline, WriteSeedTable,
//     WriteMatrix and the lockbreak, shootdown and sweep tables), JSON
//     (WriteJSON, one writer for every kind of row), CSV (WriteCSV, by
//     encoding/csv) and the plots (WritePlots, PNG and SVG).
//   - bench/torture: locktorture for pvlock.
//   - bench, this package: the harness and the workloads.
//   - bench/locks: the one lock registry (Register, Lookup, Names) of the
//     lab, the torture and the benchmarks, with the lab's peer locks
//     ple-yield and preemptable-ticket.
//
// This package holds
//
//   - the harness (harness.go): one Spec (host CPUs, overcommit factor,
//     0.5x and up, several VMs sharing the host, pinning, warm-up, repeated
//     runs, a seed for the workloads' random choices), one VM builder, one
//     runner timing every run on the monotonic clock, and Measure, which
//     summarises a Spec as a Row (means and stdevs over runs). Every lock a
//     workload gets is wrapped in a Probe (probe.go), which counts each
//     vCPU's acquisitions (fairness: MaxMin and Jain) and times one in
//     SampleEvery of them (p50, p99, max);
//   - the workloads, one a file (RegisterWorkload, WorkloadNames):
//     lockloop (workload.go), ebizzy, dbench, hackbench and lockbreak,
//     each documented in its Doc. lockbreak and the cross-vCPU call
//     benchmark shootdown have harnesses of their own, MeasureLockBreak
//     and MeasureShootdown, whose specs embed Spec;
//   - Sweep (sweep.go): the adaptive waiting policy against fixed spin
//     thresholds and halt-poll windows.
//
// `go test -bench` suites live next to this file
// (BenchmarkLockloop/lock=pv-ticket/oc=2x and friends, BenchmarkGoShapes,
// BenchmarkUncontendedLocks). A measurement from code:
//
//	row, err := bench.Measure(ctx, bench.Spec{
//		Workload:   "ebizzy",
//		Lock:       "pv-ticket",
//		Overcommit: 2,
//		VMs:        2,
//		Runs:       3,
//		Duration:   time.Second,
//	})
//	fmt.Printf("%.0f %s/s, p99 %v\n", row.OpsPerSec, row.Unit, time.Duration(row.LatP99))
package bench
