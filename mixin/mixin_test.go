package mixin

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
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The mixin's files.
var (
	recordingFile = filepath.Join("rules", "rules.yml")
	alertsFile    = filepath.Join("alerts", "alerts.yml")
	dashboardFile = filepath.Join("dashboards", "pvlock.json")
	testFiles     = []string{filepath.Join("tests", "rules_test.yml"), filepath.Join("tests", "alerts_test.yml")}
)

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestPromtool runs what CI runs on the mixin: promtool check rules on
// both rule files and promtool test rules on their unit tests.
func TestPromtool(t *testing.T) {
	promtool := promtest.Tool(t, "promtool")
	if out, err := exec.Command(promtool, "check", "rules", recordingFile, alertsFile).CombinedOutput(); err != nil {
		t.Errorf("promtool check rules: %v\n%s", err, out)
	}
	if out, err := exec.Command(promtool, append([]string{"test", "rules"}, testFiles...)...).CombinedOutput(); err != nil {
		t.Errorf("promtool test rules: %v\n%s", err, out)
	}
}

var (
	recordRE = regexp.MustCompile(`(?m)^\s*- record: (\S+)$`)
	alertRE  = regexp.MustCompile(`(?m)^\s*- alert: (\S+)$`)
	exprRE   = regexp.MustCompile(`(?m)^\s*(?:- )?expr: (.+)$`)
)

// TestUnitTestsCoverEveryRule: every recording rule is the expr of a
// promql_expr_test, and every alert has a test in which it fires and one
// in which it does not.
func TestUnitTestsCoverEveryRule(t *testing.T) {
	records := recordRE.FindAllStringSubmatch(read(t, recordingFile), -1)
	alerts := alertRE.FindAllStringSubmatch(read(t, alertsFile), -1)
	if len(records) < 8 || len(alerts) < 6 {
		t.Fatalf("%d recording rules and %d alerts", len(records), len(alerts))
	}
	var tests strings.Builder
	for _, f := range testFiles {
		tests.WriteString(read(t, f))
	}
	text := tests.String()
	tested := map[string]bool{}
	for _, m := range exprRE.FindAllStringSubmatch(text, -1) {
		tested[strings.TrimSpace(m[1])] = true
	}
	for _, r := range records {
		if !tested[r[1]] {
			t.Errorf("recording rule %s has no promql_expr_test", r[1])
		}
	}
	// An alert_rule_test entry: alertname, eval_time, then exp_alerts,
	// empty ([]) or not.
	entry := regexp.MustCompile(`(?m)^\s*- alertname: (\S+)\n\s*eval_time: \S+\n\s*exp_alerts:( \[\])?$`)
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, m := range entry.FindAllStringSubmatch(text, -1) {
		if m[2] == "" {
			fires[m[1]] = true
		} else {
			quiet[m[1]] = true
		}
	}
	for _, a := range alerts {
		if !fires[a[1]] {
			t.Errorf("alert %s has no test in which it fires", a[1])
		}
		if !quiet[a[1]] {
			t.Errorf("alert %s has no test in which it stays quiet", a[1])
		}
	}
}

// TestRulesKeepJobAndInstance: every aggregation in the rules and alerts
// keeps job and instance (by lists them; none drops them with without),
// so that an alert names the target that fired.
func TestRulesKeepJobAndInstance(t *testing.T) {
	by := regexp.MustCompile(`\b(by|without)\s*\(([^)]*)\)`)
	aggs := regexp.MustCompile(`\b(sum|avg|min|max|count|topk|bottomk|quantile|stddev|stdvar|group)\s*\(`)
	n := 0
	for _, file := range []string{recordingFile, alertsFile} {
		for _, m := range exprRE.FindAllStringSubmatch(read(t, file), -1) {
			expr := m[1]
			clauses := by.FindAllStringSubmatch(expr, -1)
			if len(aggs.FindAllString(expr, -1)) > len(clauses) {
				t.Errorf("%s: %q aggregates without a by clause, dropping job and instance", file, expr)
			}
			for _, c := range clauses {
				n++
				labels := strings.Split(strings.ReplaceAll(c[2], " ", ""), ",")
				keeps := slices.Contains(labels, "job") && slices.Contains(labels, "instance")
				if c[1] == "without" {
					keeps = !slices.Contains(labels, "job") && !slices.Contains(labels, "instance")
				}
				if !keeps {
					t.Errorf("%s: %q: %s (%s) drops job or instance", file, expr, c[1], c[2])
				}
			}
		}
	}
	if n < 10 {
		t.Fatalf("found %d by clauses", n)
	}
}

