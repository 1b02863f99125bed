package controllers

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/spicedbtest"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/objects"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/targettest"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
	"github.com/ragcanary/ragcanary/internal/spicedb"
)

// quantization is SpiceDB's revision quantization in these tests: with
// minimize_latency, a lookup may read a revision up to this old.
const quantization = 5 * time.Second

// spicedbInterval is the runs' probe interval.
const spicedbInterval = 200 * time.Millisecond

// startSpiceDBTarget runs SpiceDB and a ragtarget that asks it at query
// time with consistency, and returns the target URL and the engine.
func startSpiceDBTarget(t *testing.T, consistency spicedb.Consistency) (string, *spicedbtest.Server) {
	t.Helper()
	db := spicedbtest.Start(t, spicedbtest.Options{Quantization: quantization, NoExtraStaleness: true})
	url := targettest.Start(t, fixtureConfig(ragtarget.Config{
		Tokens:              engineTokens,
		ContentSyncInterval: 100 * time.Millisecond,
		ACLSyncInterval:     targettest.Manual, // unused: SpiceDB decides
		Authz:               &ragtarget.SpiceDBAuthz{Endpoint: db.Endpoint, Key: db.Key, Consistency: consistency},
	})).URL
	return url, db
}

// engineTokens map the personas' tokens to the subjects an authorization
// engine holds tuples for.
var engineTokens = map[string]string{testAliceToken: "alice", testMalloryToken: "mallory"}

// engineFixture creates, in a fresh namespace, the corpus "target" at url
// whose permissions live in an authorization engine (perms), the engine's
// key in Secret keySecret, and personas alice and mallory, known to the
// engine by those names.
func engineFixture(t *testing.T, url string, perms v1alpha1.Permissions, keySecret, key string) string {
	t.Helper()
	ns := newNamespace(t)
	createSecret(t, ns, "source", "token", testSourceToken)
	createSecret(t, ns, "alice-cred", "token", testAliceToken)
	createSecret(t, ns, "mallory-cred", "token", testMalloryToken)
	createSecret(t, ns, keySecret, "token", key)
	// Ten runs probing every 200ms as two personas must not queue behind
	// the default limit: that would space their probes out.
	crCreate(t, objects.Corpus(ns, fixtureCorpus, url, objects.RateLimit(1000, 1000), objects.Permissions(perms)))
	crCreate(t, objects.Persona(ns, "alice", "alice"))
	crCreate(t, objects.Persona(ns, "mallory", "mallory"))
	return ns
}

// spicedbFixture creates a corpus whose permissions live in db, and personas
// alice (in group engineering) and mallory.
func spicedbFixture(t *testing.T, url string, db *spicedbtest.Server) string {
	t.Helper()
	return engineFixture(t, url, v1alpha1.Permissions{Type: v1alpha1.PermissionsSpiceDB, SpiceDB: &v1alpha1.SpiceDBPermissions{
		Endpoint: db.Endpoint, Insecure: true, PresharedKeySecretRef: objects.SecretKey("spicedb-key", objects.TokenKey)}},
		"spicedb-key", db.Key)
}

// methodRun is a run named name on the fixture's corpus revoking by method
// (from group, for RemoveFromGroup), probing search every interval with
// two confirmations, visible and excluded within 30s each.
func methodRun(ns, name string, interval time.Duration, method v1alpha1.RevocationMethod, group string) *v1alpha1.CanaryRun {
	return objects.CanaryRun(ns, name, onTarget, objects.Revoke(method, group), objects.Every(interval, 2),
		objects.Timeouts(30*time.Second, 30*time.Second))
}

// spicedbRuns creates n runs revoking by method, probing search every
// spicedbInterval, and waits for all of them.
func spicedbRuns(t *testing.T, ns string, n int, method v1alpha1.RevocationMethod) []*v1alpha1.CanaryRun {
	t.Helper()
	runs := make([]*v1alpha1.CanaryRun, n)
	for i := range runs {
		group := ""
		if method == v1alpha1.RevokeRemoveFromGroup {
			group = fmt.Sprintf("engineering-%d", i)
		}
		run := methodRun(ns, fmt.Sprintf("run-%d", i), spicedbInterval, method, group)
		crCreate(t, run)
		runs[i] = run
	}
	// Waited one after the other on the test's goroutine: the runs proceed
	// together anyway, and a timeout must stop the test, not a goroutine.
	out := make([]*v1alpha1.CanaryRun, n)
	for i, run := range runs {
		out[i] = crWaitDone(t, run)
	}
	return out
}

// upperBounds checks every run was excluded and returns its search upper
// bounds, sorted.
func upperBounds(t *testing.T, runs []*v1alpha1.CanaryRun) []time.Duration {
	t.Helper()
	_, uppers := exclusionBounds(t, runs)
	return uppers
}

// exclusionBounds checks every run was excluded and returns its search
// lower and upper bounds, each sorted.
func exclusionBounds(t *testing.T, runs []*v1alpha1.CanaryRun) (lowers, uppers []time.Duration) {
	t.Helper()
	for _, run := range runs {
		if run.Status.Verdict != v1alpha1.VerdictSLOMet {
			t.Fatalf("%s: verdict %s (%s), want SLOMet", run.Name, run.Status.Verdict, run.Status.Message)
		}
		b := run.Status.Surfaces[0].Bounds
		if b == nil || b.Lower == nil || b.Upper == nil || b.Lower.Duration < 0 || b.Upper.Duration < b.Lower.Duration {
			t.Fatalf("%s: bounds %+v, want a closed interval", run.Name, b)
		}
		lowers = append(lowers, b.Lower.Duration)
		uppers = append(uppers, b.Upper.Duration)
		t.Logf("%s: search exclusion [%s, %s], visible after %s", run.Name, b.Lower.Duration, b.Upper.Duration, run.Status.TimeToVisibility.Duration)
	}
	slices.Sort(lowers)
	slices.Sort(uppers)
	t.Logf("search exclusion lower bounds: %v; upper bounds: %v", lowers, uppers)
	return lowers, uppers
}

