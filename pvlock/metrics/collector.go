package metrics

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/pvlock/pvlock/internal/lockcore"
	"github.com/pvlock/pvlock/kick"
	"github.com/pvlock/pvlock/lockstat"
	"github.com/pvlock/pvlock/pvlock"
)

const namespace = "pvlock"

// The label sets of the metrics: a lock kind, mode and name, and for some
// metrics one label more; a VM and a vCPU.
var (
	lockLabels  = []string{"lock", "mode", "name"}
	eventLabels = []string{"lock", "mode", "name", "event"}
	causeLabels = []string{"lock", "mode", "name", "cause"}
	rwLabels    = []string{"lock", "mode", "name", "role"}
	vcpuLabels  = []string{"vm", "vcpu"}
)

// newDesc returns the descriptor of the metric named name after the
// namespace.
func newDesc(name string, labels []string, help string) *prometheus.Desc {
	return prometheus.NewDesc(prometheus.BuildFQName(namespace, "", name), help, labels, nil)
}

// lockCounter is a row of the lock metrics table: a counter made from a
// lock's events.
type lockCounter struct {
	desc *prometheus.Desc
	// event is the event counted; or, if set, the one counted instead by
	// a lock that does not define event (the other lock kind's name).
	event, or string
	// plus, if set, is added whichever of them is counted: the passive
	// waiters' halts, kicks and wake-ups, which every lock with a gate
	// counts under the same names.
	plus  string
	nanos bool // the events sum nanoseconds, exported in seconds
}

// lockMetric is a counter derived from a lock's events. sources are the
// alternative event sets it can be made from, in order of preference: the
// first set of which the lock defines at least one event is used, and the
// events of that set the lock defines are added up.
type lockMetric struct {
	desc    *prometheus.Desc
	sources [][]string
	// plus are events added to the metric whichever source it is made
	// from.
	plus []string
	// perUnit is the number of event units in one unit of the metric:
	// 1e9 for a sum of nanoseconds exported in seconds, 0 for a count.
	perUnit float64
}

// newLockMetrics returns the lock metrics of the table's rows.
func newLockMetrics(rows []lockCounter) []lockMetric {
	ms := make([]lockMetric, len(rows))
	for i, r := range rows {
		m := &ms[i]
		m.desc = r.desc
		m.sources = [][]string{{r.event}}
		if r.or != "" {
			m.sources = append(m.sources, []string{r.or})
		}
		if r.plus != "" {
			m.plus = []string{r.plus}
		}
		if r.nanos {
			m.perUnit = 1e9
		}
	}
	return ms
}

