package report

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pvlock/pvlock/bench"
)

// render writes rows with write and returns the text.
func render[R any](t *testing.T, rows []R, write func(io.Writer, []R) error) string {
	t.Helper()
	var b bytes.Buffer
	if err := write(&b, rows); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// hasAll fails the test for every want that text lacks.
func hasAll(t *testing.T, what, text string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(text, want) {
			t.Errorf("%s lacks %q:\n%s", what, want, text)
		}
	}
}

// jsonRows writes rows with WriteJSON and reads them back as objects.
func jsonRows[R any](t *testing.T, rows []R) []map[string]any {
	t.Helper()
	var back []map[string]any
	if err := json.Unmarshal([]byte(render(t, rows, WriteJSON)), &back); err != nil {
		t.Fatal(err)
	}
	if len(back) != len(rows) {
		t.Fatalf("JSON has %d rows, want %d", len(back), len(rows))
	}
	return back
}

// hasFields fails the test for every field the JSON object lacks.
func hasFields(t *testing.T, obj map[string]any, fields ...string) {
	t.Helper()
	for _, f := range fields {
		if _, ok := obj[f]; !ok {
			t.Errorf("JSON row lacks field %q: %v", f, obj)
		}
	}
}

func TestReports(t *testing.T) {
	rows := []bench.Row{
		{Workload: "lockloop", Lock: "native-ticket", Overcommit: 1, OpsPerSec: 1000, Stdev: 10, VCPUs: 2},
		{Workload: "lockloop", Lock: "pv-ticket", Overcommit: 1, OpsPerSec: 990, Stdev: 5, VCPUs: 2},
		{Workload: "lockloop", Lock: "native-ticket", Overcommit: 2, OpsPerSec: 10, Stdev: 1, VCPUs: 4},
		{Workload: "lockloop", Lock: "pv-ticket", Overcommit: 2, OpsPerSec: 500, Stdev: 20, VCPUs: 4, Halts: 12.5},
	}
	seed := func(w io.Writer, rows []bench.Row) error {
		return WriteSeedTable(w, rows, "native-ticket", "pv-ticket")
	}
	hasAll(t, "seed table", render(t, rows, seed), "%improvement", "-1.0", "+4900.0", "2x")
	hasAll(t, "matrix", render(t, rows, WriteMatrix), "51%", "12.50")
	back := jsonRows(t, rows)
	hasFields(t, back[3], "workload", "lock", "overcommit", "ops_per_sec", "stdev", "halts", "kicks")
	if back[3]["overcommit"] != 2.0 {
		t.Errorf("overcommit is %v, want the number 2", back[3]["overcommit"])
	}
	if lines := strings.Count(render(t, rows, WriteCSV), "\n"); lines != 5 {
		t.Errorf("CSV has %d lines, want header + 4", lines)
	}
	if Improvement(100, 150) != 50 || !math.IsInf(Improvement(0, 1), 1) {
		t.Error("Improvement arithmetic")
	}
}

func TestReportsNewColumns(t *testing.T) {
	rows := []bench.Row{
		{Workload: "ebizzy", Lock: "pv-ticket", Overcommit: 1, OpsPerSec: 1000, VCPUs: 2, VMs: 1, Unit: "records",
			Jain: 0.987, LatP50: 120, LatP99: 45000, LatMax: 3500000},
	}
	hasAll(t, "matrix", render(t, rows, WriteMatrix), "records/s", "jain", "0.987", "120ns", "45.0µs", "3.50ms")
	back := jsonRows(t, rows)
	for f, want := range map[string]any{"jain": 0.987, "lat_p50_ns": 120.0, "lat_p99_ns": 45000.0,
		"lat_max_ns": 3500000.0, "vms": 1.0, "unit": "records", "fairness_max_min": 0.0, "ops_per_sec": 1000.0} {
		if back[0][f] != want {
			t.Errorf("JSON %s = %v, want %v", f, back[0][f], want)
		}
	}
	csv := render(t, rows, WriteCSV)
	lines := strings.Split(strings.TrimSpace(csv), "\n")
	if len(lines) != 2 || !strings.HasSuffix(lines[0], ",vms,unit,jain,lat_p50_ns,lat_p99_ns,lat_max_ns") ||
		!strings.HasSuffix(lines[1], ",1,records,0.9870,120,45000,3500000") {
		t.Errorf("CSV:\n%s", csv)
	}
}

