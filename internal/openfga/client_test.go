package openfga_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/openfga"
)

// Every operation is one request: the SDK's own retries (15 by default,
// on 429 and 5xx) would stretch a measured window.
func TestSDKRetriesAreOff(t *testing.T) {
	ctx := context.Background()
	ops := map[string]func(c *openfga.Client) error{
		"Grant": func(c *openfga.Client) error {
			return openfga.NewPermissions(c, openfga.Mapping{}).Grant(ctx, "rc-1", "alice")
		},
		"Revoke": func(c *openfga.Client) error {
			return openfga.NewPermissions(c, openfga.Mapping{}).Revoke(ctx, "rc-1", "alice")
		},
		"Readable": func(c *openfga.Client) error {
			_, err := openfga.NewAuthorizer(c, openfga.Mapping{}, openfga.HigherConsistency).Readable(ctx, "alice")
			return err
		},
		"Allowed": func(c *openfga.Client) error {
			_, err := openfga.NewAuthorizer(c, openfga.Mapping{}, openfga.MinimizeLatency).Allowed(ctx, "alice", []string{"rc-1"})
			return err
		},
		"CheckModel": func(c *openfga.Client) error { return c.CheckModel(ctx) },
	}
	for _, status := range []int{http.StatusInternalServerError, http.StatusTooManyRequests, http.StatusServiceUnavailable} {
		for name, op := range ops {
			t.Run(fmt.Sprintf("%d/%s", status, name), func(t *testing.T) {
				f := newFake(t, func(w http.ResponseWriter, _ *http.Request) { reply(w, status, `{"code":"internal_error"}`) })
				err := op(dialFake(t, f, nil))
				if !driver.IsTransient(err) {
					t.Fatalf("got %v, want a transient error", err)
				}
				if n := f.requests.Load(); n != 1 {
					t.Fatalf("%d requests for one call, want 1 (the SDK retried)", n)
				}
			})
		}
	}
}

// Errors name the operation, the status and OpenFGA's code, and nothing of
// what the reply echoed: the tuple, the token, the URL.
func TestErrorsAreClassifiedAndSanitized(t *testing.T) {
	// The reply quotes the tuple and the credential, as OpenFGA's
	// messages quote tuples.
	leaky := func(code string) string {
		return fmt.Sprintf(`{"code":%q,"message":"cannot write user:alice-private relation viewer object document:rc-secret (Bearer %s)"}`, code, fakeToken)
	}
	for _, tc := range []struct {
		status int
		body   string
		kind   driver.Kind
		reason string // wanted in the error text
	}{
		{401, leaky("unauthenticated"), driver.Unauthorized, "openfga unauthenticated"},
		{403, leaky("forbidden"), driver.Unauthorized, "openfga forbidden"},
		{400, leaky("validation_error"), driver.Permanent, "openfga validation_error"},
		{400, leaky("latest_authorization_model_not_found"), driver.Permanent, "openfga latest_authorization_model_not_found"},
		{404, leaky("store_id_not_found"), driver.Permanent, "openfga store_id_not_found"},
		{409, leaky("Aborted"), driver.Transient, "openfga Aborted"},
		{422, leaky("throttled_timeout_error"), driver.Transient, "openfga throttled_timeout_error"},
		{429, `{}`, driver.Transient, "server error"},
		{500, leaky("internal_error"), driver.Transient, "openfga internal_error"},
		{504, leaky("deadline_exceeded"), driver.Transient, "openfga deadline_exceeded"},
		// A code field that is not a code is dropped, not echoed.
		{400, leaky("user:alice-private is not allowed"), driver.Permanent, "request rejected"},
		// Not JSON at all.
		{502, "<html>user:alice-private</html>", driver.Transient, "server error"},
		{200, "user:alice-private", driver.Transient, "malformed response"},
	} {
		t.Run(fmt.Sprintf("%d %s", tc.status, tc.reason), func(t *testing.T) {
			f := newFake(t, func(w http.ResponseWriter, _ *http.Request) { reply(w, tc.status, tc.body) })
			err := openfga.NewPermissions(dialFake(t, f, nil), openfga.Mapping{}).Grant(context.Background(), "rc-secret", "alice-private")
			if k, _ := driver.KindOf(err); k != tc.kind {
				t.Fatalf("got %v, want kind %v", err, tc.kind)
			}
			text := err.Error()
			for _, want := range []string{"Grant", tc.reason} {
				if !strings.Contains(text, want) {
					t.Errorf("%q does not name %q", text, want)
				}
			}
			if tc.status != 200 && !strings.Contains(text, fmt.Sprintf("status %d", tc.status)) {
				t.Errorf("%q does not name the status", text)
			}
			for _, secret := range []string{fakeToken, "alice-private", "rc-secret", f.URL, "127.0.0.1"} {
				if strings.Contains(text, secret) {
					t.Errorf("%q reveals %q", text, secret)
				}
			}
		})
	}
}

