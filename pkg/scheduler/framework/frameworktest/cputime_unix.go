//go:build unix

package frameworktest

import (
	"syscall"
	"testing"
	"time"
)

// CPUTime is the CPU time (user and system) the process has used so far. Benchmarks report
// pods per CPU-second with it: on a busy shared machine it holds still where wall time does
// not.
func CPUTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
