package controllers

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/pgtest"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/objects"
)

// Passwords of the test roles; they must never reach a status.
const (
	pgWriterPassword = "pg-writer-secret"
	pgReaderPassword = "pg-reader-secret"
)

// pgInterval is the runs' probe interval.
const pgInterval = 200 * time.Millisecond

// startPostgres runs a primary with a writer role (creates the reference
// schema) and a reader role that row-level security filters, and a
// streaming standby applying WAL applyDelay after commit. It returns the
// writer's DSN on the primary and the reader's on the standby.
func startPostgres(t *testing.T, applyDelay time.Duration) (primary *pgtest.Server, writerDSN, readerDSN string) {
	t.Helper()
	primary = pgtest.Start(t)
	primary.Exec(t,
		"create role writer login password '"+pgWriterPassword+"'",
		"grant create on database postgres to writer",
		"create role reader login password '"+pgReaderPassword+"'",
		"create role bypasser login bypassrls password 'bypass-secret'",
	)
	standby := primary.Standby(t, applyDelay)
	return primary, primary.DSN("writer", pgWriterPassword), standby.DSN("reader", pgReaderPassword)
}

// postgresFixture creates a Postgres corpus writing to writerDSN and
// reading through readerDSN, and personas alice and mallory. The personas'
// Secrets are never created: a Postgres corpus identifies personas by
// subject and does not read them.
func postgresFixture(t *testing.T, writerDSN, readerDSN string, statements *v1alpha1.PostgresStatements) string {
	t.Helper()
	ns := newNamespace(t)
	createSecret(t, ns, "pg-writer", "dsn", writerDSN)
	createSecret(t, ns, "pg-reader", "dsn", readerDSN)
	c := postgresCorpus(ns, fixtureCorpus, "pg-writer", "pg-reader")
	c.Spec.Driver.Postgres.Statements = statements
	crCreate(t, c)
	for _, name := range []string{"alice", "mallory"} {
		crCreate(t, objects.Persona(ns, name, name, objects.Credential(name+"-never-created", objects.TokenKey)))
	}
	return ns
}

// postgresCorpus is a Postgres corpus managing the reference schema "rag",
// writing with the DSN in Secret writer and reading with the one in
// reader; 5s per call, a health check every 5s, and a request budget
// that never spaces probes out. The builders' corpus speaks HTTP, so this
// one is written out.
func postgresCorpus(ns, name, writer, reader string) *v1alpha1.Corpus {
	return &v1alpha1.Corpus{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.CorpusSpec{
			Driver: v1alpha1.Driver{Type: v1alpha1.DriverPostgres, Timeout: objects.DurationPtr(5 * time.Second),
				Postgres: &v1alpha1.PostgresDriver{
					DSNSecretRef:     objects.SecretKey(writer, "dsn"),
					ReadDSNSecretRef: ptr.To(objects.SecretKey(reader, "dsn")),
					Schema:           "rag", ManageSchema: true,
				}},
			RateLimit:           v1alpha1.RateLimit{RequestsPerSecond: 1000, Burst: 1000},
			HealthCheckInterval: objects.DurationPtr(5 * time.Second),
		},
	}
}

var pgMethods = []v1alpha1.RevocationMethod{v1alpha1.RevokeRemoveGrant, v1alpha1.RevokeRemoveFromGroup, v1alpha1.RevokeDeleteDocument}

// pgRuns runs one canary per revocation method at once and returns them by method.
func pgRuns(t *testing.T, ns string) map[v1alpha1.RevocationMethod]*v1alpha1.CanaryRun {
	t.Helper()
	out := map[v1alpha1.RevocationMethod]*v1alpha1.CanaryRun{}
	runs := map[v1alpha1.RevocationMethod]*v1alpha1.CanaryRun{}
	for i, m := range pgMethods {
		name, group := fmt.Sprintf("run-%d", i), ""
		if m == v1alpha1.RevokeRemoveFromGroup {
			group = "engineering-" + name
		}
		run := methodRun(ns, name, pgInterval, m, group)
		crCreate(t, run)
		runs[m] = run
	}
	// Waited on the test's goroutine: a timeout must stop the test.
	for m, run := range runs {
		out[m] = crWaitDone(t, run)
	}
	return out
}

