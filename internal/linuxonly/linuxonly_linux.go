// Package linuxonly stops pvlock from building anywhere but Linux.
//
// pvlock's vCPUs are threads pinned with sched_setaffinity and its halts
// and kicks are futex waits and wakes, so the lock and runtime packages
// import this package from a file built only off Linux. It has no Go
// files for other systems, and the go command then fails with
//
//	build constraints exclude all Go files in .../internal/linuxonly
//
// naming the import chain that led here, instead of a list of undefined
// Linux system calls.
package linuxonly