// Writing an existing tuple and deleting a missing one are done already;
// OpenFGA says so with write_failed_due_to_invalid_input and nothing else
// does. Any other refusal of a write is an error.
func TestWritesAreIdempotent(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		status int
		code   string
		ok     bool
	}{
		{400, "write_failed_due_to_invalid_input", true},
		{400, "validation_error", false},
		{400, "invalid_write_input", false},
		{409, "write_failed_due_to_invalid_input", false}, // the right code with the wrong status is not OpenFGA's answer
		{500, "write_failed_due_to_invalid_input", false},
	} {
		t.Run(fmt.Sprintf("%d %s", tc.status, tc.code), func(t *testing.T) {
			f := newFake(t, func(w http.ResponseWriter, _ *http.Request) {
				reply(w, tc.status, fmt.Sprintf(`{"code":%q,"message":"cannot write a tuple which already exists"}`, tc.code))
			})
			p := openfga.NewPermissions(dialFake(t, f, nil), openfga.Mapping{})
			for name, op := range map[string]func() error{
				"Grant":        func() error { return p.Grant(ctx, "rc-1", "alice") },
				"Revoke":       func() error { return p.Revoke(ctx, "rc-1", "alice") },
				"GrantGroup":   func() error { return p.GrantGroup(ctx, "rc-1", "eng") },
				"RevokeGroup":  func() error { return p.RevokeGroup(ctx, "rc-1", "eng") },
				"AddMember":    func() error { return p.AddMember(ctx, "eng", "alice") },
				"RemoveMember": func() error { return p.RemoveMember(ctx, "eng", "alice") },
			} {
				if err := op(); (err == nil) != tc.ok {
					t.Errorf("%s: got %v, want success %v", name, err, tc.ok)
				}
			}
		})
	}
}

// Each operation writes or deletes exactly its one tuple, against the
// pinned model when there is one.
func TestTuplesWritten(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, _ *http.Request) { reply(w, 200, `{}`) })
	m := openfga.Mapping{DocumentType: "doc", GrantRelation: "reader", GroupType: "team", MemberRelation: "in", SubjectType: "person"}
	p := openfga.NewPermissions(dialFake(t, f, func(c *openfga.Config) { c.AuthorizationModelID = fakeModel }), m)
	ctx := context.Background()
	for _, op := range []func() error{
		func() error { return p.Grant(ctx, "rc-1", "alice") },
		func() error { return p.Revoke(ctx, "rc-1", "alice") },
		func() error { return p.GrantGroup(ctx, "rc-2", "eng") },
		func() error { return p.RevokeGroup(ctx, "rc-2", "eng") },
		func() error { return p.AddMember(ctx, "eng", "bob") },
		func() error { return p.RemoveMember(ctx, "eng", "bob") },
	} {
		if err := op(); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{
		"writes person:alice reader doc:rc-1",
		"deletes person:alice reader doc:rc-1",
		"writes team:eng#in reader doc:rc-2",
		"deletes team:eng#in reader doc:rc-2",
		"writes person:bob in team:eng",
		"deletes person:bob in team:eng",
	}
	seen := f.requestsSeen()
	if len(seen) != len(want) {
		t.Fatalf("%d requests, want %d", len(seen), len(want))
	}
	for i, r := range seen {
		if r.Method != http.MethodPost || r.Path != "/stores/"+fakeStore+"/write" {
			t.Errorf("request %d: %s %s", i, r.Method, r.Path)
		}
		if r.Body["authorization_model_id"] != fakeModel {
			t.Errorf("request %d: model %v, want the pinned one", i, r.Body["authorization_model_id"])
		}
		if got := describeWrite(r.Body); got != want[i] {
			t.Errorf("request %d: %q, want %q", i, got, want[i])
		}
	}
}

