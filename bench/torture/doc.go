// Package torture is pvlock's lock torture, after the kernel's
// locktorture: writer vCPUs, overcommitted on pinned threads, hammer one
// lock with random critical sections while the torture checks that the
// lock keeps its promises. It is the reliability counterpart of the
// bench package's throughput lab.
//
//	lk, err := torture.LookupLock("pv-ticket")
//	if err != nil { ... }
//	res, err := torture.Run(ctx, torture.Config{
//		Lock: lk, Overcommit: 4, Duration: 10 * time.Minute, Interval: 10 * time.Second,
//		LongHold: 10 * time.Millisecond, Stutter: 2 * time.Second, Shuffle: 100 * time.Millisecond,
//		Out: os.Stdout,
//	})
//	if err == nil && !res.OK() { ... } // the last line says FAILURE and why
//
// The same from the command line: pvbench torture -lock pv-ticket -oc 4 -duration 10m.
//
// # What the writers do
//
// Each writer vCPU loops: lock, critical section, unlock, a little random
// work. The critical section does random work (seeded per vCPU by
// Config.Seed) and, after locktorture's spin-lock hold model, rarely holds
// the lock for Config.LongHold to force massive contention, now and then
// for 2µs, and now and then yields its CPU while holding the lock (a
// lock-holder preemption on demand). Between acquisitions a writer obeys
// two disturbances:
//
//	stutter   every Stutter, all writers pause for Stutter/4 and restart
//	          together, so that they re-contend at once. A paused writer
//	          sleeps until shortly before the restart and only then polls
//	          the shared phase word: it neither burns its CPU nor restarts
//	          late.
//	shuffle   every Shuffle, the writers re-pin their own threads
//	          (pvlock.VCPU.Repin) to a new placement: all CPUs but a
//	          rotating one, one random CPU each, or all CPUs.
//
// # The rw mode
//
// With Config.Readers (pvbench torture -readers N), the torture is
// locktorture's rw_lock: that many reader vCPUs run beside the writers,
// read-locking the lock (it must have a read side, locks.RWLocker: the
// sync.RWMutex, native-rwlock, pv-rwlock and pv-rwlock-short kinds) with
// the same random holds. A reader counts itself among the readers inside
// and must find no writer's ID in the owner word, on entry and on exit,
// and the shared counters, which only writers change, unchanged across its
// hold; a writer must find no reader inside as well as no other writer.
// Readers' and writers' acquisitions are judged for fairness apart, and a
// reader waiting in RLock is watched for starvation and stalls like a
// writer.
//
// # What it checks
//
//	mutual exclusion  on entry a writer swaps its ID into an owner word,
//	                  which must have been empty; on exit it must still
//	                  find its ID there. A shared counter is only ever
//	                  loaded and stored, never atomically incremented, so
//	                  an overlap both shows inside the critical section and
//	                  loses updates that the end of the run counts; a plain
//	                  counter lets the race detector watch too.
//	lost wake-up      during the run the halt watchdog
//	                  (pvlock.Policy.HaltTimeout) is Config.Watchdog, and the
//	                  lock's own statistics count a halt that outlives it
//	                  (halt_timeouts) and, if the waiter's turn had come
//	                  meanwhile and no kick follows within one more
//	                  watchdog period, a lost wake-up (lost_wakeups). Both
//	                  must stay 0. The previous watchdog is restored afterwards.
//	starvation        a writer waiting in Lock longer than StarveAfter while
//	                  the others acquire the lock more than 4·VCPUs times
//	                  (no FIFO queue ahead of it could explain that many);
//	                  reported but not a failure for a lock registered as
//	                  Unfair.
//	stall             a writer waiting in Lock longer than StallAfter, or
//	                  still stuck in Lock after the run (then Run gives up
//	                  on it rather than hang).
//	unfairness        locktorture's "???" (the busiest writer made more than
//	                  twice the acquisitions of the idlest): a hint, and a
//	                  failure only with Config.FailUnfair.
//
// # Report
//
// Every Interval a line like locktorture's, with per-vCPU Max/Min
// acquisitions of the interval flagged "???" when max/2 > min and "!!!"
// when something failed:
//
//	[    10.0s] pv-ticket:  Total: 73214  Interval: 73214  Max/Min: 20404/17238   Fail: 0  Lost: 0  Timeouts: 0  Starved: 0  Stalls: 0
//
// then a summary of the whole run and "End of test: SUCCESS: <lock>",
// "End of test: FAILURE: <lock>: <reasons>" or, when the context ended the
// run early (pvbench torture on SIGINT) with no failure found,
// "End of test: INTERRUPTED: <lock>: ...".
//
// # Locks
//
// Locks are chosen by name (LookupLock) from the registry the lab, the
// torture and the benchmarks share, bench/locks: every lock the lab
// measures (native-ticket, pv-ticket, native-qspin, pv-qspin,
// pv-qspin-nosteal, tas, sync.Mutex and the peers ple-yield and
// preemptable-ticket, and the variants, such as the reader-writer locks
// sync.RWMutex, native-rwlock and pv-rwlock, tortured as exclusive locks
// unless Readers is set) and the torture-only variants pv-ticket-short,
// pv-qspin-short and pv-rwlock-short, whose spin threshold of
// locks.ShortVariantThreshold polls makes nearly every contended
// acquisition halt (locks.TortureNames lists them). The registry marks
// the locks that may starve a waiter by design (Unfair: tas,
// preemptable-ticket) and would name any lock the torture cannot run, with
// the reason (NoTorture). locks.Register adds a lock.
//
// # Fault injection
//
// Built with the pvlock_faults tag, the locks' slow paths delay at random
// inside their race windows (between setting the slowpath flag and the
// re-check, between the release and the kick), so that a torture visits
// the interleavings a lost wake-up needs:
//
//	go test -race -tags pvlock_faults ./bench/torture
package torture
