package torture

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pvlock/pvlock/bench/locks"
	"github.com/pvlock/pvlock/internal/relax"
	"github.com/pvlock/pvlock/pvlock"
)

// Result is what a torture run found.
type Result struct {
	Lock  string
	VCPUs int
	CPUs  []int
	// Elapsed is the length of the run, start-up and wind-down included.
	Elapsed time.Duration
	// Acquisitions is the total over all vCPUs; PerVCPU the count of each.
	Acquisitions uint64
	PerVCPU      []uint64
	// Readers is the number of reader vCPUs (the rw mode), the last ones
	// of PerVCPU; Reads their read acquisitions, part of Acquisitions.
	Readers int
	Reads   uint64
	// Violations counts mutual-exclusion failures seen by the critical
	// sections (a second holder, a torn counter) and updates lost from
	// the shared counters at the end.
	Violations uint64
	// HaltTimeouts and LostWakeups are the lock statistics' counts during
	// the run (always 0 for locks without Stats).
	HaltTimeouts, LostWakeups uint64
	// Starved counts waits in which a vCPU stayed in Lock for longer than
	// StarveAfter (so made no acquisition for that long) while the others
	// acquired the lock more than 4·VCPUs times: more than any FIFO queue
	// ahead of it could explain.
	Starved int
	// Stalls counts waits in Lock longer than StallAfter, however many
	// acquisitions the others made; Stuck the vCPUs still in Lock when
	// the run gave up on them.
	Stalls, Stuck int
	// Unfair is locktorture's "???": the busiest vCPU made more than twice
	// the acquisitions of the idlest over the whole run.
	Unfair bool
	// LongHolds, Stutters and Shuffles count the injected disturbances;
	// Repins the re-pins the vCPUs performed.
	LongHolds, Stutters, Shuffles, Repins uint64
	// LongestHalt is the longest single halt of any vCPU during the run
	// (polling or asleep in kick); the halt watchdog bounds it.
	LongestHalt time.Duration
	// Failures explains every reason the run failed; empty on success.
	Failures []string
	// Interrupted is set when ctx ended the run before Config.Duration: the
	// run proved less than asked, and the last line says INTERRUPTED
	// rather than SUCCESS (a failure found before the end still reads
	// FAILURE).
	Interrupted bool
}

// OK reports whether the run succeeded.
func (r *Result) OK() bool { return len(r.Failures) == 0 }

// Phases of the shared phase word the vCPUs poll between acquisitions.
const (
	phaseRun uint32 = iota
	phasePause
	phaseStop
)

// vcpuState is one writer's counters, padded to its own cache lines:
// written by the vCPU, read by the monitor.
type vcpuState struct {
	acq       atomic.Uint64 // acquisitions completed
	waitSince atomic.Int64  // ns since the start when it entered Lock; 0 when not waiting
	waitMark  atomic.Uint64 // the shared counter when it entered Lock
	repins    atomic.Uint64
	_         [128 - 32]byte
}

// shufflePlan is one placement of every vCPU thread.
type shufflePlan struct {
	sets [][]int
}

type torture struct {
	cfg Config
	lk  sync.Locker
	rw  locks.RWLocker // lk's read side, in the rw mode
	n   int
	// writers is the number of writer vCPUs: vCPUs writers..n-1 are the
	// readers of the rw mode.
	writers int
	cpus    []int
	start   time.Time
	vcpus   []vcpuState

	// running is closed when the first vCPU starts: the run's duration
	// counts from there, not from the creation of the threads, which a
	// loaded host may delay.
	running     chan struct{}
	runningOnce sync.Once

	// Shared state of the critical section.
	owner atomic.Uint64 // vCPU index+1 of the holder, 0 when free
	seq   atomic.Uint64 // load-then-store counter: torn by any overlap
	plain uint64        // plain counter, for the race detector's eyes
	// The rw mode's: readers inside (a writer must find none), and reads
	// done, which the starvation watch counts as passes with seq.
	readers   atomic.Int64
	readsDone atomic.Uint64

	phase    atomic.Uint32
	resumeAt atomic.Int64 // ns since start when a pause ends
	plan     atomic.Pointer[shufflePlan]

	violations atomic.Uint64
	firstViol  atomic.Pointer[string]
	longHolds  atomic.Uint64
	stutters   atomic.Uint64
	shuffles   atomic.Uint64
}

