package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pvlock/pvlock/internal/promtest"
	"github.com/pvlock/pvlock/internal/testkit"
)

// lineWriter passes each line written to it to a channel, so a test can
// wait for the address run prints.
type lineWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	lines chan string
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	for {
		line, err := w.buf.ReadString('\n')
		if err != nil {
			w.buf.WriteString(line) // incomplete line: keep it
			return len(p), nil
		}
		w.lines <- strings.TrimSpace(line)
	}
}

// metricsURL extracts the URL from the line run prints first.
func metricsURL(t *testing.T, line string) string {
	t.Helper()
	f := strings.Fields(line)
	if len(f) < 2 || f[0] != "serving" {
		t.Fatalf("unexpected first line %q", line)
	}
	return strings.TrimSuffix(f[1], ":")
}

func TestRunServesAndStops(t *testing.T) {
	out := &lineWriter{lines: make(chan string, 10)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		errc <- run(ctx, config{listen: "127.0.0.1:0", overcommit: 2, spin: 2 * time.Microsecond, cs: 200, local: 500}, out)
	}()
	var u string
	select {
	case line := <-out.lines:
		u = metricsURL(t, line)
	case err := <-errc:
		t.Fatalf("run returned before serving: %v", err)
	}
	// Scrape until the workload has halted and kicked.
	deadline := time.Now().Add(30 * time.Second)
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	for {
		body, err := get(client, u)
		if err != nil {
			t.Fatal(err)
		}
		halts, kicks := sample(body, `pvlock_halts_total{lock="ticket",mode="pv",name=""}`), sample(body, `pvlock_kicks_total{lock="ticket",mode="pv",name=""}`)
		qhalts, qkicks := sample(body, `pvlock_halts_total{lock="qspin",mode="pv",name=""}`), sample(body, `pvlock_kicks_total{lock="qspin",mode="pv",name=""}`)
		if halts > 0 && kicks > 0 && qhalts > 0 && qkicks > 0 && strings.Contains(body, `pvlock_vcpu_halts_total{vcpu="0",vm="demo"}`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no halts and kicks of both the ticket and the qspin lock after 30s:\n%s", body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	if err := testkit.Receive(t, errc, 30*time.Second, "run did not return within 30s of cancel"); err != nil {
		t.Fatalf("run after cancel: %v", err)
	}
	if line := <-out.lines; !strings.HasPrefix(line, "stopped after") {
		t.Fatalf("last line %q", line)
	}
	if _, err := get(client, u); err == nil {
		t.Fatal("server still answers after run returned")
	}
}

func TestRunRejectsBadConfig(t *testing.T) {
	good := config{listen: "127.0.0.1:0", overcommit: 2, spin: time.Microsecond, cs: 1, local: 1}
	for _, c := range []struct {
		mod  func(*config)
		want string
	}{
		{func(c *config) { c.cs = -1 }, "must not be negative"},
		{func(c *config) { c.spin = 0 }, "must be positive"},
		{func(c *config) { c.overcommit = 0 }, "overcommit factor"},
		{func(c *config) { c.listen = "127.0.0.1:99999" }, "listen on 127.0.0.1:99999"},
		{func(c *config) { c.listen = "0.0.0.0:0" }, "not a loopback address"},
		{func(c *config) { c.listen = ":0" }, "pass -allow-remote"},
		{func(c *config) { c.listen = "[::]:0" }, "pass -allow-remote"},
		{func(c *config) { c.listen = "nocolon" }, "-listen nocolon"},
		{func(c *config) { c.duration = -time.Second }, "must not be negative"},
	} {
		cfg := good
		c.mod(&cfg)
		err := run(context.Background(), cfg, io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("run(%+v) = %v, want an error containing %q", cfg, err, c.want)
		}
	}
}

func get(client *http.Client, u string) (string, error) {
	resp, err := client.Get(u)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	return string(b), err
}

// sample returns the value of the series (name and labels exactly as
// exposed) in a text exposition, or -1.
func sample(body, series string) float64 {
	for _, line := range strings.Split(body, "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err == nil {
				return v
			}
		}
	}
	return -1
}

