package main

import (
	"strings"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/internal/shard"
	"github.com/ragcanary/ragcanary/internal/target"
)

// TestAllowlistIsRequired: the manager refuses to start without a target
// allowlist unless --allow-any-target says so explicitly.
func TestAllowlistIsRequired(t *testing.T) {
	tests := []struct {
		name string
		s    settings
		// wantErr is a substring of the refusal, "" when the settings start.
		wantErr string
	}{
		{"neither flag", settings{}, "--allowed-target-urls is required"},
		{"blank list", settings{allowedTargetURLs: " , "}, "--allowed-target-urls is required"},
		{"both flags", settings{allowedTargetURLs: "https://rag.internal/", allowAnyTarget: true}, "exclusive"},
		{"entry with credentials", settings{allowedTargetURLs: "https://u:p@rag.internal/"}, "must not embed credentials"},
		{"a list", settings{allowedTargetURLs: "https://rag.internal/, http://127.0.0.1:8089"}, ""},
		{"any target", settings{allowAnyTarget: true}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			allow, err := tc.s.allowlist()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.wantErr == "" && allow.Empty():
				t.Fatal("started with an allowlist that admits nothing")
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("got %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

// TestDeniedTargetCIDRsDefault: the flag's default is the door's list, so
// a manager started without it denies the metadata ranges.
func TestDeniedTargetCIDRsDefault(t *testing.T) {
	s := defaultSettings(t)
	if s.deniedCIDRs != strings.Join(target.DefaultDeniedCIDRs, ",") {
		t.Errorf("--denied-target-cidrs defaults to %q", s.deniedCIDRs)
	}
}

// TestShardDrainTimeoutBounded: a replica's drain on SIGTERM must end
// within the manager's shutdown bound, which the Pod's grace period must
// cover in turn; 0 turns the drain off.
func TestShardDrainTimeoutBounded(t *testing.T) {
	for _, tc := range []struct {
		drain time.Duration
		// ok is whether the settings start.
		ok bool
	}{
		{shard.DefaultDrain, true},
		{0, true},
		{managerShutdown - time.Second, true},
		{managerShutdown, false},
		{-time.Second, false},
	} {
		s := settings{sharding: true, leaderElect: true, shardName: "r-a",
			shardLease: shard.DefaultLeaseDuration, shardRenew: shard.DefaultRenewInterval, shardDrain: tc.drain}
		_, err := s.replica()
		if (err == nil) != tc.ok {
			t.Errorf("--shard-drain-timeout=%s: error %v, want ok %v", tc.drain, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "--shard-drain-timeout") {
			t.Errorf("--shard-drain-timeout=%s: the error %q does not name the flag", tc.drain, err)
		}
	}
}