// starvePasses·VCPUs is how many acquisitions by others a waiter must
// see before it counts as starved. In a FIFO lock the others pass a
// waiter at most VCPUs times once it holds its place (one more if a
// holder was mid-way when it looked); the margin covers a waiter
// descheduled between looking and queueing.
const starvePasses = 4

// maxReported bounds the starvation and stall messages kept in a
// Result; the counts stay exact.
const maxReported = 4

// runMu serialises runs: the halt watchdog and the lock statistics are
// process-wide.
var runMu sync.Mutex

// Run tortures cfg.Lock and reports what it found; the returned error is
// for a configuration or start-up problem, a failed torture is a Result
// whose OK is false. Statistics lines go to cfg.Out every cfg.Interval,
// then a final line "End of test: SUCCESS", "End of test: FAILURE: ..." or,
// when ctx ended the run early without a failure, "End of test:
// INTERRUPTED: ..." (Result.Interrupted). Runs in one process are
// serialised.
//
// If the lock hangs for good, so that some vCPUs never return from Lock,
// Run gives up on them after a grace period and reports them as Stuck:
// their threads are left behind, blocked, rather than hang the caller.
func Run(ctx context.Context, cfg Config) (Result, error) {
	cfg, err := cfg.WithDefaults()
	if err != nil {
		return Result{}, err
	}
	var vcfg pvlock.Config
	if cfg.VCPUs > 0 {
		vcfg = pvlock.Config{VCPUs: cfg.VCPUs, CPUs: cfg.CPUs}
	} else if vcfg, err = pvlock.Overcommit(cfg.Overcommit, cfg.CPUs); err != nil {
		return Result{}, fmt.Errorf("torture: %w", err)
	}
	writers := vcfg.VCPUs
	if cfg.Readers > 0 {
		if writers+cfg.Readers > pvlock.MaxVCPUs {
			return Result{}, fmt.Errorf("torture: %d writers and %d readers exceed pvlock.MaxVCPUs (%d)", writers, cfg.Readers, pvlock.MaxVCPUs)
		}
		vcfg.VCPUs += cfg.Readers
	}
	vcfg.Name = "torture-" + cfg.Lock.Name
	vcfg.Pinning = cfg.Pinning
	vm, err := pvlock.NewVM(vcfg)
	if err != nil {
		return Result{}, fmt.Errorf("torture: %w", err)
	}
	runMu.Lock()
	defer runMu.Unlock()
	defer setWatchdog(setWatchdog(cfg.Watchdog))

	t := &torture{cfg: cfg, lk: cfg.Lock.New(), n: len(vm.VCPUs()), writers: writers, cpus: vm.CPUs(), running: make(chan struct{})}
	if cfg.Readers > 0 {
		t.rw = t.lk.(locks.RWLocker) // checked by WithDefaults
	}
	t.vcpus = make([]vcpuState, t.n)
	return t.run(ctx, vm), nil
}

func (t *torture) now() int64 { return max(1, int64(time.Since(t.start))) }

// violation records a mutual-exclusion failure seen inside a critical
// section.
func (t *torture) violation(format string, args ...any) {
	t.violations.Add(1)
	msg := fmt.Sprintf(format, args...)
	t.firstViol.CompareAndSwap(nil, &msg)
}