// pgBounds checks a run was excluded with a closed interval and no
// isolation violation, and returns its search exclusion bounds.
func pgBounds(t *testing.T, run *v1alpha1.CanaryRun) (lower, upper time.Duration) {
	t.Helper()
	if run.Status.Verdict != v1alpha1.VerdictSLOMet {
		t.Fatalf("%s (%s): verdict %s (%s), want SLOMet", run.Name, run.Spec.Revocation.Method, run.Status.Verdict, run.Status.Message)
	}
	if run.Status.IsolationViolations != 0 {
		t.Fatalf("%s: %d isolation violations", run.Name, run.Status.IsolationViolations)
	}
	b := run.Status.Surfaces[0].Bounds
	if b == nil || b.Lower == nil || b.Upper == nil || b.Upper.Duration < b.Lower.Duration {
		t.Fatalf("%s: bounds %+v, want a closed interval", run.Name, b)
	}
	t.Logf("%s: search exclusion [%s, %s], visible after %s", run.Spec.Revocation.Method, b.Lower.Duration, b.Upper.Duration, run.Status.TimeToVisibility.Duration)
	return b.Lower.Duration, b.Upper.Duration
}

// probeSlack is defined with the SpiceDB tests: one probe's duration and
// the interval's jitter on this machine.

// TestPostgresDelayedStandbyLagIsBracketed: personas read from a hot
// standby that applies WAL 3s after the primary commits. For every
// revocation method the measured interval contains the delay, and is no
// wider than the delay plus a probe interval and a probe.
func TestPostgresDelayedStandbyLagIsBracketed(t *testing.T) {
	const delay = 3 * time.Second
	_, writer, reader := startPostgres(t, delay)
	ns := postgresFixture(t, writer, reader, nil)
	waitCorpusReady(t, corpusKey(ns, fixtureCorpus), metav1.ConditionTrue, v1alpha1.ReasonReachable)
	for m, run := range pgRuns(t, ns) {
		lower, upper := pgBounds(t, run)
		if lower > delay+probeSlack || upper < delay || upper > delay+pgInterval+probeSlack {
			t.Errorf("%s: exclusion in [%s, %s] does not bracket the %s apply delay within one interval and a probe", m, lower, upper, delay)
		}
		if v := run.Status.TimeToVisibility; v == nil || v.Duration < delay {
			t.Errorf("%s: visible after %v, sooner than the standby applies the plant (%s)", m, v, delay)
		}
	}
}

// TestPostgresStandbyWithoutDelayExcludesAtOnce: with no apply delay the
// standby's streaming lag is far below a probe interval.
func TestPostgresStandbyWithoutDelayExcludesAtOnce(t *testing.T) {
	_, writer, reader := startPostgres(t, 0)
	ns := postgresFixture(t, writer, reader, nil)
	waitCorpusReady(t, corpusKey(ns, fixtureCorpus), metav1.ConditionTrue, v1alpha1.ReasonReachable)
	for m, run := range pgRuns(t, ns) {
		if _, upper := pgBounds(t, run); upper > pgInterval+probeSlack {
			t.Errorf("%s: upper bound %s exceeds one probe interval plus a probe", m, upper)
		}
	}
}

// TestPostgresCorpusRefusals: a reader role with BYPASSRLS is refused with
// ReaderBypassesRLS, and an override statement that does not prepare with
// StatementInvalid naming it; no password reaches the condition.
func TestPostgresCorpusRefusals(t *testing.T) {
	primary, writer, _ := startPostgres(t, 0)
	ns := postgresFixture(t, writer, primary.DSN("bypasser", "bypass-secret"), nil)
	got := waitCorpusReady(t, corpusKey(ns, fixtureCorpus), metav1.ConditionFalse, v1alpha1.ReasonReaderBypassesRLS)
	assertNoPassword(t, got)

	ns = postgresFixture(t, writer, primary.DSN("reader", pgReaderPassword), &v1alpha1.PostgresStatements{
		Revoke: "delete from rag.no_such_acl where document_id = $1 and principal = $2",
	})
	got = waitCorpusReady(t, corpusKey(ns, fixtureCorpus), metav1.ConditionFalse, v1alpha1.ReasonStatementInvalid)
	if msg := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady).Message; !strings.Contains(msg, "spec.driver.postgres.statements.revoke") {
		t.Fatalf("message %q does not name the statement", msg)
	}
	assertNoPassword(t, got)
}

func assertNoPassword(t *testing.T, c *v1alpha1.Corpus) {
	t.Helper()
	for _, cond := range c.Status.Conditions {
		for _, pw := range []string{pgWriterPassword, pgReaderPassword, "bypass-secret"} {
			if strings.Contains(cond.Message, pw) {
				t.Fatalf("condition %s carries a password: %q", cond.Type, cond.Message)
			}
		}
	}
}
