// Package lockcore is what the PV locks (ticket and qspin) share, and the
// part of the pvlock runtime they use, so that those packages keep only
// their protocols and word layouts and pvlock only what its users call.
//
// For the locks:
//
//   - NoCopy, New and Spin: the vet guard, the options plumbing and the
//     spin threshold of a lock's SpinThreshold and SpinDuration options.
//   - Key: a lock's identity in the halt/kick tables.
//   - Spinner, Spin.Spinner and Pause: how a waiter spins, acknowledging
//     cross-vCPU calls every SpinPollEvery polls (PollCurrent), and when it
//     stops to halt (the waiting policy: see spin.go).
//   - Halt: a halt under the watchdog, recorded in the lock's statistics.
//   - YieldTo: the directed yield of an unlocker that kicked a sleeper.
//   - Stats: per-vCPU event counters, written by the locks and read through
//     lockstat.Stats (a conversion of the same type).
//   - The event names, kinds and mode labels, each defined once here, and
//     Label and ModeStats, each lock package's Mode.String and Stats.
//
// For the runtime: the policy variables pvlock.SetPolicy writes (PVSpin,
// StatsOn, HaltTimeout, DirectedYield, Restrict, YieldSlice: policy.go),
// and VCPU, the lock-facing state a pvlock.VCPU holds (its sibling spin
// window and its poll of cross-vCPU calls), attached at the vCPU's global
// index while it runs and found from the calling thread's kick.Waiter by
// that index (Of).
//
// lockcore must not import pvlock: pvlock imports it.
package lockcore
