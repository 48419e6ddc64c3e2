// Command metrics runs an overcommitted workload on a PV ticket lock and a
// PV queued lock on pinned vCPUs and serves their halt/kick statistics to
// Prometheus on /metrics.
//
// By default it starts two vCPUs per host CPU that all contend on both
// locks, whose waiters spin only briefly before halting, so halts and
// kicks happen all the time, and it listens on the loopback interface
// only. Any other address, such as 0.0.0.0:9464, is refused unless
// -allow-remote says the metrics may be reachable from the network:
//
//	go run ./examples/metrics -listen 127.0.0.1:9464
//	curl -s http://127.0.0.1:9464/metrics | grep ^pvlock_
//
// It runs until SIGINT or SIGTERM (or for -duration), then stops the HTTP
// server and the VM and exits with status 0. See README.md for a Prometheus
// scrape configuration and queries.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/pvlock/pvlock/pvlock"
	"github.com/pvlock/pvlock/pvlock/metrics"
	"github.com/pvlock/pvlock/qspin"
	"github.com/pvlock/pvlock/ticket"
)

// config is the command line.
type config struct {
	listen      string        // address of the HTTP server
	allowRemote bool          // serve on an address other than loopback
	overcommit  float64       // vCPUs per host CPU
	spin        time.Duration // PV spin time before a waiter halts
	cs, local   int           // work units inside and outside the lock
	duration    time.Duration // stop after this long; 0: run until signalled
	contention  int           // contention profile rate; 0: off
}

func main() {
	var cfg config
	flag.StringVar(&cfg.listen, "listen", "127.0.0.1:9464", "address to serve /metrics on (port 0 picks a free port); loopback only unless -allow-remote")
	flag.BoolVar(&cfg.allowRemote, "allow-remote", false, "allow a -listen address other than loopback, reachable from the network")
	flag.Float64Var(&cfg.overcommit, "overcommit", 2, "vCPUs per host CPU")
	flag.DurationVar(&cfg.spin, "spin", 2*time.Microsecond, "how long a PV waiter spins before it halts")
	flag.IntVar(&cfg.cs, "cs", 200, "work units inside the critical section")
	flag.IntVar(&cfg.local, "local", 500, "work units between critical sections")
	flag.DurationVar(&cfg.duration, "duration", 0, "stop after this long (0: run until SIGINT or SIGTERM)")
	flag.IntVar(&cfg.contention, "contention-rate", 0, "sample 1 in n slow-path acquisitions in the pvlock.contention profile, served on /debug/pprof/ (0: off)")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "metrics: unexpected arguments %q\n", flag.Args())
		flag.Usage()
		os.Exit(2)
	}

	if cfg.duration < 0 {
		fmt.Fprintf(os.Stderr, "metrics: -duration %v must not be negative (0: run until SIGINT or SIGTERM)\n", cfg.duration)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if cfg.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.duration)
		defer cancel()
	}
	if err := run(ctx, cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "metrics:", err)
		os.Exit(1)
	}
}

