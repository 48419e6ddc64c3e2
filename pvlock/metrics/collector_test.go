package metrics

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/pvlock/pvlock/internal/locktest"
	"github.com/pvlock/pvlock/lockstat"
	"github.com/pvlock/pvlock/pvlock"
	"github.com/pvlock/pvlock/qspin"
	"github.com/pvlock/pvlock/ticket"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The mode "metricstest" keeps these statistics apart from the real locks
// of the same kinds.
var (
	ticketEvents = []string{
		"acquisitions", "acquired_slow", "taken_slow", "taken_slow_pickup", "halts",
		"spurious_wakeups", "halt_timeouts", "lost_wakeups", "released_slow", "released_slow_kicked",
	}
	qspinEvents = []string{
		"pv_wait_node", "pv_wait_head", "pv_wait_again", "pv_wait_early", "pv_kick_unlock",
		"pv_kick_wake", "pv_spurious_wakeup", "pv_hash_hops", "pv_lock_stealing", "lock_pending",
		"lock_slowpath", "halts", "halt_timeouts", "lost_wakeups", "acquisitions",
		"pv_latency_kick", "pv_latency_wake",
	}
	tasEvents = []string{"acquisitions", "spins_wasted"}

	ticketTest = lockstat.New("ticket", "metricstest", ticketEvents)
	qspinTest  = lockstat.New("qspin", "metricstest", qspinEvents)
	tasTest    = lockstat.New("tas", "metricstest", tasEvents)
)

// set makes the events of s equal to counts, spreading each count over a
// few slots (vCPUs and the shared stripes) so that summing is exercised.
func set(s *lockstat.Stats, counts map[string]uint64) {
	s.Reset()
	slots := []int{0, 1, pvlock.MaxVCPUs - 1, -1}
	for i, ev := range s.Events() {
		n := counts[ev]
		for j := uint64(0); j < n; j++ {
			s.Inc(slots[(i+int(j))%len(slots)], i)
		}
	}
}

func only(stats ...*lockstat.Stats) Options {
	return Options{Stats: func() []*lockstat.Stats { return stats }}
}

