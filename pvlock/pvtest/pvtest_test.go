package pvtest_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pvlock/pvlock/internal/locktest"
	"github.com/pvlock/pvlock/pvlock"
	"github.com/pvlock/pvlock/pvlock/pvtest"
	"github.com/pvlock/pvlock/qspin"
)

// BenchmarkCounter is a benchmark written with pvtest: a counter under a
// PV queued lock at 1x and 4x overcommit. Every run checks that the vCPUs
// were as many as the factor says, that each of them ran, and that
// together they ran b.N iterations, no more, no less.
func BenchmarkCounter(b *testing.B) {
	cpus := locktest.HostCPUs(b)
	for _, oc := range []int{1, 4} {
		b.Run(fmt.Sprintf("oc=%dx", oc), func(b *testing.B) {
			var (
				mu  qspin.Lock
				n   int // guarded by mu
				ran atomic.Int32
			)
			want := oc * len(cpus)
			pvtest.RunParallel(b, float64(oc), func(pb *pvtest.PB) {
				if got := len(pb.VCPU().VM().VCPUs()); got != want {
					b.Errorf("%d vCPUs at %dx on %d CPUs, want %d", got, oc, len(cpus), want)
				}
				ran.Add(1)
				for pb.Next() {
					pb.Lock(&mu)
					n++
					mu.Unlock()
				}
			})
			if n != b.N || int(ran.Load()) != want {
				b.Fatalf("%d of %d vCPUs ran %d iterations, want b.N = %d", ran.Load(), want, n, b.N)
			}
		})
	}
}

// childEnv selects, in a sub-process of this test binary, the case that
// TestChild or BenchmarkChild runs.
const childEnv = "PVTEST_CHILD"

// failedAt is when a child case's vCPU called the testing function that
// ends it (unix nanoseconds); the child's cleanup prints how long after it
// the test ended.
var failedAt atomic.Int64

func markFailing() { failedAt.Store(time.Now().UnixNano()) }

// childCase returns the case of cases that childEnv selects, and has the
// child's cleanup print how long after the vCPU's call (failedAt) the
// test ended. Outside a sub-process it skips tb.
func childCase[F any](tb testing.TB, cases map[string]F) F {
	tb.Helper()
	f, ok := cases[os.Getenv(childEnv)]
	if !ok {
		tb.Skip("runs in a sub-process of TestVCPUFailuresEndTheTest")
	}
	tb.Cleanup(func() {
		if at := failedAt.Load(); at != 0 {
			fmt.Printf("pvtest-child: ended %d ns after the vCPU's call\n", time.Now().UnixNano()-at)
		}
	})
	return f
}

//go:noinline
func explode() { panic("boom") }

// busy runs a lock loop until ctx is done: the vCPUs that do not fail are
// busy when another one does.
func busy(ctx context.Context, mu *qspin.Lock) {
	for ctx.Err() == nil {
		mu.Lock()
		mu.Unlock()
	}
}

// childTests are TestChild's cases: workloads on 2x overcommit in which
// vCPU 1 ends its goroutine one way or another while the others keep busy.
// TestChild marks the failure's time (markFailing) before it runs one.
var childTests = map[string]func(t *testing.T, v *pvlock.VCPU) error{
	"fatal":   func(t *testing.T, v *pvlock.VCPU) error { t.Fatalf("fatal on vCPU %d", v.Index()); return nil },
	"failnow": func(t *testing.T, _ *pvlock.VCPU) error { t.FailNow(); return nil },
	"skip":    func(t *testing.T, v *pvlock.VCPU) error { t.Skipf("skip on vCPU %d", v.Index()); return nil },
	"goexit":  func(*testing.T, *pvlock.VCPU) error { runtime.Goexit(); return nil },
	"panic":   func(*testing.T, *pvlock.VCPU) error { explode(); return nil },
	"error":   func(*testing.T, *pvlock.VCPU) error { return errors.New("the workload's own error") },
}

// TestChild runs a case of childTests in a sub-process of
// TestVCPUFailuresEndTheTest; run directly, it skips.
func TestChild(t *testing.T) {
	f := childCase(t, childTests)
	var mu qspin.Lock
	pvtest.Run(t, 2, func(ctx context.Context, v *pvlock.VCPU) error {
		if v.Index() == 1 {
			markFailing()
			return f(t, v)
		}
		busy(ctx, &mu)
		return nil
	})
	t.Error("pvtest.Run returned after a failed run")
}

