// Package inlinecheck holds the test that keeps the lock fast paths
// inlinable: Lock and Unlock of ticket.Lock and qspin.Lock must stay within
// the compiler's inlining budget, so that an uncontended Lock+Unlock costs
// the caller two inlined atomic steps and no call, as with sync.Mutex.
package inlinecheck