func (t *torture) run(ctx context.Context, vm *pvlock.VM) Result {
	cfg := t.cfg
	res := Result{Lock: cfg.Lock.Name, VCPUs: t.n, CPUs: t.cpus, Readers: t.n - t.writers}
	var baseTO, baseLW uint64
	if cfg.Lock.Stats != nil {
		baseTO, baseLW = cfg.Lock.Stats()
	}
	mode := ""
	if t.rw != nil {
		mode = fmt.Sprintf(" (rw: %d writers, %d readers)", t.writers, t.n-t.writers)
	}
	fmt.Fprintf(cfg.Out, "torture %s: %d vCPUs%s on CPUs %v (%.3gx), pinning %v, seed %d, duration %v, work %d, long hold %v per %d, stutter %v, shuffle %v, watchdog %v\n",
		cfg.Lock.Name, t.n, mode, t.cpus, float64(t.n)/float64(len(t.cpus)), cfg.Pinning, cfg.Seed, cfg.Duration,
		cfg.Work, cfg.LongHold, cfg.LongHoldEvery, cfg.Stutter, cfg.Shuffle, cfg.Watchdog)

	for _, v := range vm.VCPUs() {
		v.Waiter().ResetCounters()
	}

	t.start = time.Now()
	errc := make(chan error, 1)
	go func() { errc <- vm.Run(ctx, t.writer) }()
	select {
	case <-t.running:
	case <-ctx.Done():
	case err := <-errc:
		errc <- err // for the monitor, which reports it
	}

	done := make(chan struct{})
	var ctl sync.WaitGroup
	if cfg.Stutter > 0 {
		ctl.Go(func() { t.stutter(done) })
	}
	if cfg.Shuffle > 0 {
		ctl.Go(func() { t.shuffle(done) })
	}

	runErr, finished := t.monitor(ctx, errc, &res)
	t.phase.Store(phaseStop)
	close(done)
	ctl.Wait()
	if !finished {
		// A vCPU may be finishing a long hold or a halt; one still in
		// Lock a stall period later is stuck.
		grace := cfg.StallAfter + cfg.LongHold
		select {
		case runErr = <-errc:
			finished = true
		case <-time.After(grace):
		}
	}
	res.Elapsed = time.Since(t.start)
	t.finish(&res, finished)
	for _, v := range vm.VCPUs() {
		res.LongestHalt = max(res.LongestHalt, time.Duration(v.Waiter().Counters().MaxHaltNanos))
	}
	if cfg.Lock.Stats != nil {
		to, lw := cfg.Lock.Stats()
		res.HaltTimeouts, res.LostWakeups = to-baseTO, lw-baseLW
	}
	if runErr != nil {
		res.Failures = append(res.Failures, fmt.Sprintf("a vCPU failed: %v", runErr))
	}
	t.judge(&res)
	t.report(&res)
	return res
}

// writer is the workload of every vCPU: lock, check and disturb the
// shared state, unlock, repeat; between acquisitions it obeys the stutter
// phase and the shuffle plan.
func (t *torture) writer(ctx context.Context, v *pvlock.VCPU) error {
	// The VM cancels ctx when any vCPU fails: stop the others too.
	defer context.AfterFunc(ctx, func() { t.phase.Store(phaseStop) })()
	t.runningOnce.Do(func() { close(t.running) })
	i := v.Index()
	me := uint64(i) + 1
	st := &t.vcpus[i]
	rng := rand.New(rand.NewPCG(t.cfg.Seed, uint64(i)+0x9e3779b97f4a7c15))
	var plan *shufflePlan
	for {
		switch t.phase.Load() {
		case phaseStop:
			return nil
		case phasePause:
			if !t.stutterWait() {
				return nil
			}
		}
		if p := t.plan.Load(); p != plan {
			plan = p
			if err := v.Repin(p.sets[i]); err != nil {
				return fmt.Errorf("shuffle: %w", err)
			}
			st.repins.Add(1)
		}
		st.waitMark.Store(t.passes())
		st.waitSince.Store(t.now())
		if i >= t.writers {
			t.rw.RLock()
			st.waitSince.Store(0)
			t.readCritical(me, rng)
			t.rw.RUnlock()
			t.readsDone.Add(1)
		} else {
			t.lk.Lock()
			st.waitSince.Store(0)
			t.critical(me, rng)
			t.lk.Unlock()
		}
		st.acq.Add(1)
		spin(rng.Uint32N(uint32(t.cfg.Work) + 1))
	}
}

