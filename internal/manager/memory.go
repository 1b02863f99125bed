package manager

import (
	"os"
	"runtime/debug"
	"strconv"
)

// MemoryLimitEnv carries the container's memory limit in bytes (the chart
// sets it from the downward API, resourceFieldRef limits.memory).
const MemoryLimitEnv = "RAGCANARY_MEMORY_LIMIT"

// memoryHeadroom is the share of the container's limit the Go heap may
// use: the rest is for what the runtime does not count (stacks, buffers
// outside the heap, the binary) before the kernel's OOM killer acts.
const memoryHeadroom = 0.9

// SoftMemoryLimit is the Go memory limit for a container limit of
// containerBytes ("" or unparsable: none). An explicit GOMEMLIMIT wins.
func SoftMemoryLimit(containerBytes, gomemlimit string) (int64, bool) {
	if gomemlimit != "" {
		return 0, false
	}
	n, err := strconv.ParseInt(containerBytes, 10, 64)
	if err != nil || n <= 0 {
		return 0, false
	}
	return int64(float64(n) * memoryHeadroom), true
}

// ApplyMemoryLimit sets the Go runtime's soft memory limit from the
// environment, so the collector works harder before the container's limit
// is reached instead of the process being killed at it. It returns the
// limit set, 0 when none was.
func ApplyMemoryLimit() int64 {
	limit, ok := SoftMemoryLimit(os.Getenv(MemoryLimitEnv), os.Getenv("GOMEMLIMIT"))
	if !ok {
		return 0
	}
	debug.SetMemoryLimit(limit)
	return limit
}
