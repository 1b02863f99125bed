package testutil

import "runtime"

// Allocated is how many bytes f allocates on the heap, for tests that bound
// what hostile input may cost. It collects garbage first so an earlier
// test's leftovers are not counted; goroutines running meanwhile add theirs.
func Allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