// lockMetrics are the named lock metrics; see the package doc for the
// table of sources.
var lockMetrics = newLockMetrics([]lockCounter{
	{
		desc: newDesc("halts_total", lockLabels,
			"Waiters that halted (went to sleep until kicked) instead of spinning on, in the lock or outside it (passive waiters)."),
		event: lockcore.Halts,
		plus:  lockcore.PassiveHalts,
	},
	{
		desc: newDesc("kicks_total", lockLabels,
			"Kicks sent by unlockers to halted waiters, in the lock or outside it (admissions of passive waiters)."),
		event: lockcore.ReleasedSlowKicked,
		or:    lockcore.PVKickUnlock,
		plus:  lockcore.PassiveKicks,
	},
	{
		desc: newDesc("spurious_wakeups_total", lockLabels,
			"Halts that ended without a kick."),
		event: lockcore.SpuriousWakeups,
		or:    lockcore.PVSpuriousWakeup,
		plus:  lockcore.PassiveSpurious,
	},
	{
		desc: newDesc("halt_timeouts_total", lockLabels,
			"Halts that ended by the halt watchdog timeout (pvlock.Policy.HaltTimeout)."),
		event: lockcore.HaltTimeouts,
	},
	{
		desc: newDesc("lost_wakeups_total", lockLabels,
			"Halts that timed out although the waiter's turn had come: lost wake-ups, which should never happen."),
		event: lockcore.LostWakeups,
	},
	{
		desc: newDesc("slowpath_entries_total", lockLabels,
			"Entries into the lock's slow path (ticket: taken_slow; qspin: lock_slowpath)."),
		event: lockcore.TakenSlow,
		or:    lockcore.LockSlowpath,
	},
	{
		desc: newDesc("slowpath_pickups_total", lockLabels,
			"Slow-path entries whose re-check found the lock free, so the waiter did not halt (taken_slow_pickup)."),
		event: lockcore.TakenSlowPickup,
	},
	{
		desc: newDesc("slow_releases_total", lockLabels,
			"Unlocks that found the slow-path flag set (released_slow), estimated from a sample of one ticket in 16."),
		event: lockcore.ReleasedSlow,
	},
	{
		desc: newDesc("slow_releases_kicked_total", lockLabels,
			"Slow unlocks that kicked a halted waiter (released_slow_kicked)."),
		event: lockcore.ReleasedSlowKicked,
	},
	{
		desc: newDesc("early_halts_total", lockLabels,
			"Ticket waiters that halted before their spin threshold because the ticket being served belonged to a waiter still waking up (halt_early; qspin's analogue is pv_wait_early)."),
		event: lockcore.HaltEarly,
	},
	{
		desc: newDesc("acquisitions_total", lockLabels,
			"Lock acquisitions, added by each lock 1024 at a time (a native ticket lock: 2048) at release while pvlock.Policy.Stats is on, so the count trails each lock by less than one batch; rates over busy locks are exact."),
		event: lockcore.Acquisitions,
	},
	{
		desc: newDesc("passive_waits_total", lockLabels,
			"Waits outside a saturated lock, halted or parked with no ticket taken or queue node linked, until a release admitted the waiter (concurrency restriction, pvlock.Policy.Restrict)."),
		event: lockcore.PassiveWaits,
	},
	{
		desc: newDesc("passive_watches_total", lockLabels,
			"Passive waits that watched the lock while the waiter's CPU would otherwise have idled (a vCPU with no runnable sibling, or a goroutine of a program with no more Ps than CPUs), rather than halt: releases left them outside until the lock stayed free or the fairness bound admitted them (concurrency restriction)."),
		event: lockcore.PassiveWatches,
	},
	{
		desc: newDesc("passive_culls_total", lockLabels,
			"Passive waits of vCPUs that found room among the active waiters but went outside in exchange for a passive waiter just admitted, or at the end of their turn on a deep queue, so that a saturated lock circulates over all its vCPUs (concurrency restriction)."),
		event: lockcore.PassiveCulls,
	},
	{
		desc: newDesc("passive_beside_total", lockLabels,
			"Admissions by a vCPU's release that would have been swaps (pvlock_passive_culls_total), others still waiting outside, but made none because their waiter slept on the releaser's own CPU while the lock's waiters worked outside it: the next running vCPU that found room among the active waiters stayed in while the admitted one waited for the CPU (concurrency restriction). A subset of pvlock_passive_admissions_total."),
		event: lockcore.AdmittedBeside,
	},
	{
		desc: newDesc("contended_acquisitions_total", lockLabels,
			"Ticket lock acquisitions that had to wait for the lock (acquired_slow; the rest took the fast path)."),
		event: lockcore.AcquiredSlow,
	},
	{
		desc: newDesc("kick_latency_seconds_total", lockLabels,
			"Time unlockers spent issuing the kicks of pv_kick_unlock (qspin: pv_latency_kick); divided by the rate of those kicks, the mean cost of a kick."),
		event: lockcore.PVLatencyKick,
		nanos: true,
	},
	{
		desc: newDesc("wake_latency_seconds_total", lockLabels,
			"Time from a kick to the kicked waiter running again, summed over the kicked halts that timed it (qspin: pv_latency_wake, over pv_kick_wake halts)."),
		event: lockcore.PVLatencyWake,
		nanos: true,
	},
})

// rwMetric is a row of the reader-writer lock's counts by role: a metric
// and its two events, the reader's and the writer's.
type rwMetric struct {
	desc           *prometheus.Desc
	reader, writer string
}

