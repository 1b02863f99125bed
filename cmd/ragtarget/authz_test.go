package main

import (
	"bytes"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/ragcanary/ragcanary/internal/dev/openfgatest"
	"github.com/ragcanary/ragcanary/internal/openfga"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
)

// testStore is a well-formed OpenFGA store ID.
const testStore = "01ARZ3NDEKTSV4RRFFQ69G5FAV"

// TestOpenFGAFlags: the OpenFGA flags and $RAGTARGET_OPENFGA_TOKEN become
// the service's OpenFGA settings, the defaults being minimize_latency and
// prefilter.
func TestOpenFGAFlags(t *testing.T) {
	t.Setenv("RAGTARGET_OPENFGA_TOKEN", "fga-key")
	for _, tc := range []struct {
		args []string
		want ragtarget.OpenFGAAuthz
	}{
		{args: []string{"--authz-openfga-url", "http://127.0.0.1:8080", "--authz-openfga-store", testStore},
			want: ragtarget.OpenFGAAuthz{URL: "http://127.0.0.1:8080", Store: testStore, Token: "fga-key",
				Consistency: openfga.MinimizeLatency, Filter: ragtarget.FilterPrefilter}},
		{args: []string{"--authz-openfga-url", "http://127.0.0.1:8080", "--authz-openfga-store", testStore,
			"--authz-consistency", "higher_consistency", "--authz-filter", "postfilter"},
			want: ragtarget.OpenFGAAuthz{URL: "http://127.0.0.1:8080", Store: testStore, Token: "fga-key",
				Consistency: openfga.HigherConsistency, Filter: ragtarget.FilterPostfilter}},
	} {
		var o options
		if err := newFlagSet(&o, io.Discard).Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		if err := o.complete(nil); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if o.cfg.OpenFGA == nil || *o.cfg.OpenFGA != tc.want || o.cfg.Authz != nil {
			t.Errorf("%v: OpenFGA %+v, SpiceDB %+v; want %+v and no SpiceDB", tc.args, o.cfg.OpenFGA, o.cfg.Authz, tc.want)
		}
	}
}

// TestAuthzFlagsRefused: a consistency the chosen engine does not know,
// two engines, postfilter asked of SpiceDB, or engine settings without an
// engine stop ragtarget before it serves, saying why.
func TestAuthzFlagsRefused(t *testing.T) {
	fga := []string{"--source-token", "src", "--authz-openfga-url", "http://127.0.0.1:1", "--authz-openfga-store", testStore}
	spice := []string{"--source-token", "src", "--authz-spicedb-endpoint", "127.0.0.1:1"}
	for _, tc := range []struct {
		args []string
		// want is in what ragtarget prints.
		want string
	}{
		{slices.Concat(fga, []string{"--authz-consistency", "fully_consistent"}), `"fully_consistent" is not one OpenFGA knows`},
		{slices.Concat(spice, []string{"--authz-consistency", "higher_consistency"}), `"higher_consistency" is not one SpiceDB knows`},
		{slices.Concat(fga, []string{"--authz-consistency", "eventually"}), `"eventually" is not one OpenFGA knows`},
		{slices.Concat(fga, []string{"--authz-spicedb-endpoint", "127.0.0.1:2"}), "SpiceDB or OpenFGA, not both"},
		{slices.Concat(spice, []string{"--authz-filter", "postfilter"}), "--authz-filter postfilter needs OpenFGA"},
		{slices.Concat(fga, []string{"--authz-filter", "none"}), `authz filter "none" is not one of prefilter, postfilter`},
		{[]string{"--source-token", "src", "--authz-filter", "postfilter"}, "need --authz-spicedb-endpoint or --authz-openfga-url"},
		{[]string{"--source-token", "src", "--authz-openfga-url", "http://127.0.0.1:1"}, "needs an API URL and a store ID"},
	} {
		var stderr bytes.Buffer
		if code := run(tc.args, &stderr); code != 2 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, %q; want exit 2 saying %q", tc.args, code, stderr.String(), tc.want)
		}
	}
}

// TestOpenFGAWrongTokenStopsStart: against a real OpenFGA, a token it
// refuses stops ragtarget at start, naming the variable and not the token.
func TestOpenFGAWrongTokenStopsStart(t *testing.T) {
	const wrong = "not-the-openfga-key"
	srv := openfgatest.Start(t, openfgatest.Options{})
	t.Setenv("RAGTARGET_OPENFGA_TOKEN", wrong)
	var stderr bytes.Buffer
	code := run([]string{"--source-token", "src", "--listen", "127.0.0.1:0",
		"--authz-openfga-url", srv.URL, "--authz-openfga-store", srv.NewStore(t, "ragtarget")}, &stderr)
	if out := stderr.String(); code != 2 || !strings.Contains(out, "OpenFGA refused the token ($RAGTARGET_OPENFGA_TOKEN)") || strings.Contains(out, wrong) {
		t.Fatalf("exit %d, %q; want exit 2 saying the token was refused, without it", code, out)
	}
}
