// Package bench is pvlock's overcommit laboratory: it runs workloads on
// pinned vCPU threads at chosen overcommit factors, against every lock the
// lab knows, and reports throughput, halts, kicks and steal time in the
// style of the PV ticketlock thread's tables.
//
// The CLI is bench/cmd/pvbench; `go test -bench` suites live next to this
// file. A measurement from code:
//
//	row, err := bench.Measure(bench.Spec{
//		Workload:   "lockloop",
//		Lock:       "pv-ticket",
//		Overcommit: 2,
//		Runs:       3,
//		Duration:   time.Second,
//	})
package bench
