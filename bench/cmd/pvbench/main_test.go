package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pvlock/pvlock/bench"
	"github.com/pvlock/pvlock/bench/locks"
	"github.com/pvlock/pvlock/internal/testkit"
	"go.uber.org/goleak"
)

func TestParseRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-oc", "0"}, {"-oc", "x"}, {"-oc", ""}, {"-oc", "-1"}, {"-locks", "nope"}, {"-locks", ""},
		{"-workload", "nope"}, {"-runs", "0"}, {"-rounds", "0"}, {"-duration", "-1s"}, {"-duration", "0"}, {"-pin", "sideways"},
		{"-cpus", "a"}, {"extra"}, {"-vms", "0"}, {"-warmup", "-1ms"}, {"-seed", "-3"}, {"-seed", "x"},
		{"-cs", "0"}, {"-outside", "-1us"}, {"-base", "nope"}, {"-patched", "nope"}, {"-nosuchflag"},
		{"-oc", "1,1"}, {"-oc", "2,1,2.0"}, {"-oc", "1e-9"}, {"-oc", "0.0001", "-cpus", "0"}, {"-oc", "1,1.1", "-cpus", "0"},
		{"-hostload", "1"}, {"-hostload", "x:50"}, {"-hostload", "1:x"}, {"-hostload", "1:0"}, {"-hostload", "1:95"}, {"-hostload", "-1:50"},
	} {
		if _, err := parse(args, &bytes.Buffer{}); err == nil {
			t.Errorf("parse(%q) accepted", args)
		}
	}
	o, err := parse(nil, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if len(o.factors) != 4 || strings.Join(o.locks, ",") != strings.Join(locks.Names(), ",") || o.runs < 3 ||
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
		"-workload", "ebizzy", "-cs", "1us", "-out", "", "-hostload", "0:50%"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if o.factors[0] != 0.5 || o.factors[1] != 2 || o.vms != 2 || o.seed != 9 || o.warmup >= 0 ||
		o.cpus[0] != 0 || o.workload != "ebizzy" || o.params.CriticalWork != time.Microsecond || o.outDir != "" ||
		o.load == nil || o.load.CPU != 0 || o.load.Share != 0.5 {
		t.Fatalf("parsed %+v", o)
	}
}

func TestHelpIsNotAnError(t *testing.T) {
	if out := output(t, "-h"); !strings.Contains(out, "-vms") || !strings.Contains(out, "-seed") {
		t.Fatalf("usage lacks the new flags:\n%s", out)
	}
}

