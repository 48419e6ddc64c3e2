package lockcore

import "github.com/pvlock/pvlock/lockstat"

// Stats is what the locks count into: the statistics of one kind of lock
// in one mode (lockstat.Stats).
type Stats = lockstat.Stats
