package scheduling

import (
	"syscall"
	"time"
)

// cpuTime is the process's user+system CPU time, for measuring under load.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
