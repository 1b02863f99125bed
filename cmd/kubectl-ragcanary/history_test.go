package main

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/ragcanary/ragcanary/internal/cli"
)

// TestHistory: every kept run oldest first, with p50/p95/max over the
// finished runs and a sparkline of upper bounds.
func TestHistory(t *testing.T) {
	fleetFixture(t, "hist")
	h := historyOf(t, "docs-grant", "hist", "history_docs_grant.txt")
	if len(h.Runs) != 5 || h.Runs[0].Name != "docs-grant-1772330400" || h.Runs[4].CompletionTime != nil {
		t.Fatalf("runs %+v, want 5 oldest first, the newest in flight", h.Runs)
	}
	search := h.Upper[0]
	// Search upper bounds of the finished runs: 1.5, 1.61, none, 2.21.
	if search.Surface != "Search" || search.N != 3 || search.Missing != 1 ||
		!near(search.P50Seconds, 1.61) || !near(search.P95Seconds, 2.21) || !near(search.MaxSeconds, 2.21) {
		t.Errorf("search spread %+v (p50 %v p95 %v max %v), want n 3 missing 1 p50 1.61 p95 2.21 max 2.21",
			search, deref(search.P50Seconds), deref(search.P95Seconds), deref(search.MaxSeconds))
	}
	if search.Sparkline != "▆▆·█" {
		t.Errorf("search sparkline %q, want ▆▆·█", search.Sparkline)
	}
}

// TestHistoryUnknownCanary fails with a message, not an empty history.
func TestHistoryUnknownCanary(t *testing.T) {
	createNamespace(t, "hist-empty")
	res := ragcanary(testNow, "history", "nope", "-n", "hist-empty")
	if res.code != exitFailed || res.stdout != "" {
		t.Errorf("exit %d stdout %q, want 1 and nothing on stdout", res.code, res.stdout)
	}
	containsAll(t, "stderr", res.stderr, `"nope" not found`)
}

// near compares seconds to the nanosecond a Duration holds.
func near(got *float64, want float64) bool { return got != nil && math.Abs(*got-want) < 1e-9 }

func deref(f *float64) any {
	if f == nil {
		return nil
	}
	return *f
}

// historyOf checks `history CANARY -n NS` against a golden file and returns
// what `-o json` says.
func historyOf(t *testing.T, canary, ns, goldenFile string) cli.History {
	t.Helper()
	res := ragcanary(testNow, "history", canary, "-n", ns)
	if res.code != exitOK {
		t.Fatalf("exit code %d; stderr: %s", res.code, res.stderr)
	}
	golden(t, goldenFile, res.stdout)

	res = ragcanary(testNow, "history", canary, "-n", ns, "-o", "json")
	var h cli.History
	if err := json.Unmarshal([]byte(res.stdout), &h); err != nil {
		t.Fatalf("-o json: %v\n%s", err, res.stdout)
	}
	return h
}