// describeWrite renders a write body's only tuple as "writes|deletes user relation object".
func describeWrite(body map[string]any) string {
	var out []string
	for _, side := range []string{"writes", "deletes"} {
		part, _ := body[side].(map[string]any)
		keys, _ := part["tuple_keys"].([]any)
		for _, k := range keys {
			tk, _ := k.(map[string]any)
			out = append(out, fmt.Sprintf("%s %v %v %v", side, tk["user"], tk["relation"], tk["object"]))
		}
	}
	return strings.Join(out, "; ")
}

// IDs OpenFGA cannot hold as they are fail before anything is sent, and a
// principal that cannot hold a tuple reads nothing.
func TestInvalidIDsAreRefusedBeforeSending(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, _ *http.Request) { reply(w, 200, `{"objects":[],"allowed":true}`) })
	c := dialFake(t, f, nil)
	p := openfga.NewPermissions(c, openfga.Mapping{})
	a := openfga.NewAuthorizer(c, openfga.Mapping{}, openfga.HigherConsistency)
	ctx := context.Background()
	for _, id := range []string{"", "a b", "a#b", "a:b", "*", "a*", "tab\there", "new\nline", "nbsp\u00a0", "\xff", strings.Repeat("x", 256)} {
		for name, err := range map[string]error{
			"Grant doc":         p.Grant(ctx, id, "alice"),
			"Grant principal":   p.Grant(ctx, "rc-1", id),
			"GrantGroup group":  p.GrantGroup(ctx, "rc-1", id),
			"AddMember group":   p.AddMember(ctx, id, "alice"),
			"RemoveMember user": p.RemoveMember(ctx, "eng", id),
		} {
			if !driver.IsPermanent(err) {
				t.Errorf("%s %q: got %v, want a permanent error", name, id, err)
			}
		}
		if ids, err := a.Readable(ctx, id); err != nil || len(ids) != 0 {
			t.Errorf("Readable(%q) = %v, %v; want nothing", id, ids, err)
		}
		if ids, err := a.Allowed(ctx, "alice", []string{id}); err != nil || len(ids) != 0 {
			t.Errorf("Allowed(alice, %q) = %v, %v; want nothing", id, ids, err)
		}
	}
	if n := f.requests.Load(); n != 0 {
		t.Fatalf("%d requests sent for invalid IDs", n)
	}
	// IDs at the length bound: "document:" and 247 bytes, "user:" and 251.
	if err := p.Grant(ctx, strings.Repeat("x", 256-len("document:")), strings.Repeat("y", 256-len("user:"))); err != nil {
		t.Fatalf("IDs at the length bound: %v", err)
	}
}