// critical is the checked critical section. Any overlap of two holders
// shows as a non-zero owner on entry, a foreign owner on exit, or a
// change of seq under our feet (seq is only ever loaded and stored, never
// atomically incremented, so an overlap also loses updates that the end
// of the run counts).
func (t *torture) critical(me uint64, rng *rand.Rand) {
	if prev := t.owner.Swap(me); prev != 0 {
		t.violation("vCPU %d entered the critical section held by vCPU %d", me-1, prev-1)
	}
	// The rw mode: a writer sees nobody. The owner word is set before
	// the readers are counted and a reader counts itself before it looks
	// at the owner (all sequentially consistent atomics), so of a writer
	// and a reader inside together at least one sees the other.
	if r := t.readers.Load(); r != 0 {
		t.violation("writer vCPU %d entered the critical section with %d readers inside", me-1, r)
	}
	c := t.seq.Load()
	if !t.cfg.noPlain {
		t.plain++
	}
	t.hold(rng)
	if now := t.seq.Load(); now != c {
		t.violation("the shared counter moved from %d to %d inside vCPU %d's critical section", c, now, me-1)
	}
	t.seq.Store(c + 1)
	if r := t.readers.Load(); r != 0 {
		t.violation("writer vCPU %d found %d readers inside when leaving", me-1, r)
	}
	if !t.owner.CompareAndSwap(me, 0) {
		t.violation("vCPU %d found the owner word at %d (vCPU index+1) when leaving", me-1, t.owner.Load())
	}
}

// readCritical is the rw mode's checked read-side critical section: a
// reader must never see a writer inside. It counts itself among the
// readers, then finds the owner word empty on entry and on exit, and the
// shared counters (which only writers change) unchanged across its hold;
// the plain counter's read lets the race detector watch too.
func (t *torture) readCritical(me uint64, rng *rand.Rand) {
	t.readers.Add(1)
	if w := t.owner.Load(); w != 0 {
		t.violation("reader vCPU %d entered the critical section held by writer vCPU %d", me-1, w-1)
	}
	c := t.seq.Load()
	var p uint64
	if !t.cfg.noPlain {
		p = t.plain
	}
	t.hold(rng)
	if now := t.seq.Load(); now != c {
		t.violation("the shared counter moved from %d to %d inside reader vCPU %d's critical section", c, now, me-1)
	}
	if !t.cfg.noPlain && t.plain != p {
		t.violation("the plain counter moved from %d to %d inside reader vCPU %d's critical section", p, t.plain, me-1)
	}
	if w := t.owner.Load(); w != 0 {
		t.violation("reader vCPU %d found writer vCPU %d inside when leaving", me-1, w-1)
	}
	t.readers.Add(-1)
}

// passes counts the acquisitions made so far, as the starvation watch
// counts them: writes (seq) and, in the rw mode, reads.
func (t *torture) passes() uint64 { return t.seq.Load() + t.readsDone.Load() }

// hold spends the critical section's time, after locktorture's spin-lock
// hold model: short random work; rarely a long hold to force massive
// contention; now and then a 2µs delay or a yield of the CPU while
// holding (lock-holder preemption on demand).
func (t *torture) hold(rng *rand.Rand) {
	spin(rng.Uint32N(uint32(t.cfg.Work) + 1))
	n := uint64(t.n)
	switch {
	case t.cfg.LongHold > 0 && rng.Uint64N(uint64(t.cfg.LongHoldEvery)) == 0:
		t.longHolds.Add(1)
		busyWait(t.cfg.LongHold)
	case rng.Uint64N(400*n) == 0:
		busyWait(2 * time.Microsecond)
	case rng.Uint64N(20000*n) == 0:
		relax.Yield()
	}
}

func spin(n uint32) {
	for ; n > 0; n-- {
		relax.Pause(1)
	}
}

func busyWait(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
		relax.Pause(16)
	}
}

// stutterWait parks a vCPU for a stutter pause. It sleeps until shortly
// before the announced restart and only then spins on the phase word, so
// that paused vCPUs neither burn their CPUs nor restart late: they all
// re-contend at once. It reports false if the run stops instead.
func (t *torture) stutterWait() bool {
	const spinWindow = 200 * time.Microsecond
	const overrun = 2 * time.Millisecond // spin this long past a late restart, then sleep again
	for {
		switch t.phase.Load() {
		case phaseRun:
			return true
		case phaseStop:
			return false
		}
		left := time.Duration(t.resumeAt.Load() - t.now())
		switch {
		case left > spinWindow:
			time.Sleep(min(left-spinWindow, time.Millisecond))
		case left > -overrun:
			relax.Pause(16)
		default:
			time.Sleep(100 * time.Microsecond)
		}
	}
}