// TestTicketMetrics checks every metric of a ticket-style lock, including
// the conversion of the log2 halt histogram.
func TestTicketMetrics(t *testing.T) {
	set(ticketTest, map[string]uint64{
		"acquisitions": 10, "acquired_slow": 3, "taken_slow": 5, "taken_slow_pickup": 1, "halts": 4,
		"spurious_wakeups": 1, "halt_timeouts": 2, "lost_wakeups": 1, "released_slow": 6, "released_slow_kicked": 3,
	})
	// 5 ns folds into the first bucket; 1 ms (2^20 ns) is the lower edge of
	// [2^20, 2^21); 2 s is beyond the last bound and only counts in +Inf.
	for i, ns := range []uint64{5, 1500, 3000, 1 << 20, 2e9} {
		ticketTest.ObserveBlocked(i-1, ns)
	}
	const want = `
# HELP pvlock_acquisitions_total Lock acquisitions, added by each lock 1024 at a time (a native ticket lock: 2048) at release while pvlock.Policy.Stats is on, so the count trails each lock by less than one batch; rates over busy locks are exact.
# TYPE pvlock_acquisitions_total counter
pvlock_acquisitions_total{lock="ticket",mode="metricstest",name=""} 10
# HELP pvlock_contended_acquisitions_total Ticket lock acquisitions that had to wait for the lock (acquired_slow; the rest took the fast path).
# TYPE pvlock_contended_acquisitions_total counter
pvlock_contended_acquisitions_total{lock="ticket",mode="metricstest",name=""} 3
# HELP pvlock_halt_timeouts_total Halts that ended by the halt watchdog timeout (pvlock.Policy.HaltTimeout).
# TYPE pvlock_halt_timeouts_total counter
pvlock_halt_timeouts_total{lock="ticket",mode="metricstest",name=""} 2
# HELP pvlock_halts_total Waiters that halted (went to sleep until kicked) instead of spinning on, in the lock or outside it (passive waiters).
# TYPE pvlock_halts_total counter
pvlock_halts_total{lock="ticket",mode="metricstest",name=""} 4
# HELP pvlock_kicks_total Kicks sent by unlockers to halted waiters, in the lock or outside it (admissions of passive waiters).
# TYPE pvlock_kicks_total counter
pvlock_kicks_total{lock="ticket",mode="metricstest",name=""} 3
# HELP pvlock_lost_wakeups_total Halts that timed out although the waiter's turn had come: lost wake-ups, which should never happen.
# TYPE pvlock_lost_wakeups_total counter
pvlock_lost_wakeups_total{lock="ticket",mode="metricstest",name=""} 1
# HELP pvlock_slow_releases_kicked_total Slow unlocks that kicked a halted waiter (released_slow_kicked).
# TYPE pvlock_slow_releases_kicked_total counter
pvlock_slow_releases_kicked_total{lock="ticket",mode="metricstest",name=""} 3
# HELP pvlock_slow_releases_total Unlocks that found the slow-path flag set (released_slow), estimated from a sample of one ticket in 16.
# TYPE pvlock_slow_releases_total counter
pvlock_slow_releases_total{lock="ticket",mode="metricstest",name=""} 6
# HELP pvlock_slowpath_entries_total Entries into the lock's slow path (ticket: taken_slow; qspin: lock_slowpath).
# TYPE pvlock_slowpath_entries_total counter
pvlock_slowpath_entries_total{lock="ticket",mode="metricstest",name=""} 5
# HELP pvlock_slowpath_pickups_total Slow-path entries whose re-check found the lock free, so the waiter did not halt (taken_slow_pickup).
# TYPE pvlock_slowpath_pickups_total counter
pvlock_slowpath_pickups_total{lock="ticket",mode="metricstest",name=""} 1
# HELP pvlock_spurious_wakeups_total Halts that ended without a kick.
# TYPE pvlock_spurious_wakeups_total counter
pvlock_spurious_wakeups_total{lock="ticket",mode="metricstest",name=""} 1
# HELP pvlock_halt_duration_seconds How long halted waiters slept, in log2-spaced buckets.
# TYPE pvlock_halt_duration_seconds histogram
pvlock_halt_duration_seconds_bucket{lock="ticket",mode="metricstest",name="",le="1.024e-06"} 1
pvlock_halt_duration_seconds_bucket{lock="ticket",mode="metricstest",name="",le="2.048e-06"} 2
pvlock_halt_duration_seconds_bucket{lock="ticket",mode="metricstest",name="",le="4.096e-06"} 3
pvlock_halt_duration_seconds_bucket{lock="ticket",mode="metricstest",name="",le="8.192e-06"} 3
pvlock_halt_duration_seconds_bucket{lock="ticket",mode="metricstest",name="",le="1.6384e-05"} 3
pvlock_halt_duration_seconds_bucket{lock="ticket",mode="metricstest",name="",le="3.2768e-05"} 3
pvlock_halt_duration_seconds_bucket{lock="ticket",mode="metricstest",name="",le="6.5536e-05"} 3
pvlock_halt_duration_seconds_bucket{lock="ticket",mode="metricstest",name="",le="0.000131072"} 3
pvlock_halt_duration_seconds_bucket{lock="ticket",mode="metricstest",name="",le="0.000262144"} 3
pvlock_halt_duration_seconds_bucket{lock="ticket",mode="metricstest",name="",le="0.000524288"} 3
pvlock_halt_duration_seconds_bucket{lock="ticket",mode="metricstest",name="",le="0.001048576"} 3
pvlock_halt_duration_seconds_bucket{lock="ticket",mode="metricstest",name="",le="0.002097152"} 4
pvlock_halt_duration_seconds_bucket{lock="ticket",mode="metricstest",name="",le="0.004194304"} 4
pvlock_halt_duration_seconds_bucket{lock="ticket",mode="metricstest",name="",le="0.008388608"} 4
pvlock_halt_duration_seconds_bucket{lock="ticket",mode="metricstest",name="",le="0.016777216"} 4
pvlock_halt_duration_seconds_bucket{lock="ticket",mode="metricstest",name="",le="0.033554432"} 4
pvlock_halt_duration_seconds_bucket{lock="ticket",mode="metricstest",name="",le="0.067108864"} 4
pvlock_halt_duration_seconds_bucket{lock="ticket",mode="metricstest",name="",le="0.134217728"} 4
pvlock_halt_duration_seconds_bucket{lock="ticket",mode="metricstest",name="",le="0.268435456"} 4
pvlock_halt_duration_seconds_bucket{lock="ticket",mode="metricstest",name="",le="0.536870912"} 4
pvlock_halt_duration_seconds_bucket{lock="ticket",mode="metricstest",name="",le="1.073741824"} 4
pvlock_halt_duration_seconds_bucket{lock="ticket",mode="metricstest",name="",le="+Inf"} 5
pvlock_halt_duration_seconds_sum{lock="ticket",mode="metricstest",name=""} 2.001053081
pvlock_halt_duration_seconds_count{lock="ticket",mode="metricstest",name=""} 5
`
	if err := testutil.CollectAndCompare(NewCollector(only(ticketTest)), strings.NewReader(want), typedNames(want)...); err != nil {
		t.Fatal(err)
	}
}

