// Package metrics exports pvlock's halt/kick statistics to Prometheus.
//
// Locks count their events in lockstat.Stats (padded per-vCPU counters)
// and vCPUs count their halts and kicks in their kick.Waiter. Nothing on a
// lock path calls client_golang: a Collector reads those counters when
// Prometheus scrapes and sends them as constant metrics. Importing this
// package registers nothing; the caller decides where the Collector goes.
//
// The common case, a fresh registry with the pvlock, Go runtime and process
// metrics, served over HTTP:
//
//	vm, err := pvlock.NewVM(pvlock.Config{VCPUs: 4})
//	if err != nil { ... }
//	c := metrics.NewCollector(metrics.Options{})
//	if err := c.AddVM(vm); err != nil { ... }
//	reg := metrics.NewRegistry(c)
//	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
//
// # Lock metrics
//
// Every Stats in lockstat.All (one per lock kind and mode, for
// example the PV ticket lock) that has counted anything yields one series
// per metric below, with the labels lock (the kind: "ticket", "qspin",
// "tas", ...), mode ("pv", "pv-nosteal" for a PV qspin lock without
// lock stealing, or "native") and name: the name of the locks counted
// (ticket.Name, qspin.Name), or "" for the locks without one, which count
// together. At most lockstat.MaxLockNames names per kind have series of
// their own; pvlock_lock_name_overflows_total, exported once it is not
// zero, counts the locks named beyond them, which count as unnamed. A kind
// and mode whose counters are all
// zero, such as a mode no lock of the program uses, exports no series; as
// acquisitions are counted in batches (see pvlock_acquisitions_total), a
// mode used only briefly and never contended may not show yet. A metric
// is derived from the first listed source whose events the lock defines
// (several events of one source are added up); a lock that defines none
// of them does not export that metric.
//
//	metric                              ticket source                 qspin source
//	pvlock_halts_total                  halts + passive_halts         halts + passive_halts
//	pvlock_kicks_total                  released_slow_kicked          pv_kick_unlock
//	                                    + passive_kicks               + passive_kicks
//	pvlock_spurious_wakeups_total       spurious_wakeups              pv_spurious_wakeup
//	                                    + passive_spurious_wakeups    + passive_spurious_wakeups
//	pvlock_passive_waits_total          passive_waits                 passive_waits
//	pvlock_passive_watches_total        passive_watches               passive_watches
//	pvlock_passive_culls_total          passive_culls                 passive_culls
//	pvlock_passive_beside_total         admitted_beside               admitted_beside
//	pvlock_halt_timeouts_total          halt_timeouts                 halt_timeouts
//	pvlock_lost_wakeups_total           lost_wakeups                  lost_wakeups
//	pvlock_slowpath_entries_total       taken_slow                    lock_slowpath
//	pvlock_slowpath_pickups_total       taken_slow_pickup             -
//	pvlock_slow_releases_total          released_slow                 -
//	pvlock_slow_releases_kicked_total   released_slow_kicked          -
//	pvlock_early_halts_total            halt_early                    -
//	pvlock_acquisitions_total           acquisitions                  acquisitions
//	pvlock_contended_acquisitions_total acquired_slow                 -
//	pvlock_kick_latency_seconds_total   -                             pv_latency_kick / 1e9
//	pvlock_wake_latency_seconds_total   -                             pv_latency_wake / 1e9
//
// The two latency metrics are sums of time, in seconds, kept apart from
// the counts: pvlock_kick_latency_seconds_total is the time unlockers
// spent issuing kicks (the pv_kick_unlock kicks, which
// pvlock_kicks_total counts together with the passive waiters' kicks),
// and pvlock_wake_latency_seconds_total the time from a kick to the
// kicked waiter running again, summed over the halts that timed it
// (pvlock_qspin_events_total{event="pv_kick_wake"}). Divided by those
// counts' rates they are the mean kick cost and wake-up latency.
//
// The passive_* events are the concurrency restriction's
// (pvlock.Policy.Restrict): waits outside a saturated lock, with no ticket
// taken or queue node linked, and the halts, kicks and wake-ups of those
// waiters, which the halt, kick and wake-up metrics include, as the vCPUs'
// own counters do; pvlock_passive_watches_total counts those that watched
// the lock from an otherwise idle CPU instead of halting (vCPUs, and
// goroutines of a program with no more Ps than CPUs), and
// pvlock_passive_culls_total those of vCPUs that found room among the
// active waiters but went outside in exchange for an admitted one, or at
// the end of their turn on a deep queue; pvlock_passive_beside_total
// counts the admissions that would have been such swaps but made none
// because their waiter slept on the releasing vCPU's own CPU while the
// lock's waiters worked outside it (a subset of the admissions below). Two more
// series come from them: pvlock_passive_admissions_total{lock, mode, name,
// cause} counts the waiters let back in, by a release that found no active
// waiter or by a watching waiter that found the lock left free
// (cause="drained", admitted_drained), by the fairness bound
// (cause="fair", admitted_fair), or by the fairness bound of a deep queue
// while another admitted waiter was still on its way in (cause="stacked",
// admitted_stacked); the gauge pvlock_passive_waiters{lock, mode, name}
// is the number waiting outside now (passive waits begun less
// admissions).
//
// The reader-writer lock (qspin.RWLock, lock="qrwlock") counts by role,
// reader or writer, in four metrics with the labels lock, mode, name and
// role ("reader", "writer"): pvlock_rw_acquisitions_total
// (read_acquisitions, write_acquisitions), pvlock_rw_slowpath_entries_total
// (read_slowpath, write_slowpath: acquisitions that queued),
// pvlock_rw_halts_total (read_halts, write_halts: halts of the queue head
// waiting on the count word) and pvlock_rw_kicks_total (read_kicks,
// write_kicks: kicks of that head, by the role of the kicker). Its halt
// timeouts, lost wake-ups and halt durations are in the metrics above;
// the waits in its queue are those of its wait lock, a qspin lock of the
// same mode and name.
//
// pvlock_lockups_suspected_total, without labels, counts the waits the
// lockup detector reported (pvlock.SetLockupThreshold, off by default;
// pvlock.LockupsSuspected): waiters that waited for a lock longer than the
// threshold, once per wait.
//
// The slow-path names are the kernel's PV ticketlock counters (taken_slow,
// taken_slow_pickup, released_slow, released_slow_kicked);
// pvlock_slow_releases_total is estimated from a sample of one release in
// 16, picked by ticket, each counting 16. A qspin lock
// enters its slow path on any contention (the kernel's lock_slowpath), a
// ticket lock only when a waiter is about to halt. pvlock_lost_wakeups_total
// counts halts that hit the watchdog although the waiter's turn had come; it
// should stay at zero.
//
// Every other event of a qspin lock (pv_wait_node, pv_wait_head,
// pv_wait_again, pv_wait_early, pv_kick_wake, pv_hash_hops (the hash
// slots probed, a count), pv_lock_stealing, lock_pending, ...) is exported
// under its kernel name,
// and pv_head_starving (queue heads that were overtaken for a millisecond
// and closed the lock to stealers) under pvlock's, as
// pvlock_qspin_events_total{lock, mode, event}. The remaining events of any
// other kind go to pvlock_lock_events_total{lock, mode, event}, so no
// counter a lock keeps is ever dropped.
//
// pvlock_halt_duration_seconds is a histogram of how long halts lasted,
// made from the lock's log2 histogram (the kernel's histo_blocked): its
// bucket bounds are the powers of two from 2^10 ns (about 1 µs) to 2^30 ns
// (about 1.07 s), and its sum is the total time waiters spent halted.
//
// # vCPU metrics
//
// For every vCPU of the VMs added to the Collector, with labels vm (the VM's
// name) and vcpu (the vCPU's index):
//
//	pvlock_vcpu_steal_seconds_total       time runnable but waiting for a CPU (VCPU.Steal), during the current or last run
//	pvlock_vcpu_halts_total               halts of the vCPU's waiter, including those a kick had already ended
//	pvlock_vcpu_kicks_received_total      kicks delivered to the vCPU's waiter
//	pvlock_vcpu_halted_seconds_total      time the vCPU's waiter spent halted (polling or asleep)
//	pvlock_vcpu_halt_polls_total          halt-polls begun (KVM's halt_attempted_poll)
//	pvlock_vcpu_halt_polls_success_total  of those, polls that caught their kick (halt_successful_poll)
//	pvlock_vcpu_halt_polls_invalid_total  of those, polls cut short by a runnable sibling vCPU (halt_poll_invalid)
//	pvlock_vcpu_halt_poll_seconds_total   time spent polling, by result: "success" or "fail" (halt_poll_success_ns, halt_poll_fail_ns)
//	pvlock_vcpu_halt_poll_window_seconds  gauge: the current adaptive halt-poll window
//	pvlock_vcpu_sibling_spin_polls        gauge: the current adaptive spin window for waits beside a runnable sibling, in polls
//
// The poll counts are separate metrics because the polls begun include
// the other two: the polls that failed are
// pvlock_vcpu_halt_polls_total - pvlock_vcpu_halt_polls_success_total
// (give or take the one poll a vCPU may be running during the scrape),
// and the invalid ones are among them, as their time is in
// result="fail". The result label of the poll time takes the values
// success and fail only, and each poll's time goes to exactly one, so its
// sum over result is the total time spent polling.
//
// The halt and kick counts are kept for the vCPU's lifetime; steal time
// restarts with every run of the VM, which Prometheus treats as a counter
// reset. Summed over the vCPUs of all VMs, the vCPU halts and kicks equal the
// locks' pvlock_halts_total and pvlock_kicks_total when every lock user is a
// vCPU; halts of ordinary goroutines appear only in the lock metrics.
//
// # Rules and dashboard
//
// The mixin directory at the root of the module holds recording rules,
// alerts with promtool unit tests, and a Grafana dashboard built on these
// metrics, ready to vendor.
//
// # Build information
//
// pvlock_build_info{version, revision, goversion} is always 1, after the
// Prometheus convention: version is the pvlock module's version in the
// binary (from runtime/debug.ReadBuildInfo: "(devel)" when built inside
// the module, "unknown" without build information), revision the VCS
// revision the go command stamped when pvlock is the main module, and
// goversion the Go release.
//
// # Cost
//
// Counting costs the locks one uncontended atomic add per event.
// Turning pvlock.Policy.Stats off stops the per-acquisition counts; the slow-path
// counts are always kept. A scrape sums each lockstat.Stats over all vCPU
// slots (a few microseconds) and reads the scheduler statistics of each
// running vCPU's thread in /proc once, for its steal time.
package metrics