// TestPrometheusScrapesExample builds this example, runs it on a loopback
// port, points a real Prometheus server at it with a 1 s scrape interval
// and queries the server's HTTP API until it has seen halts and kicks. It
// then runs every query of README.md's promql block against the server,
// and finally stops both processes with SIGTERM.
func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:9464": true, "127.0.0.2:1": true, "[::1]:0": true, "localhost:9464": true,
		"0.0.0.0:9464": false, ":9464": false, "[::]:0": false, "192.168.1.2:80": false, "example.com:80": false,
	} {
		if got, err := isLoopback(addr); err != nil || got != want {
			t.Errorf("isLoopback(%q) = %v, %v; want %v", addr, got, err, want)
		}
	}
}

// The command itself: a non-loopback -listen without -allow-remote and a
// negative -duration exit with status 1 or 2 and say why, before serving.
func TestCommandRefusesRemoteListenAndNegativeDuration(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "metrics-example")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-listen", "0.0.0.0:0"}, "pass -allow-remote"},
		{[]string{"-listen", ":0", "-duration", "1s"}, "not a loopback address"},
		{[]string{"-duration", "-1s"}, "-duration -1s must not be negative"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out, err := exec.CommandContext(ctx, bin, c.args...).CombinedOutput()
		cancel()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() == 0 || !strings.Contains(string(out), c.want) || strings.Contains(string(out), "serving") {
			t.Errorf("metrics %q: %v\n%s\nwant a non-zero exit saying %q", c.args, err, out, c.want)
		}
	}
	// With -allow-remote it serves, and says where.
	out, err := exec.Command(bin, "-listen", "0.0.0.0:0", "-allow-remote", "-duration", "300ms").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "reachable from the network (-allow-remote)") || !strings.Contains(string(out), "stopped after") {
		t.Errorf("metrics -listen 0.0.0.0:0 -allow-remote: %v\n%s", err, out)
	}
}

func TestPrometheusScrapesExample(t *testing.T) {
	prometheus := promtest.Tool(t, "prometheus")
	dir := t.TempDir()

	bin := filepath.Join(dir, "metrics-example")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	example := exec.Command(bin, "-listen", "127.0.0.1:0")
	stdout, err := example.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var exampleErr testkit.Buffer
	example.Stderr = &exampleErr
	ex := start(t, example)
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() {
		t.Fatalf("example printed nothing: %v\n%s", lines.Err(), exampleErr.String())
	}
	target, err := url.Parse(metricsURL(t, lines.Text()))
	if err != nil {
		t.Fatal(err)
	}
	var rest bytes.Buffer
	restDone := make(chan struct{})
	go func() { // the example's later output, read to its end
		defer close(restDone)
		for lines.Scan() {
			rest.WriteString(lines.Text() + "\n")
		}
	}()

	config := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(config, fmt.Appendf(nil, `global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: pvlock
    static_configs:
      - targets: [%q]
`, target.Host), 0o644); err != nil {
		t.Fatal(err)
	}
	promAddr := freeAddr(t)
	var promLog testkit.Buffer
	prom := exec.Command(prometheus,
		"--config.file="+config,
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+promAddr,
	)
	prom.Stdout, prom.Stderr = &promLog, &promLog
	pr := start(t, prom)
	t.Cleanup(func() {
		if t.Failed() {
			pr.stop(t) // before reading its log
			t.Logf("prometheus log:\n%s", promLog.String())
		}
	})

	api := "http://" + promAddr
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	deadline := time.Now().Add(60 * time.Second)
	var halts, kicks float64
	for {
		select {
		case <-pr.done:
			t.Fatalf("prometheus exited early: %v", pr.err)
		case <-ex.done:
			t.Fatalf("example exited early: %v\n%s", ex.err, exampleErr.String())
		default:
		}
		halts, _ = querySum(client, api, "sum(pvlock_halts_total)")
		kicks, _ = querySum(client, api, "sum(pvlock_kicks_total)")
		if halts > 0 && kicks > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 60s Prometheus reports %v halts and %v kicks", halts, kicks)
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("Prometheus sees %v halts and %v kicks", halts, kicks)

	// The README's queries need two samples in their rate window.
	queries := readmeQueries(t)
	for _, q := range queries {
		for {
			n, err := queryCount(client, api, q)
			if err != nil {
				t.Fatalf("README query %q: %v", q, err)
			}
			if n > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("README query %q returns no series", q)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}

	// SIGTERM must stop the example cleanly.
	if err := example.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	testkit.Receive(t, ex.done, 30*time.Second, "example still running 30s after SIGTERM")
	if ex.err != nil {
		t.Fatalf("example after SIGTERM: %v\n%s", ex.err, exampleErr.String())
	}
	<-restDone
	if !strings.HasPrefix(rest.String(), "stopped after") {
		t.Fatalf("example's last output %q", rest.String())
	}
}

// readmeQueries returns the queries of README.md's promql block.
func readmeQueries(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(b), "```promql\n")
	block, _, ok2 := strings.Cut(block, "```")
	if !ok || !ok2 {
		t.Fatal("README.md has no promql block")
	}
	var qs []string
	for _, line := range strings.Split(block, "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			qs = append(qs, line)
		}
	}
	if len(qs) < 3 {
		t.Fatalf("README.md promql block has %d queries, want the halts, kicks-per-halt and p99 ones at least", len(qs))
	}
	return qs
}

