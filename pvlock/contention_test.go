package pvlock_test

import (
	"bytes"
	"context"
	"net/http/httptest"
	httppprof "net/http/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/pvlock/pvlock/pvlock"
	"github.com/pvlock/pvlock/qspin"
	"github.com/pvlock/pvlock/ticket"
)

// locker is the part of a lock the tests use.
type locker interface {
	Lock()
	Unlock()
}

// lockKinds are the locks under test, fresh on each call.
var lockKinds = []struct {
	name string
	new  func() locker
}{
	{"ticket", func() locker { return new(ticket.Lock) }},
	{"qspin", func() locker { return new(qspin.Lock) }},
	{"ticket-native", func() locker { return ticket.New(ticket.Native()) }},
}

// contendedCaller takes l while the test holds it: the function the
// contention profile must name.
//
//go:noinline
func contendedCaller(l locker) {
	l.Lock()
	l.Unlock()
}

// contend holds l for hold while contendedCaller waits to take it, and
// returns once contendedCaller has taken and released it.
func contend(l locker, hold time.Duration) {
	l.Lock()
	done := make(chan struct{})
	go func() { defer close(done); contendedCaller(l) }()
	time.Sleep(hold)
	l.Unlock()
	<-done
}

// fetchContentionProfile reads the contention profile as net/http/pprof
// serves it and parses it.
func fetchContentionProfile(t *testing.T) *profile.Profile {
	t.Helper()
	rec := httptest.NewRecorder()
	httppprof.Handler(pvlock.ContentionProfileName).ServeHTTP(rec, httptest.NewRequest("GET", "/debug/pprof/"+pvlock.ContentionProfileName, nil))
	if rec.Code != 200 {
		t.Fatalf("GET /debug/pprof/%s: status %d: %s", pvlock.ContentionProfileName, rec.Code, rec.Body)
	}
	p, err := profile.Parse(rec.Body)
	if err != nil {
		t.Fatalf("parse the contention profile: %v", err)
	}
	return p
}

// waitedIn sums the counts of the samples whose stack holds a function
// whose name ends in fn, and reports whether any of those stacks holds a
// frame of the lock core (a wrong skip).
func waitedIn(p *profile.Profile, fn string) (count int64, coreFrames bool) {
	for _, s := range p.Sample {
		found := false
		for _, loc := range s.Location {
			for _, line := range loc.Line {
				if strings.HasSuffix(line.Function.Name, fn) {
					found = true
				}
				if strings.Contains(line.Function.Name, "internal/lockcore.") {
					coreFrames = true
				}
			}
		}
		if found {
			count += s.Value[0]
		}
	}
	return count, coreFrames
}

func TestContentionProfile(t *testing.T) {
	if prev := pvlock.SetContentionProfileRate(1); prev != 0 {
		t.Fatalf("initial rate %d, want 0", prev)
	}
	defer pvlock.SetContentionProfileRate(0)
	before := fetchContentionProfile(t)
	base, _ := waitedIn(before, ".contendedCaller")
	const hold, rounds = 4 * time.Millisecond, 10
	for _, k := range lockKinds {
		l := k.new()
		for range rounds {
			contend(l, hold)
		}
	}
	p := fetchContentionProfile(t)
	if len(p.SampleType) != 1 || p.SampleType[0].Type != pvlock.ContentionProfileName {
		t.Fatalf("sample types %v, want one of type %s", p.SampleType, pvlock.ContentionProfileName)
	}
	got, core := waitedIn(p, ".contendedCaller")
	got -= base
	if core {
		t.Errorf("stacks hold frames of the lock core:\n%v", p)
	}
	// Each contended acquisition waited at least hold (a few ms, one count
	// each), except that a waiter may start late: allow for half.
	want := int64(len(lockKinds)*rounds) * int64(hold/pvlock.ContentionUnit) / 2
	if got < want {
		t.Fatalf("contendedCaller waited %d counts in the profile, want at least %d:\n%v", got, want, p)
	}
	if prev := pvlock.SetContentionProfileRate(0); prev != 1 {
		t.Fatalf("SetContentionProfileRate returned %d, want 1", prev)
	}
	// Off, nothing more is sampled.
	contend(new(ticket.Lock), hold)
	after, _ := waitedIn(fetchContentionProfile(t), ".contendedCaller")
	if after-base != got {
		t.Fatalf("with the rate 0 the profile went from %d to %d counts", got, after-base)
	}
}

