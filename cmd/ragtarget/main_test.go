package main

import (
	"bytes"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/internal/ragtarget"
)

func TestConversationFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		// reuses and max are the expected Config fields.
		reuses bool
		max    int
	}{
		{args: nil, reuses: false, max: 1000},
		{args: []string{"--conversation-reuses-history", "--max-conversations", "5"}, reuses: true, max: 5},
	} {
		var o options
		if err := newFlagSet(&o, io.Discard).Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		if o.cfg.ConversationReusesHistory != tc.reuses || o.cfg.MaxConversations != tc.max {
			t.Errorf("%v: reuses %v max %d, want %v %d", tc.args, o.cfg.ConversationReusesHistory, o.cfg.MaxConversations, tc.reuses, tc.max)
		}
	}
}

// TestStreamAndDigestFlags: the streaming and digest flags become the
// service's settings; the defaults stream at once without re-checks and
// derive no digest (most-restrictive when they are derived).
func TestStreamAndDigestFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		// The expected Config fields.
		chunk  time.Duration
		reauth ragtarget.StreamReauthorize
		digest time.Duration
		acl    ragtarget.DigestACL
	}{
		{args: nil, reauth: ragtarget.StreamReauthorize{Mode: ragtarget.ReauthorizeNone}, acl: ragtarget.DigestMostRestrictive},
		{args: []string{"--stream-chunk-interval", "250ms", "--stream-reauthorize", "per-chunk", "--digest-interval", "1h", "--digest-acl", "union"},
			chunk: 250 * time.Millisecond, reauth: ragtarget.StreamReauthorize{Mode: ragtarget.ReauthorizePerChunk}, digest: time.Hour, acl: ragtarget.DigestUnion},
		{args: []string{"--stream-reauthorize", "interval=1.5s", "--digest-acl", "public"},
			reauth: ragtarget.StreamReauthorize{Mode: ragtarget.ReauthorizeInterval, Every: 1500 * time.Millisecond}, acl: ragtarget.DigestPublic},
	} {
		var o options
		if err := newFlagSet(&o, io.Discard).Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		if err := o.complete(nil); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		c := o.cfg
		if c.StreamChunkInterval != tc.chunk || c.StreamReauthorize != tc.reauth || c.DigestInterval != tc.digest || c.DigestACL != tc.acl {
			t.Errorf("%v: chunk %s, reauthorize %+v, digest %s %q; want %s, %+v, %s %q", tc.args,
				c.StreamChunkInterval, c.StreamReauthorize, c.DigestInterval, c.DigestACL, tc.chunk, tc.reauth, tc.digest, tc.acl)
		}
	}
}

// TestStreamAndDigestFlagsRefused: bad values stop ragtarget before it
// serves, saying which setting and why.
func TestStreamAndDigestFlagsRefused(t *testing.T) {
	base := []string{"--source-token", "src", "--listen", "127.0.0.1:0"}
	for _, tc := range []struct {
		args []string
		// want is in what ragtarget prints.
		want string
	}{
		{[]string{"--stream-reauthorize", "always"}, `--stream-reauthorize "always" is not one of none, per-chunk, interval=D`},
		{[]string{"--stream-reauthorize", "interval"}, `"interval" is not one of none, per-chunk, interval=D`},
		{[]string{"--stream-reauthorize", "interval=0s"}, `"interval=0s": the interval must be a positive duration`},
		{[]string{"--stream-reauthorize", "interval=soon"}, `"interval=soon": the interval must be a positive duration`},
		{[]string{"--stream-reauthorize", "per-chunk=1s"}, `"per-chunk=1s" is not one of none, per-chunk, interval=D`},
		{[]string{"--stream-chunk-interval", "-1s"}, "the stream chunk interval must not be negative"},
		{[]string{"--digest-interval", "-1m"}, "the digest interval must not be negative"},
		{[]string{"--digest-acl", "owner"}, `digest ACL "owner" is not one of most-restrictive, union, public`},
		{[]string{"--digest-interval", "1m", "--authz-spicedb-endpoint", "127.0.0.1:1"}, "digests need the index's own access lists"},
	} {
		var stderr bytes.Buffer
		if code := run(slices.Concat(base, tc.args), &stderr); code != 2 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, %q; want exit 2 saying %q", tc.args, code, stderr.String(), tc.want)
		}
	}
}
