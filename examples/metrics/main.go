// Command metrics runs an overcommitted PV ticket lock workload on pinned
// vCPUs and serves its halt/kick statistics to Prometheus on /metrics.
//
// By default it starts two vCPUs per host CPU that all contend on one lock
// whose waiters spin only briefly before halting, so halts and kicks happen
// all the time, and it listens on the loopback interface only:
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
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/pvlock/pvlock/pvlock"
	"github.com/pvlock/pvlock/pvlock/metrics"
	"github.com/pvlock/pvlock/ticket"
)

// config is the command line.
type config struct {
	listen     string        // address of the HTTP server
	overcommit float64       // vCPUs per host CPU
	spin       time.Duration // PV spin time before a waiter halts
	cs, local  int           // work units inside and outside the lock
	duration   time.Duration // stop after this long; 0: run until signalled
}

func main() {
	var cfg config
	flag.StringVar(&cfg.listen, "listen", "127.0.0.1:9464", "address to serve /metrics on (port 0 picks a free port)")
	flag.Float64Var(&cfg.overcommit, "overcommit", 2, "vCPUs per host CPU")
	flag.DurationVar(&cfg.spin, "spin", 2*time.Microsecond, "how long a PV waiter spins before it halts")
	flag.IntVar(&cfg.cs, "cs", 200, "work units inside the critical section")
	flag.IntVar(&cfg.local, "local", 500, "work units between critical sections")
	flag.DurationVar(&cfg.duration, "duration", 0, "stop after this long (0: run until SIGINT or SIGTERM)")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "metrics: unexpected arguments %q\n", flag.Args())
		flag.Usage()
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
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(out, "serving http://%s/metrics: %d vCPUs on CPUs %v contending on a PV ticket lock (spin %v)\n",
		ln.Addr(), len(vm.VCPUs()), vm.CPUs(), cfg.spin)

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
		vmErr = vm.Run(ctx, contend(ticket.New(ticket.SpinDuration(cfg.spin)), cfg.cs, cfg.local, &acquisitions))
		cancel()
	}()

	<-ctx.Done()
	shutdownCtx, done := context.WithTimeout(context.Background(), 5*time.Second)
	defer done()
	shutErr := srv.Shutdown(shutdownCtx)
	wg.Wait()
	snap := ticket.Stats(true).Snapshot()
	fmt.Fprintf(out, "stopped after %d acquisitions, %d halts, %d kicks\n",
		acquisitions.Load(), snap.Get(ticket.Halts), snap.Get(ticket.ReleasedSlowKicked))
	if shutErr != nil {
		shutErr = fmt.Errorf("shut down the metrics server: %w", shutErr)
	}
	return errors.Join(serveErr, vmErr, shutErr)
}

// contend returns the workload of every vCPU: take the lock, do cs units
// of work on shared data, release it, do local units of private work.
func contend(l *ticket.Lock, cs, local int, acquisitions *atomic.Int64) pvlock.Workload {
	var shared uint64 // guarded by l
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
			l.Lock()
			shared = spin(shared, cs)
			l.Unlock()
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