// TestQspinAndOtherKinds checks that the named metrics are found by event
// name for any kind, that the other qspin events keep their kernel names
// and that no event of an unknown kind is dropped.
func TestQspinAndOtherKinds(t *testing.T) {
	counts := map[string]uint64{}
	for i, ev := range qspinEvents {
		counts[ev] = uint64(i + 1)
	}
	set(qspinTest, counts)
	set(tasTest, map[string]uint64{"acquisitions": 9, "spins_wasted": 11})
	c := NewCollector(only(qspinTest, tasTest))
	want := exposition(
		`pvlock_acquisitions_total{lock="qspin",mode="metricstest",name=""} 15`,
		`pvlock_acquisitions_total{lock="tas",mode="metricstest",name=""} 9`,
		`pvlock_halt_timeouts_total{lock="qspin",mode="metricstest",name=""} 13`,
		`pvlock_halts_total{lock="qspin",mode="metricstest",name=""} 12`,
		`pvlock_kick_latency_seconds_total{lock="qspin",mode="metricstest",name=""} 1.6e-08`,
		`pvlock_kicks_total{lock="qspin",mode="metricstest",name=""} 5`,
		`pvlock_lost_wakeups_total{lock="qspin",mode="metricstest",name=""} 14`,
		`pvlock_slowpath_entries_total{lock="qspin",mode="metricstest",name=""} 11`,
		`pvlock_spurious_wakeups_total{lock="qspin",mode="metricstest",name=""} 7`,
		`pvlock_wake_latency_seconds_total{lock="qspin",mode="metricstest",name=""} 1.7e-08`,
		`pvlock_qspin_events_total{event="lock_pending",lock="qspin",mode="metricstest",name=""} 10`,
		`pvlock_qspin_events_total{event="pv_hash_hops",lock="qspin",mode="metricstest",name=""} 8`,
		`pvlock_qspin_events_total{event="pv_kick_wake",lock="qspin",mode="metricstest",name=""} 6`,
		`pvlock_qspin_events_total{event="pv_lock_stealing",lock="qspin",mode="metricstest",name=""} 9`,
		`pvlock_qspin_events_total{event="pv_wait_again",lock="qspin",mode="metricstest",name=""} 3`,
		`pvlock_qspin_events_total{event="pv_wait_early",lock="qspin",mode="metricstest",name=""} 4`,
		`pvlock_qspin_events_total{event="pv_wait_head",lock="qspin",mode="metricstest",name=""} 2`,
		`pvlock_qspin_events_total{event="pv_wait_node",lock="qspin",mode="metricstest",name=""} 1`,
		`pvlock_lock_events_total{event="spins_wasted",lock="tas",mode="metricstest",name=""} 11`,
	)
	var names []string
	for _, m := range lockMetrics {
		names = append(names, metricName(m.desc))
	}
	names = append(names, "pvlock_qspin_events_total", "pvlock_lock_events_total")
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}
	// One (empty) histogram per lock kind and mode.
	if n := testutil.CollectAndCount(c, "pvlock_halt_duration_seconds"); n != 2 {
		t.Fatalf("%d halt histograms, want 2", n)
	}
}

