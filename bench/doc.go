// Package bench is pvlock's overcommit laboratory: it runs workloads on
// pinned vCPU threads at chosen overcommit factors, against every lock the
// lab knows, and reports throughput, halts, kicks, steal time, fairness and
// acquisition latency in the style of the PV ticketlock thread's tables.
//
// The pieces:
//
//   - Locks (RegisterLock, LockNames): native-ticket, pv-ticket,
//     native-qspin, pv-qspin, pv-qspin-nosteal, tas and sync.Mutex, and
//     two peers defined here: ple-yield (a native ticket lock with an
//     emulated pause-loop exit, PLEYield) and preemptable-ticket (Ouyang's
//     preemptable ticket lock, PreemptableTicket). Adding a lock is one
//     RegisterLock call.
//   - Workloads (RegisterWorkload, WorkloadNames): lockloop, ebizzy,
//     dbench, hackbench and lockbreak, each documented in its Doc.
//     lockbreak also has its own harness (MeasureLockBreak), as has the
//     cross-vCPU call benchmark (MeasureShootdown).
//   - The harness (Measure, Spec): host CPUs, overcommit factor (0.5x and
//     up), several VMs sharing the host, pinning, warm-up, repeated runs
//     (mean and stdev), a seed for the workloads' random choices. Every
//     lock a workload gets is wrapped in a Probe, which counts each vCPU's
//     acquisitions (fairness: MaxMin and Jain) and times one in
//     SampleEvery of them (p50, p99, max).
//   - Reports: WriteHeadline, WriteSeedTable (base, stdev, patched, stdev,
//     %improvement for any pair), WriteMatrix, WriteJSON, WriteCSV and
//     WritePlots (PNG and SVG).
//
// The CLI is bench/cmd/pvbench; `go test -bench` suites live next to this
// file (BenchmarkLockloop/lock=pv-ticket/oc=2x and friends). A measurement
// from code:
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
