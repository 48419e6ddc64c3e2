// Package lockstat holds the statistics of pvlock's locks: for each lock
// kind ("ticket", "qspin", "rwlock") and mode ("pv", "native"), and for
// each lock name (ticket.Name, qspin.Name), the counts of the lock's
// events, the kernel's lock_events and PV ticketlock counters, and a
// histogram of halt durations.
//
// The lock packages count into it; ticket.Stats and qspin.Stats return a
// kind's statistics, All returns every one, and the Prometheus collector
// (pvlock/metrics) exports them. It depends on nothing else of pvlock, so a
// program that uses one lock pays for the lock and its counters only.
//
//	st := ticket.Stats(ticket.ModePV)
//	before := st.Snapshot()
//	// ... use the locks ...
//	d := st.Snapshot().Sub(before)
//	fmt.Println(d.Get(ticket.Halts), "halts")
package lockstat
