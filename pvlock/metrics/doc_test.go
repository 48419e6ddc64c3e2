package metrics

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// described returns the names of every metric the Collector describes.
func described() []string {
	ch := make(chan *prometheus.Desc)
	go func() {
		NewCollector(only()).Describe(ch)
		close(ch)
	}()
	var names []string
	for d := range ch {
		names = append(names, metricName(d))
	}
	return names
}

// docSection returns the part of the package doc in doc.go under the
// heading "# title", up to the next heading.
func docSection(t *testing.T, doc, title string) string {
	t.Helper()
	_, rest, ok := strings.Cut(doc, "\n// # "+title+"\n")
	if !ok {
		t.Fatalf("doc.go has no section %q", title)
	}
	section, _, _ := strings.Cut(rest, "\n// # ")
	return section
}

// TestDocListsEveryMetric keeps the package doc and the descriptors in
// step: every metric the Collector describes is documented in the section
// of its kind (the vCPU metrics in a table line of their own), and every
// metric name the doc mentions is one the Collector describes.
func TestDocListsEveryMetric(t *testing.T) {
	b, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	lockSec, vcpuSec, buildSec := docSection(t, doc, "Lock metrics"), docSection(t, doc, "vCPU metrics"), docSection(t, doc, "Build information")
	names := described()
	if len(names) < 25 {
		t.Fatalf("Describe sent %d descriptors", len(names))
	}
	known := map[string]bool{}
	for _, name := range names {
		known[name] = true
		var section, where string
		switch {
		case strings.HasPrefix(name, "pvlock_vcpu_"):
			// A line of the table: a tab, the name, then its meaning.
			section, where = vcpuSec, "a line of the vCPU metrics table"
			if !regexp.MustCompile(`(?m)^//\t` + name + ` +\S`).MatchString(section) {
				t.Errorf("%s is not documented in %s", name, where)
			}
			continue
		case name == "pvlock_build_info":
			section, where = buildSec, "Build information"
		default:
			section, where = lockSec, "Lock metrics"
		}
		if !regexp.MustCompile(`\b` + name + `\b`).MatchString(section) {
			t.Errorf("%s is not documented in the section %s", name, where)
		}
	}
	for _, m := range regexp.MustCompile(`\bpvlock_[a-z0-9_]+`).FindAllString(doc, -1) {
		base := m
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			base = strings.TrimSuffix(base, suffix)
		}
		if !known[m] && !known[base] {
			t.Errorf("the package doc mentions %s, which the Collector does not describe", m)
		}
	}
}