// stutter alternates run phases of Stutter with pauses of Stutter/4.
func (t *torture) stutter(done <-chan struct{}) {
	run := t.cfg.Stutter
	pause := max(time.Millisecond, run/4)
	timer := time.NewTimer(run)
	defer timer.Stop()
	for {
		select {
		case <-done:
			return
		case <-timer.C:
		}
		t.resumeAt.Store(t.now() + int64(pause))
		if !t.phase.CompareAndSwap(phaseRun, phasePause) {
			return // stopping
		}
		t.stutters.Add(1)
		timer.Reset(pause)
		select {
		case <-done:
			return
		case <-timer.C:
		}
		if !t.phase.CompareAndSwap(phasePause, phaseRun) {
			return
		}
		timer.Reset(run)
	}
}

// shuffle publishes a new placement of the vCPU threads every Shuffle,
// cycling through three kinds, like the kernel's torture shuffler and
// then some: every thread on all CPUs but one (the idle CPU rotates; on
// one CPU, on that CPU), every thread on one random CPU, every thread
// free on all CPUs.
func (t *torture) shuffle(done <-chan struct{}) {
	rng := rand.New(rand.NewPCG(t.cfg.Seed, 0x5eed5eed))
	tick := time.NewTicker(t.cfg.Shuffle)
	defer tick.Stop()
	for round := 0; ; round++ {
		select {
		case <-done:
			return
		case <-tick.C:
		}
		p := &shufflePlan{sets: make([][]int, t.n)}
		switch round % 3 {
		case 0:
			idle := t.cpus[(round/3)%len(t.cpus)]
			var set []int
			for _, c := range t.cpus {
				if c != idle || len(t.cpus) == 1 {
					set = append(set, c)
				}
			}
			for i := range p.sets {
				p.sets[i] = set
			}
		case 1:
			for i := range p.sets {
				p.sets[i] = []int{t.cpus[rng.IntN(len(t.cpus))]}
			}
		case 2:
			for i := range p.sets {
				p.sets[i] = t.cpus
			}
		}
		t.plan.Store(p)
		t.shuffles.Add(1)
	}
}

// monitor prints a statistics line every Interval and watches for
// starved and stalled vCPUs until the duration is over, ctx ends or the
// VM stops. It reports the VM's error and whether the VM has stopped.
func (t *torture) monitor(ctx context.Context, errc <-chan error, res *Result) (error, bool) {
	cfg := t.cfg
	tick := time.NewTicker(min(cfg.Interval, cfg.StarveAfter/4, 50*time.Millisecond))
	defer tick.Stop()
	end := time.NewTimer(cfg.Duration)
	defer end.Stop()

	last := make([]uint64, t.n)
	deltas := make([]uint64, t.n)
	seen := make([]int64, t.n) // the wait already reported as starved or stalled
	state := make([]int, t.n)  // 0 nothing reported, 1 starved, 2 stalled
	lastLine := time.Now()
	var baseTO, baseLW, lastTO, lastLW uint64
	if cfg.Lock.Stats != nil {
		baseTO, baseLW = cfg.Lock.Stats()
	}
	for {
		stop := false
		select {
		case err := <-errc:
			// The vCPUs also stop on ctx: an interrupt may win this race.
			res.Interrupted = ctx.Err() != nil
			return err, true
		case <-ctx.Done():
			res.Interrupted = true
			stop = true
		case <-end.C:
			stop = true
		case <-tick.C:
		}
		t.watchWaits(res, seen, state)
		if !stop && time.Since(lastLine) < cfg.Interval {
			continue
		}
		lastLine = time.Now()
		var total, sum uint64
		for i := range t.vcpus {
			c := t.vcpus[i].acq.Load()
			deltas[i] = c - last[i]
			last[i] = c
			total += c
			sum += deltas[i]
		}
		hi, lo, readers, unfair := t.fairness(deltas)
		var to, lw uint64
		if cfg.Lock.Stats != nil {
			a, b := cfg.Lock.Stats()
			to, lw = a-baseTO, b-baseLW
		}
		fail := t.violations.Load()
		flag := ""
		if unfair {
			flag = "???"
		}
		alarm := ""
		if fail > 0 || lw > lastLW || to > lastTO || res.Stalls > 0 || res.Starved > 0 {
			alarm = "!!!"
		}
		lastTO, lastLW = to, lw
		fmt.Fprintf(cfg.Out, "%s %s:  Total: %d  Interval: %d  Max/Min: %d/%d%s %s  Fail: %d  Lost: %d  Timeouts: %d  Starved: %d  Stalls: %d %s\n",
			t.stamp(), cfg.Lock.Name, total, sum, hi, lo, readers, flag, fail, lw, to, res.Starved, res.Stalls, alarm)
		if stop {
			return nil, false
		}
	}
}

