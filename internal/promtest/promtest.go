// Package promtest holds helpers shared by the tests that run the real
// Prometheus tools (promtool and the prometheus server) against pvlock's
// metrics.
package promtest

import (
	"os"
	"os/exec"
	"testing"
)

// Tool returns the path of the named Prometheus binary ("promtool",
// "prometheus"). If it is missing, the test is skipped when the CI
// environment variable is unset, and fails when it is set: CI installs
// Debian's prometheus package, which provides both binaries.
func Tool(t testing.TB, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	if os.Getenv("CI") == "" {
		t.Skipf("skipping: %s is not installed (%v); install Debian's prometheus package (apt-get install prometheus) to run this test, which is required when CI is set", name, err)
	}
	t.Fatalf("%s is not installed but CI=%q requires this test: install Debian's prometheus package (apt-get install prometheus): %v", name, os.Getenv("CI"), err)
	return ""
}