// TestCSVQuoting: the CSV is what encoding/csv writes, and reads back.
func TestCSVQuoting(t *testing.T) {
	rows := []bench.Row{{Workload: "lockloop", Lock: "a,b", Unit: `say "ops"`, Overcommit: 1}}
	want := "workload,lock,overcommit,vcpus,pcpus,runs,ops_per_sec,stdev,halts,kicks,passive,steal_pct,idle_pct,fairness_max_min," +
		"vms,unit,jain,lat_p50_ns,lat_p99_ns,lat_max_ns\n" +
		`lockloop,"a,b",1,0,0,0,0.0,0.0,0.0000,0.0000,0.0000,0.00,0.00,0.000,0,"say ""ops""",0.0000,0,0,0` + "\n"
	if got := render(t, rows, WriteCSV); got != want {
		t.Errorf("CSV:\n%s\nwant:\n%s", got, want)
	}
}

func TestLockBreakTable(t *testing.T) {
	rows := []bench.LockBreakRow{
		{Lock: "pv-ticket", Overcommit: 2, VCPUs: 4, Break: false, P50: 1500, P99: 2100.5, Max: 3000, BatchesPerSec: 400},
		{Lock: "pv-ticket", Overcommit: 2, VCPUs: 4, Break: true, P50: 20, P99: 80.25, Max: 900, BatchesPerSec: 380, Breaks: 12.5},
	}
	hasAll(t, "table", render(t, rows, WriteLockBreakTable), "p99 µs", "2x", " off", " on", "2100.5", "80.2", "12.5")
	hasFields(t, jsonRows(t, rows)[1], "lock_break", "p50_us", "p99_us", "max_us", "batches_per_sec", "breaks_per_batch")
}

func TestShootdownTables(t *testing.T) {
	rows := []bench.ShootdownRow{
		{Mode: "native", Overcommit: 1, VCPUs: 2, RecordsPerSec: 10000, Stdev: 100},
		{Mode: "pv", Overcommit: 1, VCPUs: 2, RecordsPerSec: 9900, Stdev: 50},
		{Mode: "native", Overcommit: 2, VCPUs: 4, RecordsPerSec: 1000, Stdev: 10, Acked: 4, Kicked: 1.5},
		{Mode: "pv", Overcommit: 2, VCPUs: 4, RecordsPerSec: 3000, Stdev: 20, Acked: 2.5, Deferred: 1.5},
	}
	out := render(t, rows, WriteShootdownTable)
	hasAll(t, "seed table", out, "%improvement", "native", "pv", "-1.0", "+200.0", "2x")
	if strings.Count(out, "\n") != 3 {
		t.Errorf("seed table has %d lines, want header + 2:\n%s", strings.Count(out, "\n"), out)
	}
	detail := render(t, rows, WriteShootdownDetail)
	if !strings.Contains(detail, "1.50") || strings.Count(detail, "\n") != 5 {
		t.Errorf("detail table:\n%s", detail)
	}
	if back := jsonRows(t, rows); back[3]["records_per_sec"] != 3000.0 {
		t.Errorf("JSON: %v", back[3])
	}
}

