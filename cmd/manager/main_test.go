package main

import (
	"strings"
	"testing"

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
	s, err := parseFlags([]string{"--allowed-target-urls=https://rag.internal/"})
	if err != nil {
		t.Fatal(err)
	}
	if s.deniedCIDRs != strings.Join(target.DefaultDeniedCIDRs, ",") {
		t.Errorf("--denied-target-cidrs defaults to %q", s.deniedCIDRs)
	}
}