// exportedNames returns the series names the collector exports, taken
// from the collector itself: a VM whose vCPUs used a PV ticket and a PV
// qspin lock, gathered through a registry (a histogram exports its
// _bucket, _sum and _count series).
func exportedNames(t *testing.T) map[string]bool {
	t.Helper()
	vm, err := pvlock.NewVM(pvlock.Config{VCPUs: 2, Name: "mixin-test"})
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
	for _, must := range []string{"pvlock_halts_total", "pvlock_vcpu_steal_seconds_total", "pvlock_build_info", "pvlock_wake_latency_seconds_total"} {
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
func dashboardQueries(v any) []string {
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
			out = append(out, dashboardQueries(x)...)
		}
	case []any:
		for _, x := range v {
			out = append(out, dashboardQueries(x)...)
		}
	}
	return out
}

// TestDashboard: the Grafana dashboard is valid JSON, has the panels a
// pvlock operator needs, selects by job and instance, and queries only
// metrics the collector exports; its PromQL is checked by promtool (as
// recording rules).
func TestDashboard(t *testing.T) {
	b := []byte(read(t, dashboardFile))
	var dash struct {
		Title      string           `json:"title"`
		Panels     []map[string]any `json:"panels"`
		Templating struct {
			List []struct {
				Name string `json:"name"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("%s is not valid JSON: %v", dashboardFile, err)
	}
	var all any
	if err := json.Unmarshal(b, &all); err != nil {
		t.Fatal(err)
	}
	var titles, vars []string
	for _, p := range dash.Panels {
		titles = append(titles, p["title"].(string))
	}
	for _, v := range dash.Templating.List {
		vars = append(vars, v.Name)
	}
	for _, want := range []string{"Halts per second", "Kicks per halt", "p99 halt duration", "Steal per vCPU", "Slow-path share of acquisitions",
		"Concurrency restriction: passive waiters and admissions", "qspin kick cost and wake-up latency"} {
		if !slices.Contains(titles, want) {
			t.Errorf("no panel %q among %q", want, titles)
		}
	}
	for _, want := range []string{"datasource", "job", "instance"} {
		if !slices.Contains(vars, want) {
			t.Errorf("no template variable %q among %q", want, vars)
		}
	}
	exported := exportedNames(t)
	queries := dashboardQueries(all)
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
		if !strings.Contains(q, `job=~"$job"`) || !strings.Contains(q, `instance=~"$instance"`) {
			t.Errorf("dashboard query %q does not select by $job and $instance", q)
		}
		expr := strings.NewReplacer("$__rate_interval", "1m", "$job", ".*", "$instance", ".*").Replace(q)
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

// TestRuleFiles: every alert has a for clause and a severity, and every
// metric the rules use is one the collector exports or one the recording
// rules record.
func TestRuleFiles(t *testing.T) {
	exported := exportedNames(t)
	rec, al := read(t, recordingFile), read(t, alertsFile)
	recorded := map[string]bool{}
	for _, m := range recordRE.FindAllStringSubmatch(rec, -1) {
		recorded[m[1]] = true
	}
	for file, text := range map[string]string{recordingFile: rec, alertsFile: al} {
		for _, m := range exprRE.FindAllStringSubmatch(text, -1) {
			for _, name := range metricRefs(m[1]) {
				if !exported[name] {
					t.Errorf("%s: %q uses %s, which the collector does not export", file, m[1], name)
				}
			}
			for _, name := range recordedRef.FindAllString(m[1], -1) {
				if !recorded[name] {
					t.Errorf("%s: %q uses %s, which %s does not record", file, m[1], name, recordingFile)
				}
			}
		}
	}
	blocks := strings.Split(al, "- alert: ")[1:]
	if len(blocks) < 6 {
		t.Fatalf("%s has %d alerts", alertsFile, len(blocks))
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
	got := metricRefs(`sum(rate(pvlock_halts_total{job="x"}[1m])) / instance_lock_mode:pvlock_halts:rate1m + pvlock_halt_duration_seconds_bucket`)
	if !slices.Equal(got, []string{"pvlock_halts_total", "pvlock_halt_duration_seconds_bucket"}) {
		t.Fatalf("metricRefs = %q", got)
	}
}
