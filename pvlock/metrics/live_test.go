package metrics

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/pvlock/pvlock/internal/locktest"
	"github.com/pvlock/pvlock/internal/promtest"
	"github.com/pvlock/pvlock/pvlock"
	"github.com/pvlock/pvlock/ticket"
)

// work does n units of arithmetic on x and returns the result, so the
// compiler cannot drop it.
func work(x uint64, n int) uint64 {
	for i := 0; i < n; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	return x
}

// loop describes a lockloop: every vCPU takes the lock, does cs units of
// work on shared data, releases it and does local units of private work.
type loop struct {
	lock      *ticket.Lock
	cs, local int
	perVCPU   int // acquisitions per vCPU; 0 means until ctx ends
}

// run runs the loop on vm and returns the number of acquisitions and the
// time from the first vCPU's start to the last one's end.
func (l loop) run(ctx context.Context, vm *pvlock.VM) (int64, time.Duration, error) {
	var (
		shared  uint64
		ops     atomic.Int64
		mu      sync.Mutex
		started time.Time
		ended   time.Time
	)
	err := vm.Run(ctx, func(ctx context.Context, v *pvlock.VCPU) error {
		start := time.Now()
		done := ctx.Done()
		private := uint64(v.Index())
		n := 0
		for ; l.perVCPU == 0 || n < l.perVCPU; n++ {
			if l.perVCPU == 0 && n%64 == 0 {
				select {
				case <-done:
					goto out
				default:
				}
			}
			l.lock.Lock()
			shared = work(shared, l.cs)
			l.lock.Unlock()
			private = work(private, l.local)
		}
	out:
		end := time.Now()
		ops.Add(int64(n))
		mu.Lock()
		if started.IsZero() || start.Before(started) {
			started = start
		}
		if end.After(ended) {
			ended = end
		}
		mu.Unlock()
		sink.Add(private)
		return nil
	})
	return ops.Load(), ended.Sub(started), err
}

// sink keeps the results of private work alive.
var sink atomic.Uint64

// scrape fetches and parses the metrics at url.
func scrape(client *http.Client, url string) (map[string]*dto.MetricFamily, error) {
	body, err := scrapeText(client, url)
	if err != nil {
		return nil, err
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("parse scrape of %s: %w", url, err)
	}
	return mfs, nil
}

// mustScrape is scrape for the test goroutine.
func mustScrape(t *testing.T, client *http.Client, url string) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := scrape(client, url)
	if err != nil {
		t.Fatal(err)
	}
	return mfs
}

// scrapeText fetches the metrics at url in the classic text format.
func scrapeText(client *http.Client, url string) ([]byte, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain")
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: status %s\n%s", url, resp.Status, body)
	}
	return body, nil
}