// watchWaits looks at every vCPU waiting in Lock and reports, once per
// wait, a starved one (waited longer than StarveAfter while the others
// acquired the lock more than VCPUs times) and a stalled one (waited
// longer than StallAfter).
func (t *torture) watchWaits(res *Result, seen []int64, state []int) {
	cfg := t.cfg
	now := t.now()
	for i := range t.vcpus {
		st := &t.vcpus[i]
		since := st.waitSince.Load()
		if since == 0 {
			continue
		}
		if seen[i] != since {
			seen[i], state[i] = since, 0
		}
		waited := time.Duration(now - since)
		passed := t.passes() - st.waitMark.Load()
		var msg string
		switch {
		case state[i] < 2 && waited > cfg.StallAfter:
			state[i] = 2
			res.Stalls++
			msg = fmt.Sprintf("vCPU %d stalled: waited %v in Lock (the others acquired it %d times meanwhile)", i, waited.Round(time.Millisecond), passed)
		case state[i] < 1 && waited > cfg.StarveAfter && passed > starvePasses*uint64(t.n):
			state[i] = 1
			res.Starved++
			msg = fmt.Sprintf("vCPU %d starved: waited %v in Lock while the others acquired it %d times", i, waited.Round(time.Millisecond), passed)
		default:
			continue
		}
		if res.Starved+res.Stalls <= maxReported && (state[i] == 2 || !cfg.Lock.Unfair) {
			res.Failures = append(res.Failures, msg)
		}
		fmt.Fprintf(cfg.Out, "%s %s: %s !!!\n", t.stamp(), cfg.Lock.Name, msg)
	}
}

func (t *torture) stamp() string {
	return fmt.Sprintf("[%8.1fs]", time.Since(t.start).Seconds())
}

// fairness returns the busiest and the idlest writer's counts, in the rw
// mode the readers' as a report fragment ("  Readers: <sum> Max/Min:
// <hi>/<lo>"), and whether either role is unfair (locktorture's "???":
// max/2 > min). Readers and writers are judged apart: a read is much
// cheaper than a write.
func (t *torture) fairness(counts []uint64) (hi, lo uint64, readers string, unfair bool) {
	hi, lo = maxMin(counts[:t.writers])
	unfair = hi/2 > lo
	if r := counts[t.writers:]; len(r) > 0 {
		rhi, rlo := maxMin(r)
		var sum uint64
		for _, c := range r {
			sum += c
		}
		readers = fmt.Sprintf("  Readers: %d Max/Min: %d/%d", sum, rhi, rlo)
		unfair = unfair || rhi/2 > rlo
	}
	return hi, lo, readers, unfair
}

func maxMin(v []uint64) (hi, lo uint64) {
	if len(v) == 0 {
		return 0, 0
	}
	hi, lo = v[0], v[0]
	for _, x := range v[1:] {
		hi, lo = max(hi, x), min(lo, x)
	}
	return hi, lo
}

