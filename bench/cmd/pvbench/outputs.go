package main

import (
	"errors"
	"fmt"
	"os"
)

// Every output a subcommand will write is checked before its first cell
// runs: a measurement takes minutes, a mistyped path should cost moments.

// checkOutputFile fails unless path, the value of -flag (empty: no
// output), is a file pvbench can create or overwrite. A file it had to
// create for the check is removed again.
func checkOutputFile(flag, path string) error {
	if path == "" {
		return nil
	}
	st, err := os.Stat(path)
	if err == nil && st.IsDir() {
		return fmt.Errorf("-%s %s: is a directory; give a file name", flag, path)
	}
	existed := err == nil
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("-%s: cannot write %s: %w", flag, path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("-%s: %w", flag, err)
	}
	if !existed {
		if err := os.Remove(path); err != nil {
			return fmt.Errorf("-%s: %w", flag, err)
		}
	}
	return nil
}

// checkOutputDir makes dir, the value of -flag (empty: no output), and
// checks that pvbench can write files in it.
func checkOutputDir(flag, dir string) error {
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("-%s: cannot make the directory: %w", flag, err)
	}
	f, err := os.CreateTemp(dir, ".pvbench-check-*")
	if err != nil {
		return fmt.Errorf("-%s: cannot write in %s: %w", flag, dir, err)
	}
	return errors.Join(f.Close(), os.Remove(f.Name()))
}