// metricName extracts the fully-qualified name from a Desc.
func metricName(d *prometheus.Desc) string { return descField(d, "fqName") }

// descField extracts a quoted field (fqName, help) from a Desc.
func descField(d *prometheus.Desc, field string) string {
	_, s, _ := strings.Cut(d.String(), field+`: "`)
	v, _, _ := strings.Cut(s, `"`)
	return v
}

// exposition returns the text exposition of counter samples, given in
// order of metric, with each metric's HELP from its Desc (TestTicketMetrics
// checks the HELP texts themselves).
func exposition(samples ...string) string {
	all := []*prometheus.Desc{descs.qspinEvents, descs.lockEvents}
	for _, m := range lockMetrics {
		all = append(all, m.desc)
	}
	var b strings.Builder
	last := ""
	for _, sample := range samples {
		name, _, _ := strings.Cut(sample, "{")
		if name != last {
			i := slices.IndexFunc(all, func(d *prometheus.Desc) bool { return metricName(d) == name })
			fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s counter\n", name, descField(all[i], "help"), name)
			last = name
		}
		b.WriteString(sample + "\n")
	}
	return b.String()
}

// TestRealLocksFullyMapped checks that every event of the ticket lock has a
// named metric, so none falls through to pvlock_lock_events_total, that
// no event of the qspin lock is a sum of time left among its counts, and
// that every lock kind and mode in use gets its histogram.
func TestRealLocksFullyMapped(t *testing.T) {
	pv, native := ticket.Stats(ticket.ModePV), ticket.Stats(ticket.ModeNative)
	for _, s := range []*lockstat.Stats{pv, native} {
		set(s, map[string]uint64{ticket.Halts: 1})
	}
	defer pv.Reset()
	defer native.Reset()
	c := NewCollector(only(pv, native))
	if n := testutil.CollectAndCount(c, "pvlock_lock_events_total"); n != 0 {
		t.Fatalf("%d ticket events have no named metric", n)
	}
	if n := testutil.CollectAndCount(c, "pvlock_slowpath_pickups_total"); n != 2 {
		t.Fatalf("%d pickup series for the two ticket modes, want 2", n)
	}
	used := 0
	for _, s := range lockstat.All() {
		if inUse(s.Snapshot()) {
			used++
		}
	}
	if n := testutil.CollectAndCount(NewCollector(Options{}), "pvlock_halt_duration_seconds"); n != used {
		t.Fatalf("%d halt histograms for %d lockstat.Stats in use", n, used)
	}
	// The qspin lock's own event table: its nanosecond sums have metrics
	// of their own, in seconds.
	q := qspin.Stats(qspin.ModePV)
	set(q, map[string]uint64{qspin.PVLatencyKick: 3, qspin.PVLatencyWake: 5, qspin.PVKickWake: 1})
	defer q.Reset()
	want := exposition(
		`pvlock_kick_latency_seconds_total{lock="qspin",mode="pv",name=""} 3e-09`,
		`pvlock_wake_latency_seconds_total{lock="qspin",mode="pv",name=""} 5e-09`,
		`pvlock_qspin_events_total{event="pv_kick_wake",lock="qspin",mode="pv",name=""} 1`,
	)
	qc := NewCollector(only(q))
	if err := testutil.CollectAndCompare(qc, strings.NewReader(want),
		"pvlock_kick_latency_seconds_total", "pvlock_wake_latency_seconds_total"); err != nil {
		t.Fatal(err)
	}
	mfs := gather(t, qc)
	for _, m := range mfs["pvlock_qspin_events_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "event" && strings.Contains(l.GetValue(), "latency") {
				t.Errorf("pvlock_qspin_events_total still exports %s", l.GetValue())
			}
		}
	}
}

// gather collects c through a pedantic registry and returns its families
// by name.
func gather(t *testing.T, c prometheus.Collector) map[string]*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

