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

var lockLabels = []string{"lock", "mode", "name"}

// lockMetric is a counter derived from a lock's events. sources are the
// alternative event sets it can be made from, in order of preference: the
// first set of which the lock defines at least one event is used, and the
// events of that set the lock defines are added up.
type lockMetric struct {
	desc    *prometheus.Desc
	sources [][]string
	// plus are events added to the metric whichever source it is made
	// from: the passive waiters' halts, kicks and wake-ups, which every
	// lock with a gate counts under the same names.
	plus []string
	// perUnit is the number of event units in one unit of the metric:
	// 1e9 for a sum of nanoseconds exported in seconds, 0 for a count.
	perUnit float64
}

func newLockMetric(name, help string, sources ...[]string) lockMetric {
	return lockMetric{
		desc:    prometheus.NewDesc(prometheus.BuildFQName(namespace, "", name), help, lockLabels, nil),
		sources: sources,
	}
}

// with returns m with plus events.
func (m lockMetric) with(plus ...string) lockMetric {
	m.plus = plus
	return m
}

// nanos returns m for events that sum nanoseconds, exported in seconds.
func (m lockMetric) nanos() lockMetric {
	m.perUnit = 1e9
	return m
}

// lockMetrics are the named lock metrics; see the package doc for the
// table of sources.
var lockMetrics = []lockMetric{
	newLockMetric("halts_total",
		"Waiters that halted (went to sleep until kicked) instead of spinning on, in the lock or outside it (passive waiters).",
		[]string{lockcore.Halts}).with(lockcore.PassiveHalts),
	newLockMetric("kicks_total",
		"Kicks sent by unlockers to halted waiters, in the lock or outside it (admissions of passive waiters).",
		[]string{lockcore.ReleasedSlowKicked}, []string{lockcore.PVKickUnlock}).with(lockcore.PassiveKicks),
	newLockMetric("spurious_wakeups_total",
		"Halts that ended without a kick.",
		[]string{lockcore.SpuriousWakeups}, []string{lockcore.PVSpuriousWakeup}).with(lockcore.PassiveSpurious),
	newLockMetric("halt_timeouts_total",
		"Halts that ended by the halt watchdog timeout (pvlock.Policy.HaltTimeout).",
		[]string{lockcore.HaltTimeouts}),
	newLockMetric("lost_wakeups_total",
		"Halts that timed out although the waiter's turn had come: lost wake-ups, which should never happen.",
		[]string{lockcore.LostWakeups}),
	newLockMetric("slowpath_entries_total",
		"Entries into the lock's slow path (ticket: taken_slow; qspin: lock_slowpath).",
		[]string{lockcore.TakenSlow}, []string{lockcore.LockSlowpath}),
	newLockMetric("slowpath_pickups_total",
		"Slow-path entries whose re-check found the lock free, so the waiter did not halt (taken_slow_pickup).",
		[]string{lockcore.TakenSlowPickup}),
	newLockMetric("slow_releases_total",
		"Unlocks that found the slow-path flag set (released_slow).",
		[]string{lockcore.ReleasedSlow}),
	newLockMetric("slow_releases_kicked_total",
		"Slow unlocks that kicked a halted waiter (released_slow_kicked).",
		[]string{lockcore.ReleasedSlowKicked}),
	newLockMetric("early_halts_total",
		"Ticket waiters that halted before their spin threshold because the ticket being served belonged to a waiter still waking up (halt_early; qspin's analogue is pv_wait_early).",
		[]string{lockcore.HaltEarly}),
	newLockMetric("acquisitions_total",
		"Lock acquisitions, added by each lock 1024 at a time (a native ticket lock: 2048) at release while pvlock.Policy.Stats is on, so the count trails each lock by less than one batch; rates over busy locks are exact.",
		[]string{lockcore.Acquisitions}),
	newLockMetric("passive_waits_total",
		"Waits outside a saturated lock, halted or parked with no ticket taken or queue node linked, until a release admitted the waiter (concurrency restriction, pvlock.Policy.Restrict).",
		[]string{lockcore.PassiveWaits}),
	newLockMetric("passive_watches_total",
		"Passive waits of vCPUs that watched the lock while their CPU would otherwise have idled, rather than halt: releases left them outside until the lock stayed free or the fairness bound admitted them (concurrency restriction).",
		[]string{lockcore.PassiveWatches}),
	newLockMetric("contended_acquisitions_total",
		"Ticket lock acquisitions that had to wait for the lock (acquired_slow; the rest took the fast path).",
		[]string{lockcore.AcquiredSlow}),
	newLockMetric("kick_latency_seconds_total",
		"Time unlockers spent issuing the kicks of pv_kick_unlock (qspin: pv_latency_kick); divided by the rate of those kicks, the mean cost of a kick.",
		[]string{lockcore.PVLatencyKick}).nanos(),
	newLockMetric("wake_latency_seconds_total",
		"Time from a kick to the kicked waiter running again, summed over the kicked halts that timed it (qspin: pv_latency_wake, over pv_kick_wake halts).",
		[]string{lockcore.PVLatencyWake}).nanos(),
}