// lockupWatch sets a threshold and a hook that sends the reports on the
// returned channel, and undoes both at cleanup.
func lockupWatch(t *testing.T, threshold time.Duration) <-chan pvlock.LockupReport {
	t.Helper()
	reports := make(chan pvlock.LockupReport, 16)
	prevT := pvlock.SetLockupThreshold(threshold)
	prevH := pvlock.SetLockupHook(func(r pvlock.LockupReport) {
		select {
		case reports <- r:
		default:
			t.Errorf("unread lockup report: %+v", r)
		}
	})
	t.Cleanup(func() {
		pvlock.SetLockupThreshold(prevT)
		pvlock.SetLockupHook(prevH)
	})
	return reports
}

// selfDeadlock takes l twice: the second Lock waits for itself until
// another goroutine unlocks l.
//
//go:noinline
func selfDeadlock(l locker) {
	l.Lock()
	l.Lock()
	l.Unlock()
}

// selfDeadlockHeld takes l, which its caller holds already, and releases
// it once.
//
//go:noinline
func selfDeadlockHeld(l locker) {
	l.Lock()
	l.Unlock()
}

// awaitLockup waits for one report about lock, and checks it came within
// the threshold (plus scheduling slack) of start, once.
func awaitLockup(t *testing.T, reports <-chan pvlock.LockupReport, start time.Time, threshold time.Duration) pvlock.LockupReport {
	t.Helper()
	const slack = 400 * time.Millisecond // well under the 1s halt watchdog
	select {
	case r := <-reports:
		if took := time.Since(start); took > threshold+slack {
			t.Errorf("reported after %v, threshold %v", took, threshold)
		}
		if r.Waited < threshold || r.Threshold != threshold {
			t.Errorf("report says waited %v, threshold %v; want >= %v", r.Waited, r.Threshold, threshold)
		}
		if !bytes.Contains(r.Stack, []byte("selfDeadlock")) || r.Goroutine == 0 {
			t.Errorf("report of goroutine %d lacks the waiter's stack:\n%s", r.Goroutine, r.Stack)
		}
		return r
	case <-time.After(threshold + 5*time.Second):
		t.Fatalf("no lockup reported %v after a self-deadlock (threshold %v)", time.Since(start), threshold)
	}
	return pvlock.LockupReport{}
}

// TestLockupSelfDeadlockGoroutine deadlocks a goroutine on each lock kind:
// each is reported once, within the threshold, and then unblocked.
func TestLockupSelfDeadlockGoroutine(t *testing.T) {
	const threshold = 150 * time.Millisecond
	reports := lockupWatch(t, threshold)
	for _, k := range lockKinds {
		t.Run(k.name, func(t *testing.T) {
			l := k.new()
			n := pvlock.LockupsSuspected()
			start := time.Now()
			done := make(chan struct{})
			go func() { defer close(done); selfDeadlock(l) }()
			r := awaitLockup(t, reports, start, threshold)
			if !strings.HasPrefix(k.name, r.Kind) || r.Lock == 0 || r.VCPU != nil {
				t.Errorf("report names lock %#x kind %s/%s, vCPU %v", r.Lock, r.Kind, r.Mode, r.VCPU)
			}
			if got := pvlock.LockupsSuspected() - n; got != 1 {
				t.Errorf("LockupsSuspected went up by %d, want 1", got)
			}
			// Once per wait: another threshold passes without a report.
			select {
			case r := <-reports:
				t.Errorf("second report of the same wait: %+v", r)
			case <-time.After(2 * threshold):
			}
			l.Unlock() // locks are not owned: this frees the waiter
			<-done
		})
	}
}