// rwMetrics are the reader-writer lock's counts by role (reader or
// writer).
var rwMetrics = []rwMetric{
	{
		desc: newDesc("rw_acquisitions_total", rwLabels,
			"Reader-writer lock acquisitions by role: read locks (role=reader) and write locks (role=writer), added 1024 at a time per lock as pvlock_acquisitions_total is."),
		reader: lockcore.ReadAcquisitions,
		writer: lockcore.WriteAcquisitions,
	},
	{
		desc: newDesc("rw_slowpath_entries_total", rwLabels,
			"Reader-writer lock acquisitions that queued, by role: readers that found a writer, writers that found the lock held."),
		reader: lockcore.ReadSlowpath,
		writer: lockcore.WriteSlowpath,
	},
	{
		desc: newDesc("rw_halts_total", rwLabels,
			"Halts of reader-writer lock queue heads, by role: a reader waiting for the writer inside, a writer waiting for the readers inside."),
		reader: lockcore.ReadHalts,
		writer: lockcore.WriteHalts,
	},
	{
		desc: newDesc("rw_kicks_total", rwLabels,
			"Kicks of a halted reader-writer lock queue head, by the role of the kicker: the last reader inside, or the writer's unlock."),
		reader: lockcore.ReadKicks,
		writer: lockcore.WriteKicks,
	},
}

// descs are the descriptors of the metrics that no table holds.
var descs = struct {
	qspinEvents, lockEvents, admissions, passive, haltDuration, lockups, nameOverflows *prometheus.Desc
}{
	qspinEvents: newDesc("qspin_events_total", eventLabels,
		"Events of queued spinlocks, by their kernel lock-event name, that no other pvlock metric exports."),
	lockEvents: newDesc("lock_events_total", eventLabels,
		"Events of locks other than qspin that no other pvlock metric exports."),
	admissions: newDesc("passive_admissions_total", causeLabels,
		"Passive waiters admitted back into the lock: by a release that found no active waiter, or by a watching waiter that found the lock left free (cause=drained), or by the fairness bound, by a release or by a watcher itself (cause=fair)."),
	passive: newDesc("passive_waiters", lockLabels,
		"Waiters waiting outside the lock now (passive waits begun less admissions), summed over the locks of the kind and mode."),
	haltDuration: newDesc("halt_duration_seconds", lockLabels,
		"How long halted waiters slept, in log2-spaced buckets."),
	lockups: newDesc("lockups_suspected_total", nil,
		"Waiters that waited for a lock longer than the lockup threshold (pvlock.SetLockupThreshold; off by default) and were reported, once per wait, through the lockup hook."),
	nameOverflows: newDesc("lock_name_overflows_total", nil,
		"Locks given a name after lockstat.MaxLockNames names of their kind existed: they count with the unnamed locks (name=\"\")."),
}

// vcpuSample is what the vCPU metrics are read from: a vCPU and a
// snapshot of its waiter's counters.
type vcpuSample struct {
	v *pvlock.VCPU
	w *kick.Counters
}

// seconds converts a count of nanoseconds to seconds.
func seconds(ns uint64) float64 { return float64(ns) / 1e9 }

// The values of the vCPU metrics, one method each.
func (s vcpuSample) steal() float64           { return s.v.Steal().Seconds() }
func (s vcpuSample) halts() float64           { return float64(s.w.Halts + s.w.EarlyKicks) }
func (s vcpuSample) kicksReceived() float64   { return float64(s.w.KicksReceived) }
func (s vcpuSample) halted() float64          { return seconds(s.w.HaltedNanos) }
func (s vcpuSample) polls() float64           { return float64(s.w.PollsAttempted) }
func (s vcpuSample) pollsSuccessful() float64 { return float64(s.w.PollsSuccessful) }
func (s vcpuSample) pollsInvalid() float64    { return float64(s.w.PollsInvalid) }
func (s vcpuSample) pollWindow() float64      { return seconds(s.w.PollWindowNanos) }
func (s vcpuSample) siblingSpin() float64     { return float64(s.v.SiblingSpin()) }

// vcpuMetric is a metric of every vCPU: its descriptor, its type, and its
// value, read from a vcpuSample.
type vcpuMetric struct {
	desc  *prometheus.Desc
	typ   prometheus.ValueType
	value func(vcpuSample) float64
}