func TestSweepTable(t *testing.T) {
	var rows []bench.SweepRow
	for _, oc := range []float64{1, 2} {
		for i, set := range []bench.SweepRow{{Threshold: bench.Adaptive, HaltPoll: bench.Adaptive},
			{Threshold: 64, HaltPoll: bench.Adaptive}, {Threshold: bench.Adaptive, HaltPoll: 0}} {
			set.Row = bench.Row{Workload: "lockloop", Lock: "pv-ticket", Overcommit: oc, OpsPerSec: float64(1000 * (i + 1))}
			rows = append(rows, set)
		}
	}
	plain := render(t, rows, WriteSweepTable)
	hasAll(t, "sweep table", plain, "lockloop, pv-ticket (ops/s):", "best fixed",
		"spin=64", "haltpoll=0s", "0.33")
	if strings.Contains(plain, "confirmed") {
		t.Errorf("a sweep without confirmation rows has a confirmed column:\n%s", plain)
	}
	if back := jsonRows(t, rows); back[0]["threshold"] != "adaptive" || back[1]["threshold"] != 64.0 || back[2]["halt_poll"] != 0.0 {
		t.Errorf("JSON: %v", back[:3])
	}

	// Confirmation at 2x: adaptive 2900, 3100 and 9000 against the best
	// fixed setting (haltpoll=0s) at 3000, 1000 and 3300: medians 3100 and
	// 3000. The confirmation rows stay out of the sweep's own columns.
	for i, ops := range [][2]float64{{2900, 3000}, {3100, 1000}, {9000, 3300}} {
		for j, set := range []bench.SweepRow{{Threshold: bench.Adaptive, HaltPoll: bench.Adaptive},
			{Threshold: bench.Adaptive, HaltPoll: 0}} {
			set.Row = bench.Row{Workload: "lockloop", Lock: "pv-ticket", Overcommit: 2, OpsPerSec: ops[j]}
			set.Confirm = i + 1
			rows = append(rows, set)
		}
	}
	out := render(t, rows, WriteSweepTable)
	hasAll(t, "confirmed sweep table", out, "adaptive/best  confirmed", "0.33", "1.03")
	if strings.Contains(out, "9000") || strings.Contains(out, "3300") {
		t.Errorf("confirmation rows in the sweep's columns:\n%s", out)
	}
	if back := jsonRows(t, rows); back[6]["confirm"] != 1.0 || back[0]["confirm"] != 0.0 {
		t.Errorf("JSON confirm: %v, %v", back[6]["confirm"], back[0]["confirm"])
	}
	if n := len(SweepPlotRows(rows)); n != 6 {
		t.Errorf("SweepPlotRows kept %d rows, want the sweep's 6", n)
	}
}

func TestWritePlots(t *testing.T) {
	var rows []bench.Row
	for i, lock := range []string{"native-ticket", "pv-ticket", "sync.Mutex"} {
		for _, oc := range []float64{0.5, 1, 2, 4} {
			rows = append(rows, bench.Row{Workload: "lockloop", Lock: lock, Overcommit: oc, Unit: "ops", Runs: 3, PCPUs: 2, VMs: 1,
				OpsPerSec: 1000 / oc * float64(i+1), Stdev: 10, Jain: 1 / oc, LatP99: uint64(1000 * oc)})
		}
	}
	rows = append(rows, bench.Row{Workload: "ebizzy", Lock: "pv-ticket", Overcommit: 1, Unit: "records", OpsPerSec: 5, Jain: 1})
	dir := filepath.Join(t.TempDir(), "plots")
	files, err := WritePlots(dir, rows)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2*3*len(PlotFormats) {
		t.Fatalf("files %v", files)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		switch filepath.Ext(f) {
		case ".png":
			if !bytes.HasPrefix(b, []byte("\x89PNG")) {
				t.Errorf("%s is not a PNG", f)
			}
		case ".svg":
			if !bytes.Contains(b, []byte("<svg")) || !bytes.Contains(b, []byte("pv-ticket")) {
				t.Errorf("%s is not an SVG with the legend", f)
			}
		}
	}
	for v, want := range map[float64]string{0: "0", 500: "500", 80000: "80k", 2.5e6: "2.5M"} {
		if got := siLabel(v); got != want {
			t.Errorf("siLabel(%v) = %q, want %q", v, got, want)
		}
	}
	if _, err := WritePlots(dir, nil); err == nil {
		t.Error("plotting no rows succeeded")
	}
	if _, err := WritePlots(files[0], rows); err == nil {
		t.Error("plotting into a file succeeded")
	}
}