// The token travels only to the API, and a redirect is never followed: the
// caller's client is used, its redirect policy overridden.
func TestTokenGoesOnlyToTheAPI(t *testing.T) {
	elsewhere := newFake(t, func(w http.ResponseWriter, _ *http.Request) { reply(w, 200, `{}`) })
	api := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL+r.URL.Path, http.StatusTemporaryRedirect)
	})
	follows := &http.Client{} // follows redirects, as Go's default does
	c := dialFake(t, api, func(c *openfga.Config) { c.HTTPClient = follows })
	err := openfga.NewPermissions(c, openfga.Mapping{}).Grant(context.Background(), "rc-1", "alice")
	if !driver.IsPermanent(err) || !strings.Contains(err.Error(), "redirect") {
		t.Fatalf("got %v, want a permanent error naming the refused redirect", err)
	}
	if n := elsewhere.requests.Load(); n != 0 {
		t.Fatalf("the redirect was followed (%d requests elsewhere)", n)
	}
	seen := api.requestsSeen()
	if len(seen) != 1 || seen[0].Auth != "Bearer "+fakeToken {
		t.Fatalf("the API got %+v, want one request with the bearer token", seen)
	}

	// Without a token no Authorization header is sent at all.
	plain := newFake(t, func(w http.ResponseWriter, _ *http.Request) { reply(w, 200, `{}`) })
	if err := openfga.NewPermissions(dialFake(t, plain, func(c *openfga.Config) { c.Token = "" }), openfga.Mapping{}).
		Grant(context.Background(), "rc-1", "alice"); err != nil {
		t.Fatal(err)
	}
	if got := plain.requestsSeen()[0].Auth; got != "" {
		t.Fatalf("Authorization %q sent without a token", got)
	}
}

// Dial checks the configuration and touches nothing; its errors do not
// echo the URL.
func TestDialValidatesWithoutIO(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, _ *http.Request) { reply(w, 200, `{}`) })
	for _, tc := range []struct {
		name string
		cfg  openfga.Config
	}{
		{"no URL", openfga.Config{StoreID: fakeStore}},
		{"not http", openfga.Config{APIURL: "ftp://127.0.0.1:1", StoreID: fakeStore}},
		{"relative", openfga.Config{APIURL: "/stores", StoreID: fakeStore}},
		{"credentials in URL", openfga.Config{APIURL: "http://admin:hunter2@127.0.0.1:1", StoreID: fakeStore}},
		{"query", openfga.Config{APIURL: "http://127.0.0.1:1/?key=hunter2", StoreID: fakeStore}},
		{"fragment", openfga.Config{APIURL: "http://127.0.0.1:1/#hunter2", StoreID: fakeStore}},
		{"no store", openfga.Config{APIURL: f.URL}},
		{"store ID and name", openfga.Config{APIURL: f.URL, StoreID: fakeStore, StoreName: "canary"}},
		{"store ID not a ULID", openfga.Config{APIURL: f.URL, StoreID: "../../admin"}},
		{"model ID not a ULID", openfga.Config{APIURL: f.URL, StoreID: fakeStore, AuthorizationModelID: "latest"}},
		{"negative timeout", openfga.Config{APIURL: f.URL, StoreID: fakeStore, Timeout: -time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := openfga.Dial(tc.cfg)
			if err == nil {
				t.Fatal("accepted")
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Fatalf("%q echoes the URL", err)
			}
		})
	}
	for _, u := range []string{f.URL, f.URL + "/", "https://fga.example:8443/prefix/"} {
		if _, err := openfga.Dial(openfga.Config{APIURL: u, StoreName: "canary"}); err != nil {
			t.Errorf("Dial(%s): %v", u, err)
		}
	}
	if n := f.requests.Load(); n != 0 {
		t.Fatalf("Dial sent %d requests", n)
	}
}

// A hung server costs one timeout, not more.
func TestCallsAreBoundedByTimeout(t *testing.T) {
	release := make(chan struct{})
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	t.Cleanup(func() { close(release) }) // runs before the server closes
	c := dialFake(t, f, func(c *openfga.Config) {
		c.Timeout = 200 * time.Millisecond
		c.HTTPClient = &http.Client{} // no timeout of its own
	})
	// The caller's own deadline is far off: only the client's timeout ends the call.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	_, err := openfga.NewAuthorizer(c, openfga.Mapping{}, openfga.MinimizeLatency).Readable(ctx, "alice")
	elapsed := time.Since(start)
	if !driver.IsTransient(err) || !strings.Contains(err.Error(), "timeout") {
		t.Fatalf("got %v, want a transient timeout", err)
	}
	if elapsed > 3*time.Second {
		t.Fatalf("the call took %v with a 200ms timeout", elapsed)
	}
}

