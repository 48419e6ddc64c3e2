package main

import (
	"bytes"
	"io"
	"os"
	"os/signal"
	"testing"
	"time"
)

// interrupt runs pvbench with args, sends this process a real SIGINT once
// ready returns and returns what run returned. The test's own
// signal.Notify keeps the signal from killing the test binary should it
// arrive before pvbench listens.
func interrupt(t *testing.T, args []string, stdout, stderr io.Writer, ready func()) error {
	t.Helper()
	guard := make(chan os.Signal, 1)
	signal.Notify(guard, os.Interrupt)
	defer signal.Stop(guard)
	errc := make(chan error, 1)
	go func() { errc <- run(args, stdout, stderr) }()
	ready()
	self, err := os.FindProcess(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if err := self.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		return err
	case <-time.After(60 * time.Second):
		t.Fatalf("pvbench %q did not stop on SIGINT", args)
		return nil
	}
}

// output runs pvbench with args, which must not fail, and returns what it
// wrote to stdout and stderr.
func output(t *testing.T, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	if err := run(args, &out, &out); err != nil {
		t.Fatalf("pvbench %q: %v", args, err)
	}
	return out.String()
}
