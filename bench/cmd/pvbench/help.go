package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// commandDocs are the one-line descriptions of the subcommands in
// pvbench's usage. The list itself comes from labCommands (lab.go and
// any file that registers a command there): a registered command without
// a line here is still listed.
var commandDocs = map[string]string{
	"help":      "print this text; \"pvbench help <command>\" prints a command's flags",
	"torture":   "locktorture for one lock: mutual exclusion, lost wake-ups, starvation (End of test: SUCCESS/FAILURE)",
	"lockbreak": "short-operation latency next to a long batch, lock-break off and on (cond_resched_lock)",
	"shootdown": "ebizzy-like records/s with native and PV cross-vCPU calls (PV TLB flush)",
	"rwroles":   "rwloop's readers and writers apart: rates, fairness and waits by role, for every reader-writer lock",
	"sweep":     "the adaptive waiting policy against fixed spin thresholds, halt-poll windows and restriction off (table, plots, -json)",
}

func init() {
	labCommands["torture"] = runTorture
	labCommands["help"] = runHelp
}

// commandNames lists every subcommand, sorted.
func commandNames() []string {
	return slices.Sorted(maps.Keys(labCommands))
}

// writeUsage writes the head of pvbench's usage: the main job and the
// subcommands. The main job's flags follow it in -h.
func writeUsage(w io.Writer) {
	fmt.Fprintf(w, "usage: pvbench [flags]             the main job: a workload at several overcommit factors for every lock\n"+
		"       pvbench <command> [flags]\n\ncommands:\n")
	names := commandNames()
	width := 0
	for _, name := range names {
		width = max(width, len(name))
	}
	for _, name := range names {
		doc := commandDocs[name]
		if doc == "" {
			doc = fmt.Sprintf("see \"pvbench %s -h\"", name)
		}
		fmt.Fprintf(w, "  %-*s  %s\n", width, name, doc)
	}
	fmt.Fprintf(w, "\n\"pvbench <command> -h\" lists a command's flags. The main job's flags:\n\n")
}

// runHelp is "pvbench help [command]".
func runHelp(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	switch {
	case len(args) == 0:
		_, err := parse([]string{"-h"}, stdout) // the usage and the main job's flags
		if err != nil && !errors.Is(err, flag.ErrHelp) {
			return err
		}
		return nil
	case len(args) == 1 && args[0] != "help" && labCommands[args[0]] != nil:
		return labCommands[args[0]](ctx, []string{"-h"}, stdout, stderr)
	}
	return badUsage(fmt.Errorf("help: unknown command %q; commands: %s", strings.Join(args, " "), strings.Join(commandNames(), ", ")))
}