// A name resolves through every page of ListStores, once.
func TestResolveStorePagesAndRemembers(t *testing.T) {
	const other, canary = "01J000000000000000000000C1", "01J000000000000000000000C2"
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("continuation_token") == "" {
			reply(w, 200, fmt.Sprintf(`{"stores":[{"id":%q,"name":"other"}],"continuation_token":"page2"}`, other))
			return
		}
		reply(w, 200, fmt.Sprintf(`{"stores":[{"id":%q,"name":"canary"}],"continuation_token":""}`, canary))
	})
	c, err := openfga.Dial(openfga.Config{APIURL: f.URL, StoreName: "canary", Token: fakeToken})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		id, err := c.ResolveStore(context.Background())
		if err != nil || id != canary {
			t.Fatalf("ResolveStore = %q, %v; want %s", id, err, canary)
		}
	}
	if n := f.requests.Load(); n != 2 {
		t.Fatalf("%d requests, want 2 (two pages, then remembered)", n)
	}

	// A server whose continuation token never advances is a failure, not a loop.
	stuck := newFake(t, func(w http.ResponseWriter, _ *http.Request) {
		reply(w, 200, `{"stores":[],"continuation_token":"again"}`)
	})
	c, err = openfga.Dial(openfga.Config{APIURL: stuck.URL, StoreName: "canary"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ResolveStore(context.Background()); !driver.IsTransient(err) {
		t.Fatalf("got %v, want a transient error", err)
	}
	if n := stuck.requests.Load(); n != 2 {
		t.Fatalf("%d requests, want 2", n)
	}
}

// Allowed asks about each distinct candidate once.
func TestAllowedChecksEachCandidate(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, _ *http.Request) { reply(w, 200, `{"allowed":true}`) })
	var docs []string
	for i := range 40 {
		docs = append(docs, fmt.Sprintf("rc-%d", i))
	}
	docs = append(docs, "rc-0", "rc-1") // duplicates are asked once
	a := openfga.NewAuthorizer(dialFake(t, f, nil), openfga.Mapping{}, openfga.MinimizeLatency)
	got, err := a.Allowed(context.Background(), "alice", docs)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 40 {
		t.Fatalf("%d allowed, want 40", len(got))
	}
	if n := f.requests.Load(); n != 40 {
		t.Fatalf("%d checks, want 40 (one per distinct candidate)", n)
	}
}

// Allowed has eight checks in flight at once, no more: against a server
// that answers none, the call's timeout ends it with exactly eight open.
func TestAllowedBoundsParallelChecks(t *testing.T) {
	var inFlight, peak atomic.Int64
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		<-r.Context().Done()
	})
	var docs []string
	for i := range 40 {
		docs = append(docs, fmt.Sprintf("rc-%d", i))
	}
	c := dialFake(t, f, func(c *openfga.Config) { c.Timeout = time.Second })
	_, err := openfga.NewAuthorizer(c, openfga.Mapping{}, openfga.MinimizeLatency).Allowed(context.Background(), "alice", docs)
	if !driver.IsTransient(err) {
		t.Fatalf("got %v, want a transient error", err)
	}
	if p := peak.Load(); p != 8 {
		t.Fatalf("%d checks in flight at once, want 8", p)
	}
}

