package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/pvlock/pvlock/bench"
	"github.com/pvlock/pvlock/pvlock"
)

// The flag values every pvbench subcommand shares are parsed here, once,
// so that they accept and reject the same things everywhere.

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// parseFactors parses -oc: a non-empty list of distinct positive, finite
// numbers.
func parseFactors(s string) ([]float64, error) {
	var out []float64
	for _, f := range splitList(s) {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || !(v > 0) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("-oc: %q is not a positive number", f)
		}
		if slices.Contains(out, v) {
			return nil, fmt.Errorf("-oc: %g is listed twice", v)
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, errors.New("-oc is empty")
	}
	return out, nil
}

// checkFactorVCPUs refuses overcommit factors that make no vCPU on the
// CPUs (all allowed ones when cpus is nil): pvlock.Overcommit would round
// them up to one vCPU, and the tables would label that 1e-09x. It also
// refuses two factors that round to the same number of vCPUs, which would
// measure the same configuration twice under two labels.
func checkFactorVCPUs(factors []float64, cpus []int) error {
	n := len(cpus)
	if cpus == nil {
		host, err := pvlock.HostCPUs()
		if err != nil {
			return err
		}
		n = len(host)
	}
	made := map[float64]float64{} // vCPUs -> factor
	for _, f := range factors {
		v := math.Round(f * float64(n))
		if v < 1 {
			return fmt.Errorf("-oc %g makes %g vCPUs on %d CPUs (round(factor x CPUs)); the smallest useful factor here is %g",
				f, v, n, 1/float64(n))
		}
		if g, dup := made[v]; dup {
			return fmt.Errorf("-oc %g and %g both make %g vCPUs on %d CPUs; keep one", g, f, v, n)
		}
		made[v] = f
	}
	return nil
}

// parseCPUs parses -cpus: CPU numbers, or nil (all allowed CPUs) when empty.
// Whether they are in the allowed set is checked when a VM is made.
func parseCPUs(s string) ([]int, error) {
	var out []int
	for _, f := range splitList(s) {
		c, err := strconv.Atoi(f)
		if err != nil || c < 0 {
			return nil, fmt.Errorf("-cpus: %q is not a CPU number", f)
		}
		out = append(out, c)
	}
	return out, nil
}

// parsePinning parses -pin.
func parsePinning(s string) (pvlock.Pinning, error) {
	switch s {
	case "each":
		return pvlock.PinEach, nil
	case "float":
		return pvlock.PinFloat, nil
	}
	return 0, fmt.Errorf("-pin: %q is neither each nor float", s)
}

// parseHostLoad parses -hostload: CPU:PERCENT, or nil when empty.
func parseHostLoad(s string) (*bench.HostLoad, error) {
	if s == "" {
		return nil, nil
	}
	c, p, ok := strings.Cut(s, ":")
	cpu, err1 := strconv.Atoi(c)
	pct, err2 := strconv.ParseFloat(strings.TrimSuffix(p, "%"), 64)
	if !ok || err1 != nil || err2 != nil {
		return nil, fmt.Errorf("-hostload: %q is not CPU:PERCENT, such as 1:50", s)
	}
	h := &bench.HostLoad{CPU: cpu, Share: pct / 100}
	if err := h.Check(); err != nil {
		return nil, fmt.Errorf("-hostload: %w", err)
	}
	return h, nil
}

// writeFile creates path and writes rows to it with write. An empty path
// is an output that was not asked for: nothing is written.
func writeFile[T any](path string, rows []T, write func(io.Writer, []T) error) error {
	if path == "" {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write rows: %w", err)
	}
	if err := write(f, rows); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}
