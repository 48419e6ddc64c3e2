//go:build !linux

package qspin

// pvlock is Linux-only (pinned threads, futexes): off Linux this import
// fails the build with one clear message.
import _ "github.com/pvlock/pvlock/internal/linuxonly"
