package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLabFlagsRejected(t *testing.T) {
	for _, args := range [][]string{
		{"lockbreak", "-oc", "0"}, {"lockbreak", "-lock", "nope"}, {"lockbreak", "-runs", "0"},
		{"lockbreak", "-step", "3ms", "-batch", "1ms"}, {"lockbreak", "extra"},
		{"shootdown", "-chunk", "0"}, {"shootdown", "-pin", "up"}, {"shootdown", "-cpus", "x"},
		{"shootdown", "-duration", "0s"},
		// The subcommands share the main command's parsers: these were once
		// accepted here while the main command refused them.
		{"lockbreak", "-oc", "Inf"}, {"shootdown", "-cpus", "-1"}, {"lockbreak", "-oc", ","},
	} {
		if err := run(args, &bytes.Buffer{}, &bytes.Buffer{}); err == nil {
			t.Errorf("run(%q) accepted", args)
		}
	}
}

func TestLabCommands(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		cmd   string
		wants []string
	}{
		{"lockbreak", []string{"lock-break", "p99 µs", "batches/s", " off", " on"}},
		{"shootdown", []string{"%improvement", "native", "pv", "deferred"}},
	} {
		js := filepath.Join(dir, c.cmd+".json")
		var out, errOut bytes.Buffer
		if err := run([]string{c.cmd, "-oc", "1", "-runs", "1", "-duration", "50ms", "-json", js}, &out, &errOut); err != nil {
			t.Fatalf("%s: %v\n%s", c.cmd, err, errOut.String())
		}
		for _, want := range c.wants {
			if !strings.Contains(out.String(), want) {
				t.Errorf("%s output lacks %q:\n%s", c.cmd, want, out.String())
			}
		}
		b, err := os.ReadFile(js)
		if err != nil {
			t.Fatal(err)
		}
		var rows []map[string]any
		if err := json.Unmarshal(b, &rows); err != nil || len(rows) != 2 {
			t.Fatalf("%s JSON: %v, %d rows", c.cmd, err, len(rows))
		}
	}
}