// run serves the metrics and runs the workload until ctx ends, then shuts
// both down. It prints the address it serves on as soon as it listens.
func run(ctx context.Context, cfg config, out io.Writer) error {
	if cfg.cs < 0 || cfg.local < 0 {
		return fmt.Errorf("work units must not be negative (cs %d, local %d)", cfg.cs, cfg.local)
	}
	if cfg.spin <= 0 {
		return fmt.Errorf("spin time %v must be positive", cfg.spin)
	}
	if cfg.duration < 0 {
		return fmt.Errorf("-duration %v must not be negative (0: run until signalled)", cfg.duration)
	}
	loopback, err := isLoopback(cfg.listen)
	if err != nil {
		return err
	}
	if !loopback && !cfg.allowRemote {
		return fmt.Errorf("-listen %s is not a loopback address: the metrics would be reachable from the network; "+
			"use 127.0.0.1 or [::1], or pass -allow-remote to serve there anyway", cfg.listen)
	}
	vmCfg, err := pvlock.Overcommit(cfg.overcommit, nil)
	if err != nil {
		return err
	}
	vmCfg.Name = "demo"
	vm, err := pvlock.NewVM(vmCfg)
	if err != nil {
		return err
	}
	c := metrics.NewCollector(metrics.Options{})
	if err := c.AddVM(vm); err != nil {
		return err
	}
	reg := metrics.NewRegistry(c)

	ln, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.listen, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	if cfg.contention > 0 {
		pvlock.SetContentionProfileRate(cfg.contention)
		mux.HandleFunc("/debug/pprof/", pprof.Index) // serves /debug/pprof/pvlock.contention
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	reach := "loopback only"
	if !loopback {
		reach = "reachable from the network (-allow-remote)"
	}
	fmt.Fprintf(out, "serving http://%s/metrics: %d vCPUs on CPUs %v contending on a PV ticket lock and a PV queued lock (spin %v); %s\n",
		ln.Addr(), len(vm.VCPUs()), vm.CPUs(), cfg.spin, reach)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg              sync.WaitGroup
		serveErr, vmErr error
	)
	wg.Add(2)
	go func() {
		defer wg.Done()
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			serveErr = fmt.Errorf("serve metrics: %w", err)
			cancel()
		}
	}()
	var acquisitions atomic.Int64
	go func() {
		defer wg.Done()
		vmErr = vm.Run(ctx, contend([]sync.Locker{ticket.New(ticket.SpinDuration(cfg.spin)), qspin.New(qspin.SpinDuration(cfg.spin))},
			cfg.cs, cfg.local, &acquisitions))
		cancel()
	}()

	<-ctx.Done()
	shutdownCtx, done := context.WithTimeout(context.Background(), 5*time.Second)
	defer done()
	shutErr := srv.Shutdown(shutdownCtx)
	wg.Wait()
	tk, qs := ticket.Stats(ticket.ModePV).Snapshot(), qspin.Stats(qspin.ModePV).Snapshot()
	fmt.Fprintf(out, "stopped after %d acquisitions; ticket: %d halts, %d kicks; qspin: %d halts, %d kicks\n",
		acquisitions.Load(), tk.Get(ticket.Halts), tk.Get(ticket.ReleasedSlowKicked), qs.Get(qspin.Halts), qs.Get(qspin.PVKickUnlock))
	if shutErr != nil {
		shutErr = fmt.Errorf("shut down the metrics server: %w", shutErr)
	}
	return errors.Join(serveErr, vmErr, shutErr)
}

// isLoopback reports whether the host of a listen address is a loopback
// address; an empty host (":9464") means every interface.
func isLoopback(addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, fmt.Errorf("-listen %s: %w", addr, err)
	}
	if host == "localhost" {
		return true, nil
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback(), nil
}

// contend returns the workload of every vCPU: take each lock in turn, do
// cs units of work on its shared data, release it, do local units of
// private work.
func contend(locks []sync.Locker, cs, local int, acquisitions *atomic.Int64) pvlock.Workload {
	shared := make([]uint64, len(locks)) // shared[i] guarded by locks[i]
	return func(ctx context.Context, v *pvlock.VCPU) error {
		done := ctx.Done()
		private := uint64(v.Index())
		var n int64
		for {
			select {
			case <-done:
				acquisitions.Add(n)
				sink.Add(private)
				return nil
			default:
			}
			i := int(n) % len(locks)
			locks[i].Lock()
			shared[i] = spin(shared[i], cs)
			locks[i].Unlock()
			private = spin(private, local)
			n++
		}
	}
}

// sink keeps the private work from being optimised away.
var sink atomic.Uint64

// spin does n units of arithmetic on x.
func spin(x uint64, n int) uint64 {
	for i := 0; i < n; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	return x
}