// vcpuMetrics are the per-vCPU metrics with the vCPU labels alone. The
// halt-polling ones follow KVM's halt_attempted_poll, halt_successful_poll
// and halt_poll_invalid: three metrics, not one with a result label,
// because the polls begun are a superset of the other two.
var vcpuMetrics = []vcpuMetric{
	{
		desc: newDesc("vcpu_steal_seconds_total", vcpuLabels,
			"Time the vCPU thread was runnable but waiting for a CPU, during the VM's current or last run."),
		typ:   prometheus.CounterValue,
		value: vcpuSample.steal,
	},
	{
		desc: newDesc("vcpu_halts_total", vcpuLabels,
			"Halts of the vCPU, including those that returned at once because the kick came first."),
		typ:   prometheus.CounterValue,
		value: vcpuSample.halts,
	},
	{
		desc: newDesc("vcpu_kicks_received_total", vcpuLabels,
			"Kicks delivered to the vCPU."),
		typ:   prometheus.CounterValue,
		value: vcpuSample.kicksReceived,
	},
	{
		desc: newDesc("vcpu_halted_seconds_total", vcpuLabels,
			"Time the vCPU spent halted."),
		typ:   prometheus.CounterValue,
		value: vcpuSample.halted,
	},
	{
		desc: newDesc("vcpu_halt_polls_total", vcpuLabels,
			"Halt-polls begun by the vCPU: a superset of pvlock_vcpu_halt_polls_success_total and pvlock_vcpu_halt_polls_invalid_total."),
		typ:   prometheus.CounterValue,
		value: vcpuSample.polls,
	},
	{
		desc: newDesc("vcpu_halt_polls_success_total", vcpuLabels,
			"Halt-polls of the vCPU that caught their kick, so the vCPU did not sleep."),
		typ:   prometheus.CounterValue,
		value: vcpuSample.pollsSuccessful,
	},
	{
		desc: newDesc("vcpu_halt_polls_invalid_total", vcpuLabels,
			"Halt-polls of the vCPU cut short because a sibling vCPU on the same CPU became runnable (failed polls, as far as the poll time is concerned)."),
		typ:   prometheus.CounterValue,
		value: vcpuSample.pollsInvalid,
	},
	{
		desc: newDesc("vcpu_halt_poll_window_seconds", vcpuLabels,
			"The vCPU's current adaptive halt-poll window (grows and shrinks like KVM's halt_poll_ns)."),
		typ:   prometheus.GaugeValue,
		value: vcpuSample.pollWindow,
	},
	{
		desc: newDesc("vcpu_sibling_spin_polls", vcpuLabels,
			"The vCPU's current adaptive spin window, in polls, for PV lock waits while another vCPU on its CPU is runnable."),
		typ:   prometheus.GaugeValue,
		value: vcpuSample.siblingSpin,
	},
}

// vcpuPollSecondsDesc is the time spent halt-polling, after KVM's
// halt_poll_success_ns and halt_poll_fail_ns, split by result: each poll's
// time goes to exactly one.
var vcpuPollSecondsDesc = prometheus.NewDesc("pvlock_vcpu_halt_poll_seconds_total",
	"Time the vCPU spent halt-polling, in polls that caught their kick (result=success) and in polls that did not, cut short or not (result=fail).",
	append(vcpuLabels[:len(vcpuLabels):len(vcpuLabels)], "result"), nil)

// minBucketExp is the exponent of the smallest histogram bound (2^10 ns,
// about 1 µs): a halt is a futex sleep and never shorter, so the finer
// buckets of lockstat.Stats are folded into it.
const minBucketExp = 10

// Options configure a Collector.
type Options struct {
	// Stats lists the lock statistics to export; nil means
	// lockstat.All, which includes every lock kind created later.
	Stats func() []*lockstat.Stats
}

// Collector is a prometheus.Collector for pvlock statistics. It holds no
// counters of its own: every Collect reads the current lock statistics and
// vCPU counters. Its methods are safe for concurrent use.
type Collector struct {
	stats func() []*lockstat.Stats

	mu  sync.Mutex
	vms []*pvlock.VM
}

// NewCollector returns a Collector configured by opts. It exports no vCPU
// metrics until VMs are added with AddVM.
func NewCollector(opts Options) *Collector {
	c := &Collector{stats: opts.Stats}
	if c.stats == nil {
		c.stats = lockstat.All
	}
	return c
}