// sum adds up the samples of a counter or the sample counts of a
// histogram whose labels include all of match.
func sum(mfs map[string]*dto.MetricFamily, name string, match map[string]string) float64 {
	total := 0.0
	mf := mfs[name]
	if mf == nil {
		return 0
	}
next:
	for _, m := range mf.GetMetric() {
		for k, v := range match {
			found := false
			for _, lp := range m.GetLabel() {
				if lp.GetName() == k && lp.GetValue() == v {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		if h := m.GetHistogram(); h != nil {
			total += float64(h.GetSampleCount())
		} else {
			total += m.GetCounter().GetValue()
		}
	}
	return total
}

// pvTicket selects the series of the unnamed PV ticket locks, whose counts
// are ticket.Stats(ticket.ModePV)'s; named ones (other tests') count apart.
var pvTicket = map[string]string{"lock": "ticket", "mode": "pv", "name": ""}

// newServer serves a fresh registry of c.
func newServer(t *testing.T, c *Collector) *httptest.Server {
	reg := NewRegistry(c)
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		Registry:      reg,
		ErrorHandling: promhttp.HTTPErrorOnError, // a Collect error fails the scrape
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestScrapeMatchesRuntime runs an overcommitted PV ticket lockloop with a
// short spin threshold, scraping all along, and then checks the scraped
// counters against the lock's own snapshot, the vCPUs' waiters and the
// workload's count of acquisitions.
func TestScrapeMatchesRuntime(t *testing.T) {
	defer locktest.Statistics(true)()
	vm := locktest.Overcommitted(t, 2)
	c := NewCollector(Options{})
	if err := c.AddVM(vm); err != nil {
		t.Fatal(err)
	}
	srv := newServer(t, c)
	client := srv.Client()
	before := mustScrape(t, client, srv.URL)

	d := time.Second
	if testing.Short() {
		d = 300 * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	// Scrape while the vCPUs run: under -race this checks that Collect
	// reads live counters safely, and counters must never go down.
	var (
		wg       sync.WaitGroup
		scrapes  int
		scrapErr error
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		last := 0.0
		for ctx.Err() == nil {
			mfs, err := scrape(client, srv.URL)
			if err != nil {
				scrapErr = err
				return
			}
			scrapes++
			h := sum(mfs, "pvlock_halts_total", pvTicket)
			if h < last {
				scrapErr = fmt.Errorf("pvlock_halts_total went down from %v to %v", last, h)
				return
			}
			last = h
			time.Sleep(10 * time.Millisecond)
		}
	}()
	l := loop{lock: ticket.New(ticket.SpinThreshold(16)), cs: 200, local: 200}
	ops, _, err := l.run(ctx, vm)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if scrapErr != nil {
		t.Fatal(scrapErr)
	}
	after := mustScrape(t, client, srv.URL)
	snap := ticket.Stats(ticket.ModePV).Snapshot()
	t.Logf("%d acquisitions, %d scrapes while running, %v halts, %v kicks", ops, scrapes,
		snap.Get(ticket.Halts), snap.Get(ticket.ReleasedSlowKicked))

	// The scrape is the runtime's own snapshot. Halts, kicks and spurious
	// wake-ups are the lock's own and its passive waiters' together.
	for metric, events := range map[string][]string{
		"pvlock_halts_total":              {ticket.Halts, ticket.PassiveHalts},
		"pvlock_kicks_total":              {ticket.ReleasedSlowKicked, ticket.PassiveKicks},
		"pvlock_spurious_wakeups_total":   {ticket.SpuriousWakeups, ticket.PassiveSpurious},
		"pvlock_passive_waits_total":      {ticket.PassiveWaits},
		"pvlock_passive_admissions_total": {ticket.AdmittedDrained, ticket.AdmittedFair, ticket.AdmittedStacked},
	} {
		want := 0.0
		for _, ev := range events {
			want += float64(snap.Get(ev))
		}
		if got := sum(after, metric, pvTicket); got != want {
			t.Errorf("%s = %v, snapshot %v = %v", metric, got, events, want)
		}
	}
	if got := sum(after, "pvlock_passive_waiters", pvTicket); got != 0 {
		t.Errorf("pvlock_passive_waiters = %v after the run, want 0", got)
	}
	for metric, event := range map[string]string{
		"pvlock_slowpath_entries_total":     ticket.TakenSlow,
		"pvlock_slowpath_pickups_total":     ticket.TakenSlowPickup,
		"pvlock_slow_releases_total":        ticket.ReleasedSlow,
		"pvlock_slow_releases_kicked_total": ticket.ReleasedSlowKicked,
		"pvlock_halt_timeouts_total":        ticket.HaltTimeouts,
		"pvlock_lost_wakeups_total":         ticket.LostWakeups,
		"pvlock_passive_beside_total":       ticket.AdmittedBeside,
	} {
		if got, want := sum(after, metric, pvTicket), float64(snap.Get(event)); got != want {
			t.Errorf("%s = %v, snapshot %s = %v", metric, got, event, want)
		}
	}
	if got, want := sum(after, "pvlock_acquisitions_total", pvTicket),
		float64(snap.Get(ticket.Acquisitions)); got != want {
		t.Errorf("pvlock_acquisitions_total = %v, snapshot %v", got, want)
	}
	delta := func(name string) float64 { return sum(after, name, pvTicket) - sum(before, name, pvTicket) }
	halts, kicks := delta("pvlock_halts_total"), delta("pvlock_kicks_total")
	if halts == 0 || kicks == 0 {
		t.Fatalf("overcommitted run with a 16-poll spin threshold: %v halts, %v kicks; want both > 0", halts, kicks)
	}
	// A fresh PV ticket lock adds its acquisitions 1024 at a time, at
	// every 1024th release.
	if got, want := delta("pvlock_acquisitions_total"), float64(ops-ops%1024); got != want {
		t.Errorf("pvlock_acquisitions_total grew by %v after %d acquisitions, want %v (whole batches of 1024)", got, ops, want)
	}
	// Every halt is observed once in the histogram.
	if got := delta("pvlock_halt_duration_seconds"); got != halts {
		t.Errorf("halt histogram grew by %v samples for %v halts", got, halts)
	}
	// Only this VM's vCPUs used PV ticket locks, and its waiters are new:
	// their halts and kicks are the lock's.
	vmLabel := map[string]string{"vm": vm.Name()}
	if got := sum(after, "pvlock_vcpu_halts_total", vmLabel); got != halts {
		t.Errorf("vCPU halts sum to %v, the lock counted %v", got, halts)
	}
	if got := sum(after, "pvlock_vcpu_kicks_received_total", vmLabel); got != kicks {
		t.Errorf("vCPU kicks received sum to %v, the lock sent %v", got, kicks)
	}
	var steal time.Duration
	for _, v := range vm.VCPUs() {
		steal += v.Steal()
		labels := map[string]string{"vm": vm.Name(), "vcpu": fmt.Sprint(v.Index())}
		if got := sum(after, "pvlock_vcpu_steal_seconds_total", labels); got != v.Steal().Seconds() {
			t.Errorf("vCPU %d: steal %v s scraped, Steal() = %v", v.Index(), got, v.Steal())
		}
		if got := sum(after, "pvlock_vcpu_halted_seconds_total", labels); got != float64(v.Waiter().Counters().HaltedNanos)/1e9 {
			t.Errorf("vCPU %d: halted %v s scraped, waiter says %v ns", v.Index(), got, v.Waiter().Counters().HaltedNanos)
		}
		w := v.Waiter().Counters()
		for metric, want := range map[string]uint64{
			"pvlock_vcpu_halt_polls_total":         w.PollsAttempted,
			"pvlock_vcpu_halt_polls_success_total": w.PollsSuccessful,
			"pvlock_vcpu_halt_polls_invalid_total": w.PollsInvalid,
		} {
			if got := sum(after, metric, labels); got != float64(want) {
				t.Errorf("vCPU %d: %s = %v, waiter says %v", v.Index(), metric, got, want)
			}
		}
		// The poll time's results partition it: no value is the sum of others.
		ok, fail := sum(after, "pvlock_vcpu_halt_poll_seconds_total", map[string]string{"vm": vm.Name(), "vcpu": fmt.Sprint(v.Index()), "result": "success"}),
			sum(after, "pvlock_vcpu_halt_poll_seconds_total", map[string]string{"vm": vm.Name(), "vcpu": fmt.Sprint(v.Index()), "result": "fail"})
		if ok != float64(w.PollSuccessNanos)/1e9 || fail != float64(w.PollFailNanos)/1e9 {
			t.Errorf("vCPU %d: poll seconds success %v, fail %v; waiter says %v and %v ns", v.Index(), ok, fail, w.PollSuccessNanos, w.PollFailNanos)
		}
	}
	if steal == 0 {
		t.Error("2x overcommitted vCPUs saw no steal time")
	}
}

// TestPromtoolCheckMetrics feeds a scrape taken while an overcommitted
// workload runs to `promtool check metrics`, which must report nothing.
func TestPromtoolCheckMetrics(t *testing.T) {
	promtool := promtest.Tool(t, "promtool")
	vm := locktest.Overcommitted(t, 2)
	c := NewCollector(Options{})
	if err := c.AddVM(vm); err != nil {
		t.Fatal(err)
	}
	srv := newServer(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var (
		body     []byte
		scrapErr error
		wg       sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		// Scrape once the running workload has halted, then stop it.
		defer wg.Done()
		defer cancel()
		halts := func() uint64 { return ticket.Stats(ticket.ModePV).Snapshot().Get(ticket.Halts) }
		for base := halts(); halts() == base && ctx.Err() == nil; {
			time.Sleep(5 * time.Millisecond)
		}
		body, scrapErr = scrapeText(srv.Client(), srv.URL)
	}()
	l := loop{lock: ticket.New(ticket.SpinThreshold(16)), cs: 200, local: 200}
	if _, _, err := l.run(ctx, vm); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if scrapErr != nil {
		t.Fatal(scrapErr)
	}
	if !bytes.Contains(body, []byte("pvlock_vcpu_halts_total{")) || !bytes.Contains(body, []byte("pvlock_halt_duration_seconds_bucket{")) {
		t.Fatalf("scrape lacks the pvlock metrics:\n%s", body)
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	out, err := cmd.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) != 0 {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
}