// childBenchmarks are BenchmarkChild's cases: bodies at 2x overcommit in
// which vCPU 0 ends its goroutine one way or another while the others run
// the benchmark loop.
var childBenchmarks = map[string]func(b *testing.B, pb *pvtest.PB){
	"bench-fatal": func(b *testing.B, pb *pvtest.PB) {
		markFailing()
		b.Fatalf("fatal on vCPU %d", pb.VCPU().Index())
	},
	"bench-skip": func(b *testing.B, pb *pvtest.PB) {
		markFailing()
		b.Skip("skip on vCPU 0")
	},
	"bench-panic": func(b *testing.B, pb *pvtest.PB) {
		markFailing()
		explode()
	},
	"bench-early": func(b *testing.B, pb *pvtest.PB) {},
}

// BenchmarkChild runs a case of childBenchmarks in a sub-process of
// TestVCPUFailuresEndTheTest; run directly, it skips.
func BenchmarkChild(b *testing.B) {
	f := childCase(b, childBenchmarks)
	var mu qspin.Lock
	pvtest.RunParallel(b, 2, func(pb *pvtest.PB) {
		if pb.VCPU().Index() == 0 {
			f(b, pb)
			return
		}
		for pb.Next() {
			pb.Lock(&mu)
			mu.Unlock()
		}
	})
	b.Error("pvtest.RunParallel returned after a failed run")
}

// spinWork is about a microsecond of work that never blocks.
func spinWork() {
	x := uint64(1)
	for i := 0; i < 1000; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	sink.Add(x)
}

var sink atomic.Uint64

// BenchmarkChildMetrics are the benchmarks whose metrics
// TestBenchmarkMetrics checks, in a sub-process; run directly, they skip.
// Idle halts each vCPU once per iteration and kicks nobody; spin never
// halts, and at 4x its vCPUs wait for a CPU about three quarters of the
// time.
func BenchmarkChildMetrics(b *testing.B) {
	if os.Getenv(childEnv) != "metrics" {
		b.Skip("runs in a sub-process of TestBenchmarkMetrics")
	}
	b.Run("idle", func(b *testing.B) {
		pvtest.RunParallel(b, 1, func(pb *pvtest.PB) {
			for pb.Next() {
				pb.VCPU().Idle(20 * time.Microsecond)
			}
		})
	})
	b.Run("spin", func(b *testing.B) {
		pvtest.RunParallel(b, 4, func(pb *pvtest.PB) {
			for pb.Next() {
				spinWork()
			}
		})
	})
}

// runChild runs this test binary again with childEnv=name and args, and
// returns its output and whether it passed.
func runChild(t *testing.T, name string, args ...string) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], append([]string{"-test.v", "-test.count=1", "-test.timeout=10s"}, args...)...)
	cmd.Env = append(os.Environ(), childEnv+"="+name)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("child %s: %v\n%s", name, err, out)
	}
	if strings.Contains(string(out), "panic: test timed out") {
		t.Fatalf("child %s hung:\n%s", name, out)
	}
	return string(out), err == nil
}

var endedAfter = regexp.MustCompile(`pvtest-child: ended (\d+) ns after`)