// rwMetrics are the reader-writer lock's counts by role (reader or
// writer): each metric's two events, the reader's and the writer's.
var rwMetrics = []struct {
	desc          *prometheus.Desc
	reader, write string
}{
	{prometheus.NewDesc("pvlock_rw_acquisitions_total",
		"Reader-writer lock acquisitions by role: read locks (role=reader) and write locks (role=writer), added 1024 at a time per lock as pvlock_acquisitions_total is.",
		rwLabels, nil), lockcore.ReadAcquisitions, lockcore.WriteAcquisitions},
	{prometheus.NewDesc("pvlock_rw_slowpath_entries_total",
		"Reader-writer lock acquisitions that queued, by role: readers that found a writer, writers that found the lock held.",
		rwLabels, nil), lockcore.ReadSlowpath, lockcore.WriteSlowpath},
	{prometheus.NewDesc("pvlock_rw_halts_total",
		"Halts of reader-writer lock queue heads, by role: a reader waiting for the writer inside, a writer waiting for the readers inside.",
		rwLabels, nil), lockcore.ReadHalts, lockcore.WriteHalts},
	{prometheus.NewDesc("pvlock_rw_kicks_total",
		"Kicks of a halted reader-writer lock queue head, by the role of the kicker: the last reader inside, or the writer's unlock.",
		rwLabels, nil), lockcore.ReadKicks, lockcore.WriteKicks},
}

var (
	qspinEventsDesc = prometheus.NewDesc("pvlock_qspin_events_total",
		"Events of queued spinlocks, by their kernel lock-event name, that no other pvlock metric exports.",
		[]string{"lock", "mode", "name", "event"}, nil)
	lockEventsDesc = prometheus.NewDesc("pvlock_lock_events_total",
		"Events of locks other than qspin that no other pvlock metric exports.",
		[]string{"lock", "mode", "name", "event"}, nil)
	admissionsDesc = prometheus.NewDesc("pvlock_passive_admissions_total",
		"Passive waiters admitted back into the lock: by a release that found no active waiter, or by a watching waiter that found the lock left free (cause=drained), or by the fairness bound (cause=fair).",
		[]string{"lock", "mode", "name", "cause"}, nil)
	passiveDesc = prometheus.NewDesc("pvlock_passive_waiters",
		"Waiters waiting outside the lock now (passive waits begun less admissions), summed over the locks of the kind and mode.",
		lockLabels, nil)
	haltDurationDesc = prometheus.NewDesc("pvlock_halt_duration_seconds",
		"How long halted waiters slept, in log2-spaced buckets.",
		lockLabels, nil)

	rwLabels = []string{"lock", "mode", "name", "role"}

	lockupsDesc = prometheus.NewDesc("pvlock_lockups_suspected_total",
		"Waiters that waited for a lock longer than the lockup threshold (pvlock.SetLockupThreshold; off by default) and were reported, once per wait, through the lockup hook.",
		nil, nil)

	nameOverflowsDesc = prometheus.NewDesc("pvlock_lock_name_overflows_total",
		"Locks given a name after lockstat.MaxLockNames names of their kind existed: they count with the unnamed locks (name=\"\").",
		nil, nil)
)

var vcpuLabels = []string{"vm", "vcpu"}

// vcpuMetric is a metric of every vCPU: its descriptor, its type, and its
// value, read from the vCPU and a snapshot of its waiter's counters.
type vcpuMetric struct {
	desc  *prometheus.Desc
	typ   prometheus.ValueType
	value func(v *pvlock.VCPU, w *kick.Counters) float64
}

func newVCPUMetric(name, help string, typ prometheus.ValueType, value func(*pvlock.VCPU, *kick.Counters) float64) vcpuMetric {
	desc := prometheus.NewDesc(prometheus.BuildFQName(namespace, "vcpu", name), help, vcpuLabels, nil)
	return vcpuMetric{desc: desc, typ: typ, value: value}
}

// seconds converts a count of nanoseconds to seconds.
func seconds(ns uint64) float64 { return float64(ns) / 1e9 }

