package schedule

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// dnsLabel is what a run name must satisfy to also be usable as a label value.
var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

func TestRunNames(t *testing.T) {
	long := strings.Repeat("a", 60) + "-canary"
	longSibling := strings.Repeat("a", 60) + "-other"
	dotted := strings.Repeat("b", 40) + "." + strings.Repeat("c", 30)
	at := ts("2026-01-01T10:00:00Z")
	tests := []struct {
		name string
		// got is the name under test.
		got string
		// want is the exact expected name, "" to check only the shape.
		want string
		// wantPrefix is a required prefix when want is "".
		wantPrefix string
		// wantSuffix is a required suffix when want is "".
		wantSuffix string
	}{
		{name: "short parent, scheduled", got: RunName("alice", at), want: "alice-1767261600"},
		{name: "sub-second scheduled time names the same run", got: RunName("alice", at.Add(300*time.Millisecond)), want: "alice-1767261600"},
		{name: "short parent, run-now", got: RunNowName("alice", "2026-01-01T10:00"), want: "alice-now-" + ShortHash("2026-01-01T10:00")},
		{name: "long parent is truncated with a hash", got: RunName(long, at),
			wantPrefix: strings.Repeat("a", 43) + "-" + ShortHash(long), wantSuffix: "-1767261600"},
		{name: "long parent run-now", got: RunNowName(long, "x"), wantPrefix: strings.Repeat("a", 40), wantSuffix: "-now-" + ShortHash("x")},
		{name: "truncation never leaves a trailing dot", got: RunName(dotted, at), wantSuffix: "-1767261600"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if len(tt.got) > MaxNameLength {
				t.Errorf("%q is %d characters, want ≤ %d", tt.got, len(tt.got), MaxNameLength)
			}
			if tt.want != "" && tt.got != tt.want {
				t.Errorf("name = %q, want %q", tt.got, tt.want)
			}
			if !strings.HasPrefix(tt.got, tt.wantPrefix) || !strings.HasSuffix(tt.got, tt.wantSuffix) {
				t.Errorf("name = %q, want prefix %q and suffix %q", tt.got, tt.wantPrefix, tt.wantSuffix)
			}
			if strings.Contains(tt.got, ".-") || strings.Contains(tt.got, "--") {
				t.Errorf("name %q has an empty or dangling part", tt.got)
			}
		})
	}
	if RunName(long, at) == RunName(longSibling, at) {
		t.Errorf("two long parents sharing a prefix got the same run name %q", RunName(long, at))
	}
	if RunNowName("alice", "a") == RunNowName("alice", "b") {
		t.Error("different run-now tokens got the same run name")
	}
}

func TestLabelValue(t *testing.T) {
	tests := []struct {
		name string
		// in is the parent name.
		in string
		// wantSame is true when the value must pass through unchanged.
		wantSame bool
	}{
		{name: "short name unchanged", in: "alice-canary", wantSame: true},
		{name: "63 characters unchanged", in: strings.Repeat("a", 63), wantSame: true},
		{name: "64 characters hashed", in: strings.Repeat("a", 64)},
		{name: "253 characters hashed", in: strings.Repeat("a", 252) + "b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := LabelValue(tt.in)
			if (got == tt.in) != tt.wantSame {
				t.Errorf("LabelValue(%q) = %q, unchanged = %v, want %v", tt.in, got, got == tt.in, tt.wantSame)
			}
			if len(got) > MaxNameLength || !dnsLabel.MatchString(got) {
				t.Errorf("LabelValue(%q) = %q is not a valid label value", tt.in, got)
			}
			if LabelValue(tt.in) != got {
				t.Error("LabelValue is not deterministic")
			}
		})
	}
}

func TestJitter(t *testing.T) {
	at := ts("2026-01-01T10:00:00Z")
	tests := []struct {
		name string
		// key is the object UID.
		key string
		// maxJitter is the spec jitter.
		maxJitter time.Duration
		// wantZero is true when no jitter may be applied.
		wantZero bool
	}{
		{name: "no jitter configured", key: "uid-1", maxJitter: 0, wantZero: true},
		{name: "below one second rounds to none", key: "uid-1", maxJitter: 900 * time.Millisecond, wantZero: true},
		{name: "one second window is always zero", key: "uid-1", maxJitter: time.Second, wantZero: true},
		{name: "bounded window", key: "uid-1", maxJitter: 30 * time.Second},
		{name: "other object", key: "uid-2", maxJitter: 30 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Jitter(tt.key, at, tt.maxJitter)
			if got != Jitter(tt.key, at, tt.maxJitter) {
				t.Fatal("jitter is not stable across calls")
			}
			if tt.wantZero && got != 0 {
				t.Errorf("jitter = %s, want 0", got)
			}
			if got < 0 || (tt.maxJitter > 0 && got >= tt.maxJitter) || got%time.Second != 0 {
				t.Errorf("jitter = %s, want whole seconds in [0, %s)", got, tt.maxJitter)
			}
		})
	}

	// Over many scheduled times the jitter stays in bounds and actually
	// spreads: a constant would defeat its purpose.
	seen := map[time.Duration]bool{}
	for i := range 200 {
		j := Jitter("uid-1", at.Add(time.Duration(i)*time.Minute), 10*time.Second)
		if j < 0 || j >= 10*time.Second {
			t.Fatalf("jitter %s out of [0, 10s)", j)
		}
		seen[j] = true
	}
	if len(seen) < 8 {
		t.Errorf("jitter took only %d distinct values over 200 times, want spread over the window", len(seen))
	}
}

func TestPendingRunNow(t *testing.T) {
	long := strings.Repeat("t", MaxTokenLength+1)
	tests := []struct {
		name string
		// annotation is the run-now annotation value ("" when absent).
		annotation string
		// last is status.lastRunNowToken.
		last string
		// wantPending is whether a run is asked for.
		wantPending bool
		// wantToken is the token to record.
		wantToken string
	}{
		{name: "absent", annotation: "", last: "", wantPending: false},
		{name: "absent after earlier token", annotation: "", last: "1", wantPending: false},
		{name: "first token", annotation: "1", last: "", wantPending: true, wantToken: "1"},
		{name: "same token already acted on", annotation: "1", last: "1", wantPending: false, wantToken: "1"},
		{name: "new token", annotation: "2", last: "1", wantPending: true, wantToken: "2"},
		{name: "overlong token is hashed to fit status", annotation: long, last: "", wantPending: true, wantToken: NormalizeToken(long)},
		{name: "overlong token already acted on", annotation: long, last: NormalizeToken(long), wantPending: false, wantToken: NormalizeToken(long)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			token, pending := PendingRunNow(tt.annotation, tt.last)
			if pending != tt.wantPending || token != tt.wantToken {
				t.Errorf("PendingRunNow = (%q, %v), want (%q, %v)", token, pending, tt.wantToken, tt.wantPending)
			}
			if len(token) > MaxTokenLength {
				t.Errorf("token is %d characters, status allows %d", len(token), MaxTokenLength)
			}
		})
	}
}