// TestVCPUFailuresEndTheTest runs tests and benchmarks whose workload
// fails on one vCPU, each in a sub-process so that this test does not
// fail: t.Fatal, t.FailNow, a bare runtime.Goexit, a panic and an error
// fail the test (b.Fatal and a panic the benchmark), t.Skip and b.Skip skip
// it, and in every case the test ends within a second of the vCPU's call,
// although the other vCPUs were busy. A panic is reported with its stack.
func TestVCPUFailuresEndTheTest(t *testing.T) {
	cases := []struct {
		name string
		pass bool     // the child passes (skips)
		want []string // in its output
	}{
		{"fatal", false, []string{"--- FAIL: TestChild", "fatal on vCPU 1"}},
		{"failnow", false, []string{"--- FAIL: TestChild"}},
		{"skip", true, []string{"--- SKIP: TestChild", "skip on vCPU 1"}},
		{"goexit", false, []string{"--- FAIL: TestChild", "vCPU 1 of", "runtime.Goexit"}},
		{"panic", false, []string{"--- FAIL: TestChild", "panicked: boom", "goroutine ", "pvtest_test.explode(", "pvtest_test.go:"}},
		{"error", false, []string{"--- FAIL: TestChild", "vCPU 1 of", "the workload's own error"}},
		{"bench-fatal", false, []string{"--- FAIL: BenchmarkChild", "fatal on vCPU 0"}},
		{"bench-skip", true, []string{"--- SKIP: BenchmarkChild", "skip on vCPU 0"}},
		{"bench-panic", false, []string{"--- FAIL: BenchmarkChild", "panicked: boom", "goroutine ", "pvtest_test.explode("}},
		{"bench-early", false, []string{"--- FAIL: BenchmarkChild", "body of vCPU 0 returned before pb.Next() reported false"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := []string{"-test.run=^TestChild$"}
			if strings.HasPrefix(c.name, "bench-") {
				args = []string{"-test.run=^$", "-test.bench=^BenchmarkChild$", "-test.benchtime=100x"}
			}
			out, passed := runChild(t, c.name, args...)
			if passed != c.pass {
				t.Errorf("child passed: %v, want %v", passed, c.pass)
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("child output lacks %q", w)
				}
			}
			if strings.Contains(out, "returned after a failed run") {
				t.Error("the test went on after the failed run")
			}
			if c.name != "bench-early" {
				m := endedAfter.FindStringSubmatch(out)
				if m == nil {
					t.Errorf("the child did not say when it ended")
				} else if ns, _ := strconv.ParseInt(m[1], 10, 64); time.Duration(ns) > time.Second {
					t.Errorf("the test ended %v after the vCPU's call, want within a second", time.Duration(ns))
				}
			}
			if t.Failed() {
				t.Logf("child output:\n%s", out)
			}
		})
	}
}

// benchLine is a standard benchmark result line: name, iterations, then
// value-unit pairs.
type benchLine struct {
	name    string
	n       int
	metrics map[string]float64
}

// parseBench returns the result lines of go test -bench output, as
// benchstat reads them.
func parseBench(t *testing.T, out string) []benchLine {
	t.Helper()
	var lines []benchLine
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") || len(f)%2 != 0 {
			continue
		}
		n, err := strconv.Atoi(f[1])
		if err != nil {
			continue
		}
		bl := benchLine{name: f[0], n: n, metrics: map[string]float64{}}
		for i := 2; i < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("bad value %q of %s in %q", f[i], f[i+1], l)
			}
			bl.metrics[f[i+1]] = v
		}
		lines = append(lines, bl)
	}
	return lines
}

// TestBenchmarkLines runs BenchmarkCounter with -count and -benchtime in a
// sub-process: it must pass at 1x and 4x, print one standard result line
// per run with b.N as -benchtime says, and report every pvtest metric in
// range. p99-ns must be there once b.N is large enough that some vCPU
// certainly timed an acquisition (SampleEvery per vCPU).
func TestBenchmarkLines(t *testing.T) {
	cpus := locktest.HostCPUs(t)
	for _, bt := range []struct {
		flag  string
		exact int // b.N the flag fixes; 0 for a duration
	}{{"300x", 300}, {"20ms", 0}} {
		out, ok := runChild(t, "", "-test.run=^$", "-test.bench=^BenchmarkCounter$", "-test.benchtime="+bt.flag, "-test.count=2")
		if !ok {
			t.Fatalf("-benchtime %s: BenchmarkCounter failed:\n%s", bt.flag, out)
		}
		runs := map[string]int{}
		for _, l := range parseBench(t, out) {
			oc, _, ok := strings.Cut(strings.TrimPrefix(l.name, "BenchmarkCounter/oc="), "-")
			if !ok || (oc != "1x" && oc != "4x") {
				t.Errorf("unexpected benchmark %s", l.name)
				continue
			}
			runs[oc]++
			if bt.exact > 0 && l.n != bt.exact {
				t.Errorf("-benchtime %s: %s ran %d iterations", bt.flag, l.name, l.n)
			}
			units := []string{"ns/op", "halts/op", "kicks/op", "steal%"}
			factor, _ := strconv.Atoi(strings.TrimSuffix(oc, "x"))
			if l.n >= pvtest.SampleEvery*factor*len(cpus) {
				units = append(units, "p99-ns")
			}
			for _, unit := range units {
				v, ok := l.metrics[unit]
				if !ok || v < 0 || (unit == "steal%" && v > 100) {
					t.Errorf("-benchtime %s: %s reports %s = %v (present: %v)", bt.flag, l.name, unit, v, ok)
				}
			}
			if p99, ok := l.metrics["p99-ns"]; l.metrics["ns/op"] == 0 || (ok && p99 == 0) {
				t.Errorf("-benchtime %s: %s took no time: %v", bt.flag, l.name, l.metrics)
			}
		}
		if runs["1x"] != 2 || runs["4x"] != 2 {
			t.Fatalf("-benchtime %s -count 2: result lines per overcommit %v, want 2 each:\n%s", bt.flag, runs, out)
		}
	}
}