// AddVM makes the Collector export the vCPUs of vm. VM names label the
// series, so two VMs with the same name cannot both be added.
func (c *Collector) AddVM(vm *pvlock.VM) error {
	if vm == nil {
		return errors.New("metrics: AddVM of a nil VM")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, old := range c.vms {
		if old == vm {
			return fmt.Errorf("metrics: VM %s is already added", vm.Name())
		}
		if old.Name() == vm.Name() {
			return fmt.Errorf("metrics: another VM named %s is already added; VM names label the vCPU metrics and must be unique", vm.Name())
		}
	}
	c.vms = append(c.vms, vm)
	return nil
}

// RemoveVM stops exporting the vCPUs of vm and reports whether it had been
// added.
func (c *Collector) RemoveVM(vm *pvlock.VM) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := slices.Index(c.vms, vm)
	if i < 0 {
		return false
	}
	c.vms = slices.Delete(c.vms, i, i+1)
	return true
}

// Describe sends the descriptors of every metric the Collector can export.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range lockMetrics {
		ch <- m.desc
	}
	for _, m := range vcpuMetrics {
		ch <- m.desc
	}
	for _, m := range rwMetrics {
		ch <- m.desc
	}
	for _, d := range []*prometheus.Desc{
		descs.qspinEvents, descs.lockEvents, descs.haltDuration, descs.admissions, descs.passive, descs.nameOverflows, descs.lockups,
		vcpuPollSecondsDesc, buildInfoDesc,
	} {
		ch <- d
	}
}

// Collect reads the statistics and sends them as constant metrics.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	collectBuildInfo(ch)
	ch <- prometheus.MustNewConstMetric(descs.lockups, prometheus.CounterValue, float64(pvlock.LockupsSuspected()))
	if n := lockstat.NameOverflows(); n > 0 {
		ch <- prometheus.MustNewConstMetric(descs.nameOverflows, prometheus.CounterValue, float64(n))
	}
	for _, s := range c.stats() {
		if snap := s.Snapshot(); inUse(snap) {
			collectLock(ch, snap)
		}
	}
	c.mu.Lock()
	vms := slices.Clone(c.vms)
	c.mu.Unlock()
	for _, vm := range vms {
		collectVM(ch, vm)
	}
}

// inUse reports whether a lock kind and mode has counted anything: one
// whose counters are all zero (a mode no lock of the program uses) exports
// no series at all.
func inUse(snap lockstat.Snapshot) bool {
	if snap.BlockedNanos != 0 {
		return true
	}
	for _, n := range snap.Events {
		if n != 0 {
			return true
		}
	}
	for _, n := range snap.Blocked {
		if n != 0 {
			return true
		}
	}
	return false
}

// collectLock sends the metrics of one lock kind and mode.
func collectLock(ch chan<- prometheus.Metric, snap lockstat.Snapshot) {
	used := make(map[string]bool, len(snap.Events))
	for _, m := range lockMetrics {
		sum, ok := m.value(snap.Events, used)
		if ok {
			v := float64(sum)
			if m.perUnit != 0 {
				v /= m.perUnit
			}
			ch <- prometheus.MustNewConstMetric(m.desc, prometheus.CounterValue, v, snap.Kind, snap.Mode, snap.Name)
		}
	}
	collectAdmissions(ch, snap, used)
	collectRoles(ch, snap, used)
	rest := make([]string, 0, len(snap.Events))
	for ev := range snap.Events {
		if !used[ev] {
			rest = append(rest, ev)
		}
	}
	slices.Sort(rest)
	desc := descs.lockEvents
	if snap.Kind == lockcore.KindQspin {
		desc = descs.qspinEvents
	}
	for _, ev := range rest {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, float64(snap.Events[ev]), snap.Kind, snap.Mode, snap.Name, ev)
	}
	count, sum, buckets := haltHistogram(snap)
	ch <- prometheus.MustNewConstHistogram(descs.haltDuration, count, sum, buckets, snap.Kind, snap.Mode, snap.Name)
}

