package schedule

import (
	"slices"
	"strings"
	"time"
)

// FinishedRun is what pruning needs to know about one finished run.
type FinishedRun struct {
	// Name of the run.
	Name string
	// CompletionTime orders runs; a zero time counts as the oldest.
	CompletionTime time.Time
	// Succeeded sorts the run into the successful or the failed history.
	Succeeded bool
}

// Prune returns the names of finished runs to delete so that at most
// successfulLimit successful and failedLimit failed runs remain, keeping the
// newest of each. Negative limits count as zero. The result is ordered
// oldest first, so a partial failure deletes the least useful runs first.
func Prune(runs []FinishedRun, successfulLimit, failedLimit int32) []string {
	sorted := slices.Clone(runs)
	slices.SortFunc(sorted, newestFirst)
	var kept [2]int32 // index 1: successful, 0: failed
	limit := [2]int32{max(failedLimit, 0), max(successfulLimit, 0)}
	var prune []string
	for _, r := range sorted {
		class := 0
		if r.Succeeded {
			class = 1
		}
		if kept[class] < limit[class] {
			kept[class]++
			continue
		}
		prune = append(prune, r.Name)
	}
	slices.Reverse(prune)
	return prune
}

// newestFirst orders by completion time, newest first; equal times are
// ordered by name so the choice is deterministic.
func newestFirst(a, b FinishedRun) int {
	if c := b.CompletionTime.Compare(a.CompletionTime); c != 0 {
		return c
	}
	return strings.Compare(b.Name, a.Name)
}