// TestBenchmarkMetrics checks the metrics against bodies whose halts and
// steal are known (BenchmarkChildMetrics): one Idle per iteration is one
// halt per op and no kick; CPU-bound vCPUs at 4x wait for a CPU much of
// the time. Neither body calls PB.Lock, so neither reports p99-ns.
func TestBenchmarkMetrics(t *testing.T) {
	got := map[string]map[string]float64{}
	var out strings.Builder
	for _, run := range []struct{ sub, benchtime string }{{"idle", "200x"}, {"spin", "300000x"}} {
		o, ok := runChild(t, "metrics", "-test.run=^$", "-test.bench=^BenchmarkChildMetrics$/^"+run.sub+"$", "-test.benchtime="+run.benchtime)
		out.WriteString(o)
		if !ok {
			t.Fatalf("BenchmarkChildMetrics/%s failed:\n%s", run.sub, o)
		}
		for _, l := range parseBench(t, o) {
			sub, _, _ := strings.Cut(strings.TrimPrefix(l.name, "BenchmarkChildMetrics/"), "-")
			got[sub] = l.metrics
		}
	}
	idle, spin := got["idle"], got["spin"]
	if idle == nil || spin == nil {
		t.Fatalf("missing result lines:\n%s", out.String())
	}
	if idle["halts/op"] != 1 || idle["kicks/op"] != 0 {
		t.Errorf("idle: %v halts/op, %v kicks/op; want 1 and 0", idle["halts/op"], idle["kicks/op"])
	}
	// 8 CPU-bound vCPUs on 2 CPUs wait three quarters of the time, less
	// the run's tail: the last grains finish with fewer vCPUs runnable.
	// That tail is up to a few scheduler slices, so the run is long
	// (0.2-0.5 s) to keep it a small share.
	if spin["halts/op"] != 0 || spin["steal%"] < 50 {
		t.Errorf("spin at 4x: %v halts/op, %v%% steal; want 0 and most of the time", spin["halts/op"], spin["steal%"])
	}
	for sub, m := range got {
		if _, ok := m["p99-ns"]; ok {
			t.Errorf("%s reports p99-ns without PB.Lock", sub)
		}
	}
	if t.Failed() {
		t.Logf("child output:\n%s", out.String())
	}
}

// TestRun: Run runs the workload on factor vCPUs per CPU, pinned and with
// GOMAXPROCS raised, and returns the VM with its counters.
func TestRun(t *testing.T) {
	cpus := locktest.HostCPUs(t)
	var ran atomic.Int32
	vm := pvtest.Run(t, 2, func(ctx context.Context, v *pvlock.VCPU) error {
		ran.Add(1)
		if v.CPU() < 0 {
			return errors.New("vCPU not pinned to a home CPU")
		}
		if g := runtime.GOMAXPROCS(0); g < 2*len(cpus)+2 {
			return fmt.Errorf("GOMAXPROCS %d while %d vCPUs run", g, 2*len(cpus))
		}
		v.Idle(time.Microsecond)
		return nil
	})
	if n := len(vm.VCPUs()); n != 2*len(cpus) || int(ran.Load()) != n {
		t.Fatalf("%d of %d vCPUs ran, want %d", ran.Load(), n, 2*len(cpus))
	}
	for _, v := range vm.VCPUs() {
		if c := v.Waiter().Counters(); c.Halts != 1 {
			t.Errorf("vCPU %d halted %d times, want 1", v.Index(), c.Halts)
		}
	}
	one := pvtest.RunConfig(t, pvlock.Config{VCPUs: 3, CPUs: cpus[:1], Name: "one-cpu"}, func(ctx context.Context, v *pvlock.VCPU) error {
		if v.CPU() != cpus[0] {
			return fmt.Errorf("vCPU on CPU %d, want %d", v.CPU(), cpus[0])
		}
		return nil
	})
	if one.Name() != "one-cpu" || len(one.VCPUs()) != 3 {
		t.Fatalf("RunConfig ran %s with %d vCPUs", one.Name(), len(one.VCPUs()))
	}
}
