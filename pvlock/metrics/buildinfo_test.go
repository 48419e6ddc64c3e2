package metrics

import (
	"fmt"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// typedNames lists the metric names of an exposition text's TYPE lines.
func typedNames(text string) []string {
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^# TYPE (\S+) `).FindAllStringSubmatch(text, -1) {
		names = append(names, m[1])
	}
	return names
}

func TestBuildInfo(t *testing.T) {
	l := buildLabels()
	want := fmt.Sprintf(`# HELP pvlock_build_info %s
# TYPE pvlock_build_info gauge
pvlock_build_info{goversion=%q,revision=%q,version=%q} 1
`, buildInfoHelp, runtime.Version(), l[1], l[0])
	c := NewCollector(only())
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "pvlock_build_info"); err != nil {
		t.Fatal(err)
	}
	if l[2] != runtime.Version() || l[0] == "" || l[0] == "unknown" {
		t.Errorf("build labels %q: a test binary of this module has build information", l)
	}
}

func TestBuildLabelsOf(t *testing.T) {
	main := &debug.BuildInfo{
		Main:     debug.Module{Path: modulePath, Version: "v1.2.3"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}},
	}
	dep := &debug.BuildInfo{
		Main: debug.Module{Path: "example.com/app", Version: "(devel)"},
		Deps: []*debug.Module{{Path: "example.com/other", Version: "v9.9.9"}, {Path: modulePath, Version: "v0.4.0"}},
	}
	replaced := &debug.BuildInfo{
		Main: debug.Module{Path: "example.com/app"},
		Deps: []*debug.Module{{Path: modulePath, Version: "v0.4.0", Replace: &debug.Module{Path: "../pvlock", Version: ""}}},
	}
	for _, c := range []struct {
		bi   *debug.BuildInfo
		ok   bool
		want [3]string
	}{
		{main, true, [3]string{"v1.2.3", "abc123", runtime.Version()}},
		{dep, true, [3]string{"v0.4.0", "", runtime.Version()}},
		{replaced, true, [3]string{"v0.4.0", "", runtime.Version()}},
		{nil, false, [3]string{"unknown", "", runtime.Version()}},
	} {
		if got := buildLabelsOf(c.bi, c.ok); got != c.want {
			t.Errorf("buildLabelsOf = %q, want %q", got, c.want)
		}
	}
}