// collectRoles sends the reader-writer lock's counts by role, for a lock
// whose statistics have them, and marks those events used.
func collectRoles(ch chan<- prometheus.Metric, snap lockstat.Snapshot, used map[string]bool) {
	for _, m := range rwMetrics {
		for _, r := range []struct{ ev, role string }{{m.reader, "reader"}, {m.writer, "writer"}} {
			if n, ok := snap.Events[r.ev]; ok {
				used[r.ev] = true
				ch <- prometheus.MustNewConstMetric(m.desc, prometheus.CounterValue, float64(n), snap.Kind, snap.Mode, snap.Name, r.role)
			}
		}
	}
}

// collectAdmissions sends the admissions by cause and the passive
// waiters gauge of a lock whose statistics have the gate's events, and
// marks those events used.
func collectAdmissions(ch chan<- prometheus.Metric, snap lockstat.Snapshot, used map[string]bool) {
	waits, ok := snap.Events[lockcore.PassiveWaits]
	if !ok {
		return
	}
	admitted := uint64(0)
	for _, c := range []struct{ ev, cause string }{
		{lockcore.AdmittedDrained, "drained"}, {lockcore.AdmittedFair, "fair"}, {lockcore.AdmittedStacked, "stacked"},
	} {
		n := snap.Events[c.ev]
		admitted += n
		used[c.ev] = true
		ch <- prometheus.MustNewConstMetric(descs.admissions, prometheus.CounterValue, float64(n), snap.Kind, snap.Mode, snap.Name, c.cause)
	}
	// A waiter counts its wait a moment after it counted itself in the
	// gate, and its admitter may count first: never report less than 0.
	ch <- prometheus.MustNewConstMetric(descs.passive, prometheus.GaugeValue, float64(waits-min(waits, admitted)), snap.Kind, snap.Mode, snap.Name)
}

// value derives the metric from a lock's events and marks the events it
// used; ok is false if the lock defines none of its sources.
func (m lockMetric) value(events map[string]uint64, used map[string]bool) (sum uint64, ok bool) {
	for _, src := range m.sources {
		for _, ev := range src {
			if n, has := events[ev]; has {
				sum += n
				used[ev] = true
				ok = true
			}
		}
		if ok {
			break
		}
	}
	for _, ev := range m.plus {
		if n, has := events[ev]; has {
			sum += n
			used[ev] = true
			ok = true
		}
	}
	return sum, ok
}

// haltHistogram turns a lockstat.Stats log2 histogram (bucket i counts halts of
// [2^(i-1), 2^i) ns) into Prometheus cumulative buckets keyed by their upper
// bound in seconds. The last lockstat.Stats bucket has no upper bound and is
// counted only in +Inf (the count).
func haltHistogram(snap lockstat.Snapshot) (count uint64, sum float64, buckets map[float64]uint64) {
	buckets = make(map[float64]uint64, lockstat.HistBuckets-minBucketExp)
	for i, n := range snap.Blocked {
		count += n
		if i >= minBucketExp && i < lockstat.HistBuckets-1 {
			buckets[float64(uint64(1)<<i)/1e9] = count
		}
	}
	return count, float64(snap.BlockedNanos) / 1e9, buckets
}

// collectVM sends the metrics of every vCPU of vm.
func collectVM(ch chan<- prometheus.Metric, vm *pvlock.VM) {
	for _, v := range vm.VCPUs() {
		labels := []string{vm.Name(), strconv.Itoa(v.Index())}
		w := v.Waiter().Counters()
		for _, m := range vcpuMetrics {
			ch <- prometheus.MustNewConstMetric(m.desc, m.typ, m.value(vcpuSample{v, &w}), labels...)
		}
		ch <- prometheus.MustNewConstMetric(vcpuPollSecondsDesc, prometheus.CounterValue, seconds(w.PollSuccessNanos), append(labels, "success")...)
		ch <- prometheus.MustNewConstMetric(vcpuPollSecondsDesc, prometheus.CounterValue, seconds(w.PollFailNanos), append(labels, "fail")...)
	}
}

// NewRegistry returns a fresh registry holding c and the standard Go
// runtime and process collectors: what a program that serves only pvlock
// metrics needs. It panics only if c is nil.
func NewRegistry(c *Collector) *prometheus.Registry {
	if c == nil {
		panic("metrics: NewRegistry of a nil Collector")
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		c,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return reg
}
