// Package locks is the one lock registry of the lab: the pvbench main job,
// the lockbreak, shootdown and sweep subcommands, the torture
// (bench/torture) and the go test -bench suites of bench all pick their
// locks here by name.
//
// A Kind holds what they need to know: the constructor (New, and
// WithThreshold for the PV locks the sweep varies), the halt statistics the
// torture watches (Stats, see StatsCounters), and flags: Unfair (tas and
// preemptable-ticket may starve a waiter by design), FIFOSpin (native-ticket,
// native-qspin, ple-yield and preemptable-ticket spin in line without
// blocking, so they collapse under overcommit), TortureOnly (the torture's
// -short variants, kept out of the lab's lists) and NoTorture (the reason a
// lock cannot be tortured; no registered lock has one).
//
// Names lists the lab's nine locks, TortureNames the eleven the torture
// runs. The lab's own peer locks live here too: PLEYield (ple-yield, a
// native ticket lock with an emulated pause-loop exit) and
// PreemptableTicket (preemptable-ticket, Ouyang's preemptable ticket
// lock). Adding a lock is one Register call in an init function.
package locks
