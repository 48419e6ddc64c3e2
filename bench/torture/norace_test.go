//go:build !race

package torture

// raceEnabled reports whether the tests run under the race detector,
// which slows the vCPUs several times.
const raceEnabled = false