// process is a started command waited for in the background.
type process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	err  error         // its exit status, once done is closed
}

// start starts cmd and makes sure it is stopped when the test ends.
func start(t *testing.T, cmd *exec.Cmd) *process {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", cmd.Path, err)
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() { p.stop(t) })
	return p
}

// stop ends the process with SIGTERM, then SIGKILL after 10 s, and waits
// for it to exit.
func (p *process) stop(t *testing.T) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		t.Errorf("%s ignored SIGTERM for 10s; killing it", p.cmd.Path)
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// freeAddr returns a loopback address with a port that was free a moment
// ago.
func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// queryResult is the part of a /api/v1/query answer the test reads.
type queryResult struct {
	Status string `json:"status"`
	Error  string `json:"error"`
	Data   struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Value [2]any `json:"value"`
		} `json:"result"`
	} `json:"data"`
}

func query(client *http.Client, api, q string) (queryResult, error) {
	var r queryResult
	resp, err := client.Get(api + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return r, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return r, fmt.Errorf("query %q: %s: %w", q, body, err)
	}
	if r.Status != "success" {
		return r, fmt.Errorf("query %q: %s: %s", q, r.Status, r.Error)
	}
	return r, nil
}

// queryCount returns the number of series a query yields.
func queryCount(client *http.Client, api, q string) (int, error) {
	r, err := query(client, api, q)
	return len(r.Data.Result), err
}

// querySum returns the value of a query yielding one sample (0 if none).
func querySum(client *http.Client, api, q string) (float64, error) {
	r, err := query(client, api, q)
	if err != nil || len(r.Data.Result) == 0 {
		return 0, err
	}
	s, ok := r.Data.Result[0].Value[1].(string)
	if !ok {
		return 0, errors.New("query " + q + ": value is not a string")
	}
	return strconv.ParseFloat(s, 64)
}

// TestReadmeYAML checks the scrape configuration, the alerting rule and
// the rule_files of the mixin in README.md with promtool; /path/to/pvlock
// stands for the root of the module, whose mixin promtool then loads.
func TestReadmeYAML(t *testing.T) {
	promtool := promtest.Tool(t, "promtool")
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	blocks := 0
	for rest := string(b); ; {
		var block string
		var ok bool
		if _, rest, ok = strings.Cut(rest, "```yaml\n"); !ok {
			break
		}
		block, rest, _ = strings.Cut(rest, "```")
		kind := "config"
		if strings.Contains(block, "groups:") {
			kind = "rules"
		}
		file := filepath.Join(t.TempDir(), kind+".yml")
		if err := os.WriteFile(file, []byte(strings.ReplaceAll(block, "/path/to/pvlock", root)), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(promtool, "check", kind, file).CombinedOutput(); err != nil {
			t.Errorf("promtool check %s of README.md's block:\n%s\n%v\n%s", kind, block, err, out)
		}
		blocks++
	}
	if blocks != 3 {
		t.Fatalf("README.md has %d yaml blocks, want the scrape configuration, the rule and the mixin's rule files", blocks)
	}
}

// TestReadmeLinksExist: every relative link of README.md, such as those
// to the mixin's dashboard and rules, names a file or directory that
// exists.
func TestReadmeLinksExist(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	links := regexp.MustCompile(`\]\(([^)#:]+)\)`).FindAllStringSubmatch(string(b), -1)
	mixin := 0
	for _, l := range links {
		if _, err := os.Stat(l[1]); err != nil {
			t.Errorf("README.md links to %s: %v", l[1], err)
		}
		if strings.Contains(l[1], "mixin/") {
			mixin++
		}
	}
	if mixin < 3 {
		t.Fatalf("README.md has %d links into the mixin, want the dashboard, the rules and the alerts", mixin)
	}
}