// vcpuMetrics are the per-vCPU metrics with the vCPU labels alone. The
// halt-polling ones follow KVM's halt_attempted_poll, halt_successful_poll
// and halt_poll_invalid: three metrics, not one with a result label,
// because the polls begun are a superset of the other two.
var vcpuMetrics = []vcpuMetric{
	newVCPUMetric("steal_seconds_total",
		"Time the vCPU thread was runnable but waiting for a CPU, during the VM's current or last run.",
		prometheus.CounterValue, func(v *pvlock.VCPU, _ *kick.Counters) float64 { return v.Steal().Seconds() }),
	newVCPUMetric("halts_total",
		"Halts of the vCPU, including those that returned at once because the kick came first.",
		prometheus.CounterValue, func(_ *pvlock.VCPU, w *kick.Counters) float64 { return float64(w.Halts + w.EarlyKicks) }),
	newVCPUMetric("kicks_received_total",
		"Kicks delivered to the vCPU.",
		prometheus.CounterValue, func(_ *pvlock.VCPU, w *kick.Counters) float64 { return float64(w.KicksReceived) }),
	newVCPUMetric("halted_seconds_total",
		"Time the vCPU spent halted.",
		prometheus.CounterValue, func(_ *pvlock.VCPU, w *kick.Counters) float64 { return seconds(w.HaltedNanos) }),
	newVCPUMetric("halt_polls_total",
		"Halt-polls begun by the vCPU: a superset of pvlock_vcpu_halt_polls_success_total and pvlock_vcpu_halt_polls_invalid_total.",
		prometheus.CounterValue, func(_ *pvlock.VCPU, w *kick.Counters) float64 { return float64(w.PollsAttempted) }),
	newVCPUMetric("halt_polls_success_total",
		"Halt-polls of the vCPU that caught their kick, so the vCPU did not sleep.",
		prometheus.CounterValue, func(_ *pvlock.VCPU, w *kick.Counters) float64 { return float64(w.PollsSuccessful) }),
	newVCPUMetric("halt_polls_invalid_total",
		"Halt-polls of the vCPU cut short because a sibling vCPU on the same CPU became runnable (failed polls, as far as the poll time is concerned).",
		prometheus.CounterValue, func(_ *pvlock.VCPU, w *kick.Counters) float64 { return float64(w.PollsInvalid) }),
	newVCPUMetric("halt_poll_window_seconds",
		"The vCPU's current adaptive halt-poll window (grows and shrinks like KVM's halt_poll_ns).",
		prometheus.GaugeValue, func(_ *pvlock.VCPU, w *kick.Counters) float64 { return seconds(w.PollWindowNanos) }),
	newVCPUMetric("sibling_spin_polls",
		"The vCPU's current adaptive spin window, in polls, for PV lock waits while another vCPU on its CPU is runnable.",
		prometheus.GaugeValue, func(v *pvlock.VCPU, _ *kick.Counters) float64 { return float64(v.SiblingSpin()) }),
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
		qspinEventsDesc, lockEventsDesc, haltDurationDesc, admissionsDesc, passiveDesc, nameOverflowsDesc, lockupsDesc,
		vcpuPollSecondsDesc, buildInfoDesc,
	} {
		ch <- d
	}
}

// Collect reads the statistics and sends them as constant metrics.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	collectBuildInfo(ch)
	ch <- prometheus.MustNewConstMetric(lockupsDesc, prometheus.CounterValue, float64(pvlock.LockupsSuspected()))
	if n := lockstat.NameOverflows(); n > 0 {
		ch <- prometheus.MustNewConstMetric(nameOverflowsDesc, prometheus.CounterValue, float64(n))
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
	desc := lockEventsDesc
	if snap.Kind == lockcore.KindQspin {
		desc = qspinEventsDesc
	}
	for _, ev := range rest {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, float64(snap.Events[ev]), snap.Kind, snap.Mode, snap.Name, ev)
	}
	count, sum, buckets := haltHistogram(snap)
	ch <- prometheus.MustNewConstHistogram(haltDurationDesc, count, sum, buckets, snap.Kind, snap.Mode, snap.Name)
}

// collectRoles sends the reader-writer lock's counts by role, for a lock
// whose statistics have them, and marks those events used.
func collectRoles(ch chan<- prometheus.Metric, snap lockstat.Snapshot, used map[string]bool) {
	for _, m := range rwMetrics {
		for _, r := range []struct{ ev, role string }{{m.reader, "reader"}, {m.write, "writer"}} {
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
		{lockcore.AdmittedDrained, "drained"}, {lockcore.AdmittedFair, "fair"},
	} {
		n := snap.Events[c.ev]
		admitted += n
		used[c.ev] = true
		ch <- prometheus.MustNewConstMetric(admissionsDesc, prometheus.CounterValue, float64(n), snap.Kind, snap.Mode, snap.Name, c.cause)
	}
	// A waiter counts its wait a moment after it counted itself in the
	// gate, and its admitter may count first: never report less than 0.
	ch <- prometheus.MustNewConstMetric(passiveDesc, prometheus.GaugeValue, float64(waits-min(waits, admitted)), snap.Kind, snap.Mode, snap.Name)
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
			ch <- prometheus.MustNewConstMetric(m.desc, m.typ, m.value(v, &w), labels...)
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
