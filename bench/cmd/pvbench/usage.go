package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// usageError is a mistake in the command line: an unknown flag, command
// or argument, or a flag value pvbench refuses. pvbench exits with status
// 2 on one, as the flag package's commands do, and with 1 on any other
// error.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// badUsage marks err, unless it is nil or flag.ErrHelp (-h, which is no
// error), as a usage error.
func badUsage(err error) error {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return err
	}
	return usageError{err}
}

// exitCode is pvbench's exit status after run returned err.
func exitCode(err error) int {
	var u usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &u):
		return 2
	}
	return 1
}

// setCommandUsage makes -h of the subcommand name print its usage line,
// its description (commandDocs) and its flags.
func setCommandUsage(fs *flag.FlagSet, name string) {
	fs.Usage = func() {
		writeCommandUsage(fs.Output(), name)
		fs.PrintDefaults()
	}
}

// writeCommandUsage writes the head of a subcommand's -h.
func writeCommandUsage(w io.Writer, name string) {
	fmt.Fprintf(w, "usage: pvbench %s [flags]\n\n", name)
	if doc := commandDocs[name]; doc != "" {
		fmt.Fprintf(w, "pvbench %s: %s.\n\n", name, doc)
	}
	fmt.Fprintf(w, "flags:\n")
}
