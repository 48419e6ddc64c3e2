package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/pvlock/pvlock/internal/promtest"
	"github.com/pvlock/pvlock/pvlock"
	"github.com/pvlock/pvlock/pvlock/metrics"
	"github.com/pvlock/pvlock/qspin"
	"github.com/pvlock/pvlock/ticket"
)

// exportedNames returns the series names the collector exports, taken
// from the collector itself: a VM whose vCPUs used a PV ticket and a PV
// qspin lock, gathered through a registry (a histogram exports its
// _bucket, _sum and _count series).
func exportedNames(t *testing.T) map[string]bool {
	t.Helper()
	vm, err := pvlock.NewVM(pvlock.Config{VCPUs: 2, Name: "files-test"})
	if err != nil {
		t.Fatal(err)
	}
	locks := []sync.Locker{ticket.New(), qspin.New()}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := vm.Run(ctx, func(ctx context.Context, v *pvlock.VCPU) error {
		for ctx.Err() == nil {
			for _, l := range locks {
				l.Lock()
				l.Unlock()
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	c := metrics.NewCollector(metrics.Options{})
	if err := c.AddVM(vm); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range families {
		names[f.GetName()] = true
		if f.GetType() == dto.MetricType_HISTOGRAM {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				names[f.GetName()+suffix] = true
			}
		}
	}
	for _, must := range []string{"pvlock_halts_total", "pvlock_vcpu_steal_seconds_total", "pvlock_build_info"} {
		if !names[must] {
			t.Fatalf("the collector did not export %s: %v", must, names)
		}
	}
	return names
}

// metricRef finds the pvlock metric names in a PromQL expression; names
// of recorded series (level:metric:operations) hold colons and are left
// out.
var metricRef = regexp.MustCompile(`(?:^|[^:a-zA-Z0-9_])(pvlock_[a-zA-Z0-9_]+)\b(?:[^:]|$)`)

func metricRefs(expr string) []string {
	var out []string
	for _, m := range metricRef.FindAllStringSubmatch(expr, -1) {
		out = append(out, m[1])
	}
	return out
}

// recordedRef finds the names of recorded series in an expression.
var recordedRef = regexp.MustCompile(`[a-zA-Z_]+:[a-zA-Z0-9_]+:[a-zA-Z0-9_]+`)

// dashboardQueries returns every expr and templating query of a Grafana
// dashboard but the data source picker's.
func dashboardQueries(t *testing.T, v any) []string {
	var out []string
	switch v := v.(type) {
	case map[string]any:
		if v["type"] == "datasource" {
			return nil // the data source picker: its query is a plugin type
		}
		for k, x := range v {
			if s, ok := x.(string); ok && (k == "expr" || k == "query" || k == "definition") {
				out = append(out, s)
				continue
			}
			out = append(out, dashboardQueries(t, x)...)
		}
	case []any:
		for _, x := range v {
			out = append(out, dashboardQueries(t, x)...)
		}
	}
	return out
}

// TestDashboard: the Grafana dashboard is valid JSON, has the panels a
// pvlock operator needs, and queries only metrics the collector exports;
// its PromQL is checked by promtool (as recording rules).
func TestDashboard(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("dashboards", "pvlock.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title  string           `json:"title"`
		Panels []map[string]any `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("dashboards/pvlock.json is not valid JSON: %v", err)
	}
	var all any
	if err := json.Unmarshal(b, &all); err != nil {
		t.Fatal(err)
	}
	var titles []string
	for _, p := range dash.Panels {
		titles = append(titles, p["title"].(string))
	}
	for _, want := range []string{"Halts per second", "Kicks per halt", "p99 halt duration", "Steal per vCPU", "Slow-path share of acquisitions",
		"Concurrency restriction: passive waiters and admissions"} {
		if !slices.Contains(titles, want) {
			t.Errorf("no panel %q among %q", want, titles)
		}
	}
	exported := exportedNames(t)
	queries := dashboardQueries(t, all)
	var rules strings.Builder
	rules.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	for i, q := range queries {
		refs := metricRefs(q)
		if len(refs) == 0 {
			t.Errorf("dashboard query %q names no pvlock metric", q)
		}
		for _, name := range refs {
			if !exported[name] {
				t.Errorf("dashboard query %q uses %s, which the collector does not export", q, name)
			}
		}
		if strings.HasPrefix(q, "label_values(") {
			continue // Grafana's templating, not PromQL
		}
		expr := strings.NewReplacer("$__rate_interval", "1m", "$job", ".*").Replace(q)
		rules.WriteString("      - record: dashboard:query:" + string(rune('a'+i)) + "\n        expr: '" + strings.ReplaceAll(expr, "'", "''") + "'\n")
	}
	if len(queries) < 6 {
		t.Fatalf("found %d queries in the dashboard", len(queries))
	}
	promtool := promtest.Tool(t, "promtool")
	file := filepath.Join(t.TempDir(), "dashboard-queries.yml")
	if err := os.WriteFile(file, []byte(rules.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "check", "rules", file).CombinedOutput(); err != nil {
		t.Errorf("promtool check rules of the dashboard's queries: %v\n%s\n%s", err, out, rules.String())
	}
}

// TestRuleFiles: promtool accepts both rule files, every alert has a for
// clause and a severity, and every metric they use is one the collector
// exports or one the recording rules record.
func TestRuleFiles(t *testing.T) {
	promtool := promtest.Tool(t, "promtool")
	recording, alerts := filepath.Join("rules", "recording.yml"), filepath.Join("rules", "alerts.yml")
	if out, err := exec.Command(promtool, "check", "rules", recording, alerts).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
	exported := exportedNames(t)
	recorded := map[string]bool{}
	rec, err := os.ReadFile(recording)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`(?m)^\s*- record: (\S+)$`).FindAllStringSubmatch(string(rec), -1) {
		recorded[m[1]] = true
	}
	if len(recorded) < 6 {
		t.Fatalf("recording.yml records %d series", len(recorded))
	}
	al, err := os.ReadFile(alerts)
	if err != nil {
		t.Fatal(err)
	}
	exprs := regexp.MustCompile(`(?m)^\s*expr: (.+)$`)
	for file, text := range map[string]string{recording: string(rec), alerts: string(al)} {
		for _, m := range exprs.FindAllStringSubmatch(text, -1) {
			for _, name := range metricRefs(m[1]) {
				if !exported[name] {
					t.Errorf("%s: %q uses %s, which the collector does not export", file, m[1], name)
				}
			}
			for _, name := range recordedRef.FindAllString(m[1], -1) {
				if !recorded[name] {
					t.Errorf("%s: %q uses %s, which recording.yml does not record", file, m[1], name)
				}
			}
		}
	}
	// Each alert: a for clause and a severity label.
	blocks := strings.Split(string(al), "- alert: ")[1:]
	if len(blocks) < 4 {
		t.Fatalf("alerts.yml has %d alerts", len(blocks))
	}
	for _, blk := range blocks {
		name, _, _ := strings.Cut(blk, "\n")
		if !regexp.MustCompile(`(?m)^\s+for: \d+[smh]$`).MatchString(blk) {
			t.Errorf("alert %s has no for clause", name)
		}
		if !regexp.MustCompile(`(?m)^\s+severity: (critical|warning|info)$`).MatchString(blk) {
			t.Errorf("alert %s has no severity label", name)
		}
	}
}

func TestMetricRefs(t *testing.T) {
	got := metricRefs(`sum(rate(pvlock_halts_total{job="x"}[1m])) / lock_mode:pvlock_halts:rate1m + pvlock_halt_duration_seconds_bucket`)
	if !slices.Equal(got, []string{"pvlock_halts_total", "pvlock_halt_duration_seconds_bucket"}) {
		t.Fatalf("metricRefs = %q", got)
	}
}