// TestLockupHolder deadlocks a goroutine that took the lock through its
// slow path: the report names it as the holder.
func TestLockupHolder(t *testing.T) {
	const threshold = 150 * time.Millisecond
	reports := lockupWatch(t, threshold)
	l := new(ticket.Lock)
	l.Lock()
	locked := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.Lock() // slow path: the test holds it
		close(locked)
		selfDeadlockHeld(l) // the test's Unlock below releases the first hold
	}()
	time.Sleep(20 * time.Millisecond)
	l.Unlock()
	<-locked
	start := time.Now()
	r := awaitLockup(t, reports, start, threshold)
	if r.Holder == nil || r.Holder.Goroutine != r.Goroutine || r.Holder.Held < threshold {
		t.Errorf("holder %+v, want goroutine %d holding for at least %v", r.Holder, r.Goroutine, threshold)
	}
	// One Unlock: the waiter's own ticket is served next. A second one
	// could pass it before it runs, and it would miss its turn.
	l.Unlock()
	<-done
}

// TestLockupSelfDeadlockVCPU deadlocks a vCPU: it is reported within the
// threshold with its vCPU, and unblocked by the test.
func TestLockupSelfDeadlockVCPU(t *testing.T) {
	const threshold = 150 * time.Millisecond
	reports := lockupWatch(t, threshold)
	vm, err := pvlock.NewVM(pvlock.Config{VCPUs: 1, Name: "lockup"})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range lockKinds {
		t.Run(k.name, func(t *testing.T) {
			l := k.new()
			start := time.Now()
			var wg sync.WaitGroup
			wg.Add(1)
			var runErr error
			go func() {
				defer wg.Done()
				runErr = vm.Run(context.Background(), func(ctx context.Context, v *pvlock.VCPU) error {
					selfDeadlock(l)
					return nil
				})
			}()
			r := awaitLockup(t, reports, start, threshold)
			if r.VCPU == nil || r.VCPU.VM() != vm || r.VCPU.Index() != 0 {
				t.Errorf("report names vCPU %v, want vCPU 0 of the VM", r.VCPU)
			}
			l.Unlock()
			wg.Wait()
			if runErr != nil {
				t.Fatal(runErr)
			}
		})
	}
}

func TestLockupDefaultHookLogs(t *testing.T) {
	r := pvlock.LockupReport{Lock: 0x1234, Kind: "ticket", Mode: "pv", Waited: time.Second, Threshold: time.Second,
		Goroutine: 7, Stack: []byte("goroutine 7 [running]:"), Holder: &pvlock.LockupHolder{Goroutine: 7, Held: 2 * time.Second}}
	v := r.LogValue().String()
	for _, want := range []string{"lock=0x1234", "kind=ticket", "goroutine=7", "holder=[goroutine=7 held=2s]"} {
		if !strings.Contains(v, want) {
			t.Errorf("LogValue %s lacks %q", v, want)
		}
	}
}

// BenchmarkContended is a contended Lock+Unlock from parallel goroutines
// with the contention profile off (the default) and on at rate 1 and 100:
// off, the slow path pays one atomic load.
func BenchmarkContended(b *testing.B) {
	for _, k := range lockKinds[:2] {
		for _, rate := range []int{0, 100, 1} {
			b.Run(k.name+"/rate="+strconv.Itoa(rate), func(b *testing.B) {
				defer pvlock.SetContentionProfileRate(pvlock.SetContentionProfileRate(rate))
				l := k.new()
				b.SetParallelism(4)
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						l.Lock()
						l.Unlock()
					}
				})
			})
		}
	}
}
