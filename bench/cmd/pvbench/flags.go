package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

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

// parseFactors parses -oc: a non-empty list of positive, finite numbers.
func parseFactors(s string) ([]float64, error) {
	var out []float64
	for _, f := range splitList(s) {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || !(v > 0) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("-oc: %q is not a positive number", f)
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, errors.New("-oc is empty")
	}
	return out, nil
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

// writeFile creates path and writes rows to it with write.
func writeFile[T any](path string, rows []T, write func(io.Writer, []T) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f, rows); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}