// TestUnusedModesExportNothing: a lock kind and mode whose counters are
// all zero exports no series, and one count of anything, even only the
// halt histogram's, brings back all of its metrics.
func TestUnusedModesExportNothing(t *testing.T) {
	set(ticketTest, nil)
	set(qspinTest, nil)
	c := NewCollector(only(ticketTest, qspinTest))
	if n := testutil.CollectAndCount(c); n != 2 { // pvlock_build_info and pvlock_lockups_suspected_total only
		t.Fatalf("two unused lock modes export %d series besides the build info and the lockup count", n-2)
	}
	qspinTest.ObserveBlocked(0, 1500)
	mfs := gather(t, c)
	for _, name := range []string{"pvlock_halts_total", "pvlock_lost_wakeups_total", "pvlock_halt_duration_seconds"} {
		mf := mfs[name]
		if mf == nil || len(mf.GetMetric()) != 1 || mf.GetMetric()[0].GetLabel()[0].GetValue() != "qspin" {
			t.Errorf("%s: %v, want one series of the qspin lock, which has halted once", name, mf)
		}
	}
	set(qspinTest, map[string]uint64{"lock_pending": 1})
	if n := testutil.CollectAndCount(c, "pvlock_lost_wakeups_total"); n != 1 {
		t.Fatalf("%d lost wake-up series once the qspin lock counted an event, want 1 (zero, but present)", n)
	}
}

func TestLint(t *testing.T) {
	set(ticketTest, map[string]uint64{"halts": 1})
	set(qspinTest, map[string]uint64{"pv_wait_node": 1})
	vm := locktest.NewVM(t, pvlock.Config{VCPUs: 2})
	c := NewCollector(Options{})
	if err := c.AddVM(vm); err != nil {
		t.Fatal(err)
	}
	problems, err := testutil.CollectAndLint(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
	reg := NewRegistry(c)
	problems, err = testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint of the registry: %s: %s", p.Metric, p.Text)
	}
}

func TestAddRemoveVM(t *testing.T) {
	c := NewCollector(only())
	if err := c.AddVM(nil); err == nil {
		t.Fatal("AddVM(nil) accepted")
	}
	a := locktest.NewVM(t, pvlock.Config{Name: "a", VCPUs: 3})
	a2 := locktest.NewVM(t, pvlock.Config{Name: "a", VCPUs: 1})
	b := locktest.NewVM(t, pvlock.Config{Name: "b", VCPUs: 2})
	for _, vm := range []*pvlock.VM{a, b} {
		if err := c.AddVM(vm); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.AddVM(a); err == nil || !strings.Contains(err.Error(), "already added") {
		t.Fatalf("second AddVM of the same VM: %v", err)
	}
	if err := c.AddVM(a2); err == nil || !strings.Contains(err.Error(), "named a") {
		t.Fatalf("AddVM of a VM with a taken name: %v", err)
	}
	if n := testutil.CollectAndCount(c, "pvlock_vcpu_halts_total"); n != 5 {
		t.Fatalf("%d vCPU series for 3+2 vCPUs", n)
	}
	if !c.RemoveVM(a) || c.RemoveVM(a) {
		t.Fatal("RemoveVM did not report the first removal only")
	}
	if n := testutil.CollectAndCount(c, "pvlock_vcpu_steal_seconds_total"); n != 2 {
		t.Fatalf("%d vCPU series after removing a, want 2", n)
	}
	// The name is free again.
	if err := c.AddVM(a2); err != nil {
		t.Fatal(err)
	}
	const want = `
# HELP pvlock_vcpu_kicks_received_total Kicks delivered to the vCPU.
# TYPE pvlock_vcpu_kicks_received_total counter
pvlock_vcpu_kicks_received_total{vcpu="0",vm="a"} 0
pvlock_vcpu_kicks_received_total{vcpu="0",vm="b"} 0
pvlock_vcpu_kicks_received_total{vcpu="1",vm="b"} 0
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "pvlock_vcpu_kicks_received_total"); err != nil {
		t.Fatal(err)
	}
}

func TestNewRegistry(t *testing.T) {
	reg := NewRegistry(NewCollector(only(ticketTest)))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, mf := range mfs {
		names = append(names, mf.GetName())
	}
	for _, want := range []string{"pvlock_halts_total", "go_goroutines", "process_cpu_seconds_total"} {
		if !slices.Contains(names, want) {
			t.Errorf("registry lacks %s", want)
		}
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("NewRegistry(nil) did not panic")
			}
		}()
		NewRegistry(nil)
	}()
}