// probeSlack bounds one probe's duration and the interval's jitter on this
// machine: the probe after the lag ends within it.
const probeSlack = time.Second

// TestSpiceDBMinimizeLatencyLagIsMeasured: with minimize_latency, SpiceDB
// reads at a revision quantized to 5s, so a deleted relationship may still
// allow access for up to that long. Ten canaries bracket it.
func TestSpiceDBMinimizeLatencyLagIsMeasured(t *testing.T) {
	url, db := startSpiceDBTarget(t, spicedb.MinimizeLatency)
	ns := spicedbFixture(t, url, db)
	waitCorpusReady(t, corpusKey(ns, fixtureCorpus), metav1.ConditionTrue, v1alpha1.ReasonReachable)
	waitQuantizing(t, db)
	uppers := upperBounds(t, spicedbRuns(t, ns, 10, v1alpha1.RevokeRemoveGrant))
	if limit := quantization + spicedbInterval + probeSlack; uppers[len(uppers)-1] > limit {
		t.Fatalf("an upper bound %s exceeds quantization + interval + probe (%s)", uppers[len(uppers)-1], limit)
	}
	// The lag is real: the engine's caching kept revoked access for a while
	// in some runs, not zero by accident of timing.
	if uppers[len(uppers)-1] < time.Second {
		t.Fatalf("every upper bound is below 1s (%v): the quantization lag was not observed", uppers)
	}
}

// waitQuantizing waits until minimize_latency reads are really quantized. A
// fresh in-memory SpiceDB serves its head revision while the quantized one
// would fall before its oldest snapshot (its first quantization interval),
// so runs started at once would see no lag at all. Quantizing is observed,
// not waited for: a relationship written now is not yet visible to a
// minimize_latency lookup.
func waitQuantizing(t *testing.T, db *spicedbtest.Server) {
	t.Helper()
	client, err := spicedb.Dial(db.Endpoint, db.Key, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	perms := spicedb.NewPermissions(client, spicedb.DefaultMapping, 5*time.Second)
	stale := spicedb.NewAuthorizer(client, spicedb.DefaultMapping, spicedb.MinimizeLatency, 5*time.Second)
	n := 0
	testutil.Eventually(t, eventuallyTimeout, "SpiceDB serving quantized revisions", func() error {
		n++
		doc := fmt.Sprintf("warmup-%d", n)
		if err := perms.Grant(ctx, doc, "warmup"); err != nil {
			return err
		}
		ids, err := stale.Readable(ctx, "warmup")
		if err != nil {
			return err
		}
		if _, seen := ids[doc]; seen {
			return fmt.Errorf("a relationship written just now is already visible: SpiceDB still serves its head revision")
		}
		return nil
	})
}

// TestSpiceDBFullyConsistentExcludesAtOnce: with fully_consistent lookups a
// revocation is effective at the next probe.
func TestSpiceDBFullyConsistentExcludesAtOnce(t *testing.T) {
	url, db := startSpiceDBTarget(t, spicedb.FullyConsistent)
	ns := spicedbFixture(t, url, db)
	uppers := upperBounds(t, spicedbRuns(t, ns, 3, v1alpha1.RevokeRemoveGrant))
	if limit := spicedbInterval + probeSlack; uppers[len(uppers)-1] > limit {
		t.Fatalf("upper bound %s exceeds one probe interval plus a probe (%s)", uppers[len(uppers)-1], limit)
	}
}

// TestSpiceDBRemoveFromGroup: membership through SpiceDB; the run adds
// alice to its group, grants the group, revokes by removing her, and leaves
// no relationship behind.
func TestSpiceDBRemoveFromGroup(t *testing.T) {
	url, db := startSpiceDBTarget(t, spicedb.FullyConsistent)
	ns := spicedbFixture(t, url, db)
	runs := spicedbRuns(t, ns, 2, v1alpha1.RevokeRemoveFromGroup)
	upperBounds(t, runs)
	client, err := spicedb.Dial(db.Endpoint, db.Key, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	authz := spicedb.NewAuthorizer(client, spicedb.DefaultMapping, spicedb.FullyConsistent, 5*time.Second)
	readable, err := authz.Readable(context.Background(), "alice")
	if err != nil {
		t.Fatal(err)
	}
	if len(readable) != 0 {
		t.Fatalf("alice can still read %v after every run cleaned up", readable)
	}
}

// TestSpiceDBSchemaMismatchAndUnlabelledKey: the Corpus names what to fix.
func TestSpiceDBSchemaMismatchAndUnlabelledKey(t *testing.T) {
	db := spicedbtest.Start(t, spicedbtest.Options{})
	url := targettest.Start(t, fixtureConfig(ragtarget.Config{})).URL
	ns := spicedbFixture(t, url, db)
	corpus := corpusKey(ns, fixtureCorpus)
	// No schema in SpiceDB: nothing ragcanary could write would mean anything.
	got := waitCorpusReady(t, corpus, metav1.ConditionFalse, v1alpha1.ReasonPermissionsSchemaMismatch)
	t.Logf("condition: %v", got.Status.Conditions)
	// An unlabelled key Secret is never read.
	var key corev1.Secret
	if err := k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "spicedb-key"}, &key); err != nil {
		t.Fatal(err)
	}
	key.Labels = nil
	if err := k8sClient.Update(context.Background(), &key); err != nil {
		t.Fatal(err)
	}
	waitCorpusReady(t, corpus, metav1.ConditionFalse, "SecretNotLabeled")
}