func TestAllowedFailsOnAnyFailedCheck(t *testing.T) {
	check := func(answers map[string]string) *openfga.Authorizer {
		f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
			body, ok := answers[checkedObject(r)]
			if !ok {
				reply(w, 500, `{"code":"internal_error"}`)
				return
			}
			reply(w, 200, body)
		})
		return openfga.NewAuthorizer(dialFake(t, f, nil), openfga.Mapping{}, openfga.HigherConsistency)
	}
	ctx := context.Background()
	a := check(map[string]string{"document:yes": `{"allowed":true}`, "document:no": `{"allowed":false}`})
	got, err := a.Allowed(ctx, "alice", []string{"yes", "no"})
	if _, ok := got["yes"]; err != nil || len(got) != 1 || !ok {
		t.Fatalf("Allowed = %v, %v; want exactly yes", got, err)
	}
	if got, err := a.Allowed(ctx, "alice", []string{"yes", "no", "broken"}); !driver.IsTransient(err) || got != nil {
		t.Fatalf("Allowed with a failing check = %v, %v; want a transient error and no set", got, err)
	}
	// A reply that does not say is not a "no".
	a = check(map[string]string{"document:silent": `{}`})
	if _, err := a.Allowed(ctx, "alice", []string{"silent"}); !driver.IsTransient(err) {
		t.Fatalf("got %v, want a transient error for a reply without an answer", err)
	}
}

// checkedObject is the object a Check request asks about.
func checkedObject(r *http.Request) string {
	var body struct {
		TupleKey struct{ Object string } `json:"tuple_key"`
	}
	_ = json.NewDecoder(r.Body).Decode(&body)
	return body.TupleKey.Object
}

// The SDK records request metrics (labelled with URL and principal) on the
// global meter provider; none may reach it.
func TestNoMetricsReachTheGlobalMeterProvider(t *testing.T) {
	var instruments atomic.Int64
	prev := otel.GetMeterProvider()
	otel.SetMeterProvider(countingProvider{n: &instruments})
	t.Cleanup(func() { otel.SetMeterProvider(prev) })

	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		reply(w, 200, `{"objects":["document:rc-1"],"allowed":true}`)
	})
	c := dialFake(t, f, nil)
	ctx := context.Background()
	if err := openfga.NewPermissions(c, openfga.Mapping{}).Grant(ctx, "rc-1", "alice"); err != nil {
		t.Fatal(err)
	}
	a := openfga.NewAuthorizer(c, openfga.Mapping{}, openfga.MinimizeLatency)
	ids, err := a.Readable(ctx, "alice")
	if _, ok := ids["rc-1"]; err != nil || !ok {
		t.Fatalf("Readable = %v, %v", ids, err)
	}
	if _, err := a.Allowed(ctx, "alice", []string{"rc-1"}); err != nil {
		t.Fatal(err)
	}
	if n := instruments.Load(); n != 0 {
		t.Fatalf("%d metric instruments used on the global meter provider", n)
	}
}

// countingProvider counts the instruments anything creates or records on.
type countingProvider struct {
	noop.MeterProvider
	n *atomic.Int64
}

func (p countingProvider) Meter(string, ...metric.MeterOption) metric.Meter {
	return countingMeter{n: p.n}
}

type countingMeter struct {
	noop.Meter
	n *atomic.Int64
}

func (m countingMeter) Int64Counter(string, ...metric.Int64CounterOption) (metric.Int64Counter, error) {
	m.n.Add(1)
	return noop.Int64Counter{}, nil
}

func (m countingMeter) Float64Histogram(string, ...metric.Float64HistogramOption) (metric.Float64Histogram, error) {
	m.n.Add(1)
	return noop.Float64Histogram{}, nil
}

// A reply past the size bound fails instead of filling memory.
func TestOversizedRepliesFail(t *testing.T) {
	huge := `{"objects":["` + strings.Repeat("x", 9<<20) + `"]}`
	f := newFake(t, func(w http.ResponseWriter, _ *http.Request) { reply(w, 200, huge) })
	_, err := openfga.NewAuthorizer(dialFake(t, f, nil), openfga.Mapping{}, openfga.MinimizeLatency).Readable(context.Background(), "alice")
	if !driver.IsTransient(err) || !strings.Contains(err.Error(), "response too large") {
		t.Fatalf("got %v, want a transient 'response too large'", err)
	}
}
