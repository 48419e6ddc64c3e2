package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// runMainEnv makes the test binary run pvbench's main (TestMain).
const runMainEnv = "PVBENCH_TEST_RUN_MAIN"

// TestCommandHelpDescribes: -h of pvbench and of every subcommand is no
// error, and prints the command's usage line and a description before its
// flags, not only the flag package's "Usage of ...".
func TestCommandHelpDescribes(t *testing.T) {
	for _, name := range commandNames() {
		if name == "help" {
			continue
		}
		var out, errOut bytes.Buffer
		if err := run([]string{name, "-h"}, &out, &errOut); err != nil {
			t.Errorf("pvbench %s -h: %v", name, err)
			continue
		}
		usage := errOut.String()
		if strings.Contains(usage, "Usage of") || !strings.HasPrefix(usage, "usage: pvbench "+name+" [flags]\n") {
			t.Errorf("pvbench %s -h does not begin with its usage line:\n%s", name, usage)
		}
		desc, flags, ok := strings.Cut(usage, "\n  -")
		if !ok || len(strings.TrimSpace(strings.TrimPrefix(desc, "usage: pvbench "+name+" [flags]"))) < 40 || flags == "" {
			t.Errorf("pvbench %s -h has no description before its flags:\n%s", name, usage)
		}
		if doc := commandDocs[name]; doc == "" {
			t.Errorf("subcommand %s has no description in commandDocs", name)
		} else if name != "torture" && !strings.Contains(desc, doc) {
			t.Errorf("pvbench %s -h lacks its description %q:\n%s", name, doc, usage)
		}
	}
	if out := output(t, "-h"); !strings.HasPrefix(out, "usage: pvbench [flags]") || !strings.Contains(out, "the main job: ") {
		t.Errorf("pvbench -h does not begin with its usage and description:\n%s", out)
	}
}

// TestUsageErrorsExitTwo: a mistake in the command line (unknown flag,
// command or argument, bad value) is a usage error, exit status 2; other
// errors exit 1, and -h exits 0.
func TestUsageErrorsExitTwo(t *testing.T) {
	for _, args := range [][]string{
		{"-nosuchflag"}, {"-oc", "0"}, {"-runs", "x"}, {"extra"}, {"nope"},
		{"help", "nope"}, {"lockbreak", "-nosuchflag"}, {"lockbreak", "-oc", "0"},
		{"lockbreak", "-step", "3ms", "-batch", "1ms"}, {"shootdown", "-chunk", "0"}, {"shootdown", "extra"},
		{"sweep", "-nosuchflag"}, {"sweep", "-runs", "0"}, {"sweep", "-confirm", "-1"}, {"sweep", "-thresholds", "x"}, {"sweep", "-locks", "nope"},
		{"torture", "-lock", "nope"}, {"torture", "-oc", "0"}, {"torture", "-duration", "x"},
	} {
		err := run(args, &bytes.Buffer{}, &bytes.Buffer{})
		if got := exitCode(err); got != 2 {
			t.Errorf("pvbench %q: %v, exit status %d, want 2", args, err, got)
		}
	}
	dir := t.TempDir()
	for _, args := range [][]string{
		{"-from", filepath.Join(dir, "missing.json")},
		{"-oc", "1", "-json", filepath.Join(dir, "no", "such", "dir", "rows.json")},
	} {
		err := run(args, &bytes.Buffer{}, &bytes.Buffer{})
		if got := exitCode(err); err == nil || got != 1 {
			t.Errorf("pvbench %q: %v, exit status %d, want an error with status 1", args, err, got)
		}
	}
	for _, args := range [][]string{{"-h"}, {"sweep", "-h"}, {"help"}} {
		if err := run(args, &bytes.Buffer{}, &bytes.Buffer{}); exitCode(err) != 0 {
			t.Errorf("pvbench %q: %v, want exit status 0", args, err)
		}
	}
}

// TestMainExitStatus runs the test binary as pvbench: main exits with the
// status exitCode gives.
func TestMainExitStatus(t *testing.T) {
	for _, c := range []struct {
		args []string
		want int
		says string
	}{
		{[]string{"-nosuchflag"}, 2, "flag provided but not defined"},
		{[]string{"nope"}, 2, `unknown command "nope"`},
		{[]string{"lockbreak", "-runs", "0"}, 2, "-runs must be at least 1"},
		{[]string{"-from", filepath.Join(t.TempDir(), "missing.json")}, 1, "-from"},
		{[]string{"shootdown", "-h"}, 0, "usage: pvbench shootdown"},
	} {
		cmd := exec.Command(os.Args[0], c.args...)
		cmd.Env = append(os.Environ(), runMainEnv+"=1")
		out, err := cmd.CombinedOutput()
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != c.want || !strings.Contains(string(out), c.says) {
			t.Errorf("pvbench %q: exit status %d, want %d; output:\n%s", c.args, code, c.want, out)
		}
	}
}
