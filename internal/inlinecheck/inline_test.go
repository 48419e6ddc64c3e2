package inlinecheck

import (
	"bufio"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// fastPaths lists, per package, the methods that must inline.
var fastPaths = map[string][]string{
	"github.com/pvlock/pvlock/ticket": {"(*Lock).Lock", "(*Lock).Unlock", "(*Lock).lock", "(*Lock).unlock", "(*Lock).TryLock"},
	"github.com/pvlock/pvlock/qspin": {"(*Lock).Lock", "(*Lock).Unlock", "(*Lock).unlock", "(*Lock).TryLock",
		"(*RWLock).RLock", "(*RWLock).RUnlock", "(*RWLock).Lock", "(*RWLock).Unlock"},
}

// goTool returns the go command of the toolchain running the test.
func goTool(t *testing.T) string {
	t.Helper()
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := exec.LookPath(gobin); err == nil {
		return gobin
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command to build with: %v", err)
	}
	return gobin
}

// TestFastPathsInline builds the lock packages with -gcflags=-m and fails
// if the compiler no longer reports "can inline" for a fast path.
func TestFastPathsInline(t *testing.T) {
	args := []string{"build", "-gcflags=-m"}
	for pkg := range fastPaths {
		args = append(args, pkg)
	}
	out, err := exec.Command(goTool(t), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	found := map[string]map[string]bool{}
	var pkg string
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if p, ok := strings.CutPrefix(line, "# "); ok {
			pkg = p
			continue
		}
		_, msg, ok := strings.Cut(line, ": can inline ")
		if !ok {
			continue
		}
		name, _, _ := strings.Cut(msg, " ")
		if found[pkg] == nil {
			found[pkg] = map[string]bool{}
		}
		found[pkg][name] = true
	}
	if len(found) == 0 {
		t.Fatalf("no inlining report in the output of go %s:\n%s", strings.Join(args, " "), out)
	}
	for pkg, funcs := range fastPaths {
		for _, fn := range funcs {
			if !found[pkg][fn] {
				t.Errorf("%s.%s no longer inlines: keep the fast path to the atomic step and call an outlined function for the rest", pkg, fn)
			}
		}
	}
}