// finish collects the counts once the vCPUs have stopped (or were given
// up on) and checks the shared counters against them.
func (t *torture) finish(res *Result, finished bool) {
	res.PerVCPU = make([]uint64, t.n)
	for i := range t.vcpus {
		st := &t.vcpus[i]
		res.PerVCPU[i] = st.acq.Load()
		res.Acquisitions += res.PerVCPU[i]
		if i >= t.writers {
			res.Reads += res.PerVCPU[i]
		}
		res.Repins += st.repins.Load()
		if !finished && st.waitSince.Load() != 0 {
			res.Stuck++
		}
	}
	res.LongHolds = t.longHolds.Load()
	res.Stutters = t.stutters.Load()
	res.Shuffles = t.shuffles.Load()
	if !finished {
		return // the stuck vCPUs may still run: leave the shared state alone
	}
	writes := res.Acquisitions - res.Reads
	if seq := t.seq.Load(); seq != writes {
		t.violation("the shared counter reads %d after %d write acquisitions: updates were lost", seq, writes)
	}
	if !t.cfg.noPlain && t.plain != writes {
		t.violation("the plain counter reads %d after %d write acquisitions: updates were lost", t.plain, writes)
	}
}

// judge turns the counts into the reasons for FAILURE.
func (t *torture) judge(res *Result) {
	res.Violations = t.violations.Load()
	var fails []string
	if res.Violations > 0 {
		fails = append(fails, fmt.Sprintf("mutual exclusion violated %d times (first: %s)", res.Violations, *t.firstViol.Load()))
	}
	if res.LostWakeups > 0 {
		fails = append(fails, fmt.Sprintf("%d lost wakeups: waiters whose turn had come were not kicked within two %v watchdog periods", res.LostWakeups, t.cfg.Watchdog))
	}
	if res.HaltTimeouts > 0 {
		fails = append(fails, fmt.Sprintf("%d halt timeouts: halts longer than the %v watchdog", res.HaltTimeouts, t.cfg.Watchdog))
	}
	if res.Stuck > 0 {
		fails = append(fails, fmt.Sprintf("%d vCPUs stuck in Lock after the end of the run: abandoned", res.Stuck))
	}
	if res.Acquisitions == 0 {
		fails = append(fails, "no acquisitions at all")
	}
	hi, lo, readers, unfair := t.fairness(res.PerVCPU)
	res.Unfair = unfair
	if res.Unfair && t.cfg.FailUnfair {
		fails = append(fails, fmt.Sprintf("unfair: per-vCPU acquisitions range from %d to %d%s", lo, hi, readers))
	}
	res.Failures = append(fails, res.Failures...)
}

func (t *torture) report(res *Result) {
	hi, lo, readers, _ := t.fairness(res.PerVCPU)
	flag := ""
	if res.Unfair {
		flag = "???"
	}
	fmt.Fprintf(t.cfg.Out, "%s %s: %d vCPUs on %d CPUs, %v:  Total: %d  Max/Min: %d/%d%s %s  Fail: %d  Lost: %d  Timeouts: %d  Starved: %d  Stalls: %d  Long holds: %d  Stutters: %d  Shuffles: %d (repins %d)  Longest halt: %v\n",
		t.stamp(), res.Lock, res.VCPUs, len(res.CPUs), res.Elapsed.Round(time.Millisecond), res.Acquisitions, hi, lo, readers, flag,
		res.Violations, res.LostWakeups, res.HaltTimeouts, res.Starved, res.Stalls, res.LongHolds, res.Stutters, res.Shuffles, res.Repins,
		res.LongestHalt.Round(time.Microsecond))
	if res.OK() && res.Interrupted {
		fmt.Fprintf(t.cfg.Out, "End of test: INTERRUPTED: %s: stopped after %v of %v, no failure until then\n",
			res.Lock, res.Elapsed.Round(time.Millisecond), t.cfg.Duration)
		return
	}
	if res.OK() {
		fmt.Fprintf(t.cfg.Out, "End of test: SUCCESS: %s\n", res.Lock)
		return
	}
	fmt.Fprintf(t.cfg.Out, "End of test: FAILURE: %s: %s\n", res.Lock, strings.Join(res.Failures, "; "))
}

// setWatchdog sets the halt watchdog (pvlock.Policy.HaltTimeout) to d and
// returns the one it replaces.
func setWatchdog(d time.Duration) time.Duration {
	p := pvlock.CurrentPolicy()
	old := p.HaltTimeout
	p.HaltTimeout = d
	pvlock.SetPolicy(p)
	return old
}