// pvbench -h and pvbench help list every registered subcommand: the list
// comes from labCommands, so a command registered anywhere shows up.
func TestHelpListsEveryCommand(t *testing.T) {
	labCommands["test-registered"] = func(context.Context, []string, io.Writer, io.Writer) error { return nil }
	defer delete(labCommands, "test-registered")
	var h, help bytes.Buffer
	if err := run([]string{"-h"}, &bytes.Buffer{}, &h); err != nil {
		t.Fatal(err)
	}
	if err := run([]string{"help"}, &help, &bytes.Buffer{}); err != nil {
		t.Fatalf("pvbench help: %v", err)
	}
	for _, usage := range []string{h.String(), help.String()} {
		for _, name := range append(commandNames(), "torture", "lockbreak", "shootdown", "help", "test-registered") {
			if !strings.Contains(usage, "\n  "+name+" ") {
				t.Errorf("usage does not list %s:\n%s", name, usage)
			}
		}
		if !strings.Contains(usage, "-workload") {
			t.Errorf("usage lacks the main job's flags:\n%s", usage)
		}
	}
	var sub bytes.Buffer
	if err := run([]string{"help", "lockbreak"}, &sub, &sub); err != nil || !strings.Contains(sub.String(), "-batch") {
		t.Errorf("pvbench help lockbreak: %v\n%s", err, sub.String())
	}
	for _, args := range [][]string{{"help", "nope"}, {"nope"}, {"help", "torture", "x"}} {
		if err := run(args, &bytes.Buffer{}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "torture") {
			t.Errorf("run(%q) = %v, want an error listing the commands", args, err)
		}
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
	// stderr is not a terminal: one progress line per cell, no bar.
	if n := strings.Count(errOut.String(), "pvbench: ["); n != 6 || !strings.Contains(errOut.String(), "[6/6] sync.Mutex 2x: ") ||
		strings.Contains(errOut.String(), "\r") {
		t.Errorf("want 6 progress lines on stderr, got:\n%s", errOut.String())
	}
	var rows []struct {
		Workload   string  `json:"workload"`
		Lock       string  `json:"lock"`
		Overcommit float64 `json:"overcommit"`
		OpsPerSec  float64 `json:"ops_per_sec"`
		Jain       float64 `json:"jain"`
		LatP99     uint64  `json:"lat_p99_ns"`
	}
	readJSON(t, js, &rows)
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

	// -locks and -oc select among the saved rows; the seed table says why
	// it is missing when -base is not among them.
	var sel bytes.Buffer
	if err := run([]string{"-from", js, "-out", "", "-locks", "pv-ticket,sync.Mutex", "-oc", "2"}, &sel, &sel); err != nil {
		t.Fatal(err)
	}
	matrix := sel.String()[strings.Index(sel.String(), "all rows"):]
	headline, _, _ := strings.Cut(sel.String(), "no native-ticket vs pv-ticket table: no rows of native-ticket")
	if strings.Contains(matrix, "native-ticket") || !strings.Contains(matrix, "sync.Mutex") || strings.Contains(headline, "1x") ||
		headline == sel.String() {
		t.Errorf("-from with -locks pv-ticket,sync.Mutex -oc 2:\n%s", sel.String())
	}
	for _, args := range [][]string{{"-locks", "tas"}, {"-oc", "3"}, {"-workload", "ebizzy"}} {
		if err := run(append([]string{"-from", js, "-out", ""}, args...), &bytes.Buffer{}, &bytes.Buffer{}); err == nil {
			t.Errorf("-from with %q (not in the file) accepted", args)
		}
	}
}

// -from refuses files of another kind, saying what it expected.
func TestFromRejectsOtherRows(t *testing.T) {
	dir := t.TempDir()
	foo := filepath.Join(dir, "foo.json")
	if err := os.WriteFile(foo, []byte(`[{"foo":1}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, want string }{
		{filepath.Join("..", "..", "..", "docs", "lab", "lockbreak-rows.json"), "pvbench lockbreak -json"},
		{filepath.Join("..", "..", "..", "docs", "lab", "shootdown-rows.json"), "pvbench shootdown -json"},
		{foo, "lacks workload, lock, overcommit, unit, ops_per_sec"},
	} {
		var out bytes.Buffer
		err := run([]string{"-from", c.path, "-out", ""}, &out, &out)
		if err == nil || !strings.Contains(err.Error(), "want rows written by pvbench -json (the main job") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("-from %s = %v, want an error naming %q", c.path, err, c.want)
		}
		if strings.Contains(out.String(), "throughput") {
			t.Errorf("-from %s printed a table:\n%s", c.path, out.String())
		}
	}
	// The saved rows of the lab's docs are still accepted.
	if err := run([]string{"-from", filepath.Join("..", "..", "..", "docs", "lab", "lockloop-rows.json"), "-out", ""}, io.Discard, io.Discard); err != nil {
		t.Errorf("-from docs/lab/lockloop-rows.json: %v", err)
	}
}

// SIGINT during the main job reports and saves the cells that finished,
// names the cell it stopped in, and is an error.
func TestMainJobSIGINTReportsFinishedCells(t *testing.T) {
	js := filepath.Join(t.TempDir(), "rows.json")
	var out, errOut testkit.Buffer
	err := interrupt(t, []string{"-oc", "1,2", "-locks", "pv-ticket,sync.Mutex", "-runs", "1", "-duration", "1s",
		"-warmup", "10ms", "-json", js, "-out", ""}, &out, &errOut, func() {
		// The second cell runs for a second: the signal lands in it.
		errOut.WaitFor(t, "[1/4] pv-ticket 1x: ")
	})
	var intr *interruptedError
	if !errors.As(err, &intr) || !strings.Contains(err.Error(), "interrupted during sync.Mutex 1x (cell 2 of 4)") {
		t.Fatalf("run = %v, want the interrupt of sync.Mutex 1x, cell 2 of 4", err)
	}
	s := out.String()
	if !strings.Contains(s, "INTERRUPTED during sync.Mutex 1x: the tables below hold the 1 of 4 cells that finished") ||
		!strings.Contains(s, "pv-ticket") || strings.Contains(s[strings.Index(s, "all rows"):], "sync.Mutex") {
		t.Errorf("report after SIGINT:\n%s", s)
	}
	b, rerr := os.ReadFile(js)
	if rerr != nil {
		t.Fatal(rerr)
	}
	var rows []bench.Row
	if err := json.Unmarshal(b, &rows); err != nil || len(rows) != 1 || rows[0].Lock != "pv-ticket" || rows[0].Overcommit != 1 {
		t.Errorf("-json after SIGINT: %v %+v", err, rows)
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
		{"-json", "/proc/x"},
		{"-csv", "/proc/x", "-out", ""},
		{"-json", dir, "-out", ""}, // a directory given as a file
		{"-out", "/proc/x"},
		{"lockbreak", "-json", "/proc/x"},
		{"lockbreak", "-json", dir},
		{"shootdown", "-json", "/proc/x"},
		{"shootdown", "-json", filepath.Join(file, "rows.json")},
	} {
		var out bytes.Buffer
		start := time.Now()
		// Measuring with these flags takes minutes; failing first, moments.
		err := run(append(args, "-duration", "10s"), &out, &out)
		if err == nil || !strings.Contains(err.Error(), "-json") && !strings.Contains(err.Error(), "-csv") && !strings.Contains(err.Error(), "-out") {
			t.Errorf("run(%q) = %v, want an error naming the output", args, err)
		}
		// No header line: nothing was measured (30s leaves room for an
		// overloaded machine; here it takes milliseconds).
		if time.Since(start) > 30*time.Second || strings.Contains(out.String(), "pvbench") || strings.Contains(out.String(), "throughput") {
			t.Errorf("run(%q) measured before failing:\n%s", args, out.String())
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 { // f and plots
		t.Errorf("the output checks left files behind: %v", entries)
	}
	// An existing file is kept as it is until the rows are written.
	if err := os.WriteFile(file, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := checkOutputFile("json", file); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(file); string(b) != "keep" {
		t.Errorf("checking %s changed it to %q", file, b)
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

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" { // the test binary as pvbench (usage_test.go)
		main()
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

func TestLabFlagsRejected(t *testing.T) {
	for _, args := range [][]string{
		{"lockbreak", "-oc", "0"}, {"lockbreak", "-lock", "nope"}, {"lockbreak", "-runs", "0"},
		{"lockbreak", "-step", "3ms", "-batch", "1ms"}, {"lockbreak", "extra"},
		{"shootdown", "-chunk", "0"}, {"shootdown", "-pin", "up"}, {"shootdown", "-cpus", "x"},
		{"shootdown", "-duration", "0s"}, {"rwroles", "-write-every", "0"},
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
		rows  int // at -oc 1: one per variant
	}{
		{"lockbreak", []string{"lock-break", "p99 µs", "batches/s", " off", " on"}, 2},
		{"shootdown", []string{"%improvement", "native", "pv", "deferred"}, 2},
		{"rwroles", []string{"vs RWMutex", "write max", "sync.RWMutex", "pv-rwlock", "native-rwlock", "sync.Mutex", "pv-qspin"}, 5},
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
		var rows []map[string]any
		if readJSON(t, js, &rows); len(rows) != c.rows {
			t.Fatalf("%s JSON: %d rows, want %d", c.cmd, len(rows), c.rows)
		}
	}
}

// TestRunRounds measures two locks in two rounds: the progress shows each
// cell once per round, the locks taking turns, and each reported row pools
// its cell's runs of both rounds.
func TestRunRounds(t *testing.T) {
	js := filepath.Join(t.TempDir(), "rows.json")
	var out, errOut bytes.Buffer
	err := run([]string{"-oc", "1", "-runs", "1", "-rounds", "2", "-duration", "40ms", "-warmup", "10ms",
		"-locks", "pv-ticket,sync.Mutex", "-json", js, "-out", ""}, &out, &errOut)
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	progress := errOut.String()
	order := []string{"[1/4] pv-ticket 1x (round 1 of 2)", "[2/4] sync.Mutex 1x (round 1 of 2)",
		"[3/4] pv-ticket 1x (round 2 of 2)", "[4/4] sync.Mutex 1x (round 2 of 2)"}
	at := -1
	for _, want := range order {
		i := strings.Index(progress, want)
		if i <= at {
			t.Fatalf("progress lacks %q after the cells before it:\n%s", want, progress)
		}
		at = i
	}
	if !strings.Contains(out.String(), "2 rounds of 1 run(s) per cell") {
		t.Errorf("output does not say the rounds:\n%s", out.String())
	}
	var rows []struct {
		Lock string `json:"lock"`
		Runs int    `json:"runs"`
	}
	readJSON(t, js, &rows)
	if len(rows) != 2 || rows[0].Lock != "pv-ticket" || rows[1].Lock != "sync.Mutex" || rows[0].Runs != 2 || rows[1].Runs != 2 {
		t.Errorf("rows %+v, want pv-ticket and sync.Mutex with 2 runs each", rows)
	}
}

// readJSON decodes the JSON file at path into v, failing the test if it
// cannot.
func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
