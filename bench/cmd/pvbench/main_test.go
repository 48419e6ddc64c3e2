package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pvlock/pvlock/bench"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestParseRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-oc", "0"}, {"-oc", "x"}, {"-oc", ""}, {"-oc", "-1"}, {"-locks", "nope"}, {"-locks", ""},
		{"-workload", "nope"}, {"-runs", "0"}, {"-duration", "-1s"}, {"-duration", "0"}, {"-pin", "sideways"},
		{"-cpus", "a"}, {"extra"}, {"-vms", "0"}, {"-warmup", "-1ms"}, {"-seed", "-3"}, {"-seed", "x"},
		{"-cs", "0"}, {"-outside", "-1us"}, {"-base", "nope"}, {"-patched", "nope"}, {"-nosuchflag"},
	} {
		if _, err := parse(args, &bytes.Buffer{}); err == nil {
			t.Errorf("parse(%q) accepted", args)
		}
	}
	o, err := parse(nil, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if len(o.factors) != 4 || strings.Join(o.locks, ",") != strings.Join(bench.LockNames(), ",") || o.runs < 3 ||
		o.workload != "lockloop" || o.vms != 1 || o.outDir != "out" || o.seed != 1 {
		t.Fatalf("defaults %+v", o)
	}
	// The default job must fit its budget: about 3 minutes on 2 CPUs for
	// nine locks at four factors.
	perCell := time.Duration(o.runs)*o.duration + o.warmup + 100*time.Millisecond
	if budget := 9 * 4 * perCell; budget > 150*time.Second {
		t.Fatalf("default job would take about %v", budget)
	}
	o, err = parse([]string{"-oc", "0.5, 2", "-vms", "2", "-seed", "9", "-warmup", "0", "-cpus", "0", "-pin", "float",
		"-workload", "ebizzy", "-cs", "1us", "-out", ""}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if o.factors[0] != 0.5 || o.factors[1] != 2 || o.vms != 2 || o.seed != 9 || o.warmup >= 0 ||
		o.cpus[0] != 0 || o.workload != "ebizzy" || o.params.CriticalWork != time.Microsecond || o.outDir != "" {
		t.Fatalf("parsed %+v", o)
	}
}

func TestHelpIsNotAnError(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"-h"}, &out, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "-vms") || !strings.Contains(out.String(), "-seed") {
		t.Fatalf("usage lacks the new flags:\n%s", out.String())
	}
}

func TestRunWritesTablesJSONAndPlots(t *testing.T) {
	dir := t.TempDir()
	js := filepath.Join(dir, "rows.json")
	cs := filepath.Join(dir, "rows.csv")
	plots := filepath.Join(dir, "plots")
	var out, errOut bytes.Buffer
	err := run([]string{"-oc", "1,2", "-runs", "1", "-duration", "50ms", "-warmup", "10ms",
		"-locks", "native-ticket,pv-ticket,sync.Mutex", "-json", js, "-csv", cs, "-out", plots}, &out, &errOut)
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	for _, want := range []string{"%improvement", "native-ticket", "pv-ticket", "sync.Mutex", "halts/1k", "jain", "p99",
		"plots: " + filepath.Join(plots, "lockloop-throughput.png")} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if errOut.Len() != 0 {
		t.Errorf("stderr is not a terminal, yet got %q", errOut.String())
	}
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var rows []struct {
		Workload   string  `json:"workload"`
		Lock       string  `json:"lock"`
		Overcommit float64 `json:"overcommit"`
		OpsPerSec  float64 `json:"ops_per_sec"`
		Jain       float64 `json:"jain"`
		LatP99     uint64  `json:"lat_p99_ns"`
	}
	if err := json.Unmarshal(b, &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 6 || rows[0].Workload != "lockloop" || rows[5].Overcommit != 2 || rows[0].OpsPerSec <= 0 ||
		rows[0].Jain <= 0 || rows[0].LatP99 == 0 {
		t.Fatalf("JSON rows %+v", rows)
	}
	if _, err := os.Stat(cs); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"lockloop-throughput.svg", "lockloop-fairness.png", "lockloop-latency.svg"} {
		if st, err := os.Stat(filepath.Join(plots, f)); err != nil || st.Size() == 0 {
			t.Errorf("plot %s: %v", f, err)
		}
	}

	// -from reports the saved rows again without measuring.
	var again bytes.Buffer
	replots := filepath.Join(dir, "replots")
	if err := run([]string{"-from", js, "-out", replots, "-duration", "10s"}, &again, &again); err != nil {
		t.Fatal(err)
	}
	// A measurement would print its header line (and take a minute).
	if strings.Contains(again.String(), "pvbench: lockloop on") {
		t.Fatalf("-from measured:\n%s", again.String())
	}
	first := out.String()[strings.Index(out.String(), "lockloop throughput"):]
	if again.String() != strings.ReplaceAll(first, plots, replots) {
		t.Errorf("-from report differs:\n%s\nwant:\n%s", again.String(), first)
	}
	for _, bad := range []string{filepath.Join(dir, "none.json"), cs} {
		if err := run([]string{"-from", bad, "-out", ""}, &again, &again); err == nil {
			t.Errorf("-from %s accepted", bad)
		}
	}
}

func TestRunOtherWorkloadsAndVMs(t *testing.T) {
	var out bytes.Buffer
	err := run([]string{"-workload", "hackbench", "-oc", "1", "-vms", "2", "-runs", "1", "-duration", "40ms",
		"-locks", "ple-yield,preemptable-ticket", "-base", "ple-yield", "-patched", "preemptable-ticket", "-out", ""}, &out, &out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{"messages/s", "2 VM(s)", "preemptable-ticket"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "plots:") {
		t.Error("-out \"\" still wrote plots")
	}
}

func TestRunChecksOutputsFirst(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	plots := filepath.Join(dir, "plots")
	for _, args := range [][]string{
		{"-json", filepath.Join(dir, "missing", "rows.json"), "-out", plots},
		{"-csv", filepath.Join(dir, "missing", "rows.csv"), "-out", plots},
		{"-out", filepath.Join(file, "plots")},
	} {
		var out bytes.Buffer
		start := time.Now()
		err := run(append(args, "-duration", "10s"), &out, &out)
		if err == nil {
			t.Errorf("run(%q) succeeded", args)
		}
		// Measuring with these flags takes minutes; failing first, moments
		// (30s leaves room for an overloaded machine).
		if time.Since(start) > 30*time.Second || strings.Contains(out.String(), "throughput") {
			t.Errorf("run(%q) measured before failing", args)
		}
	}
}

func TestProgressBar(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b, 3)
	p.show("x")
	p.step()
	p.finish()
	if b.Len() != 0 {
		t.Fatalf("progress on a non-terminal wrote %q", b.String())
	}
	line := renderBar(12, 36, "pv-ticket 2x", 24*time.Second, 60)
	if !strings.HasPrefix(line, "[") || !strings.Contains(line, "12/36 pv-ticket 2x") || !strings.Contains(line, "ETA 48s") ||
		len(line) > 59 {
		t.Fatalf("bar %q", line)
	}
	if full := renderBar(5, 5, "done", time.Second, 40); strings.Contains(full, ">") || !strings.Contains(full, "=====") {
		t.Fatalf("full bar %q", full)
	}
}
