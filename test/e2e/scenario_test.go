package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/objects"
	"github.com/ragcanary/ragcanary/internal/driver"
	httpdriver "github.com/ragcanary/ragcanary/internal/driver/http"
)

const scenarioNamespace = "e2e"

// scenario creates, once, a canary and a suite against ragtarget and waits
// until both have finished a run, so the operator has emitted every family
// of metrics the alerts and dashboard use.
var scenario struct {
	once sync.Once
	err  error
}

func ensureScenario(t *testing.T) {
	t.Helper()
	scenario.once.Do(func() { scenario.err = runScenario() })
	if scenario.err != nil {
		t.Fatalf("scenario: %v", scenario.err)
	}
}

func runScenario() error {
	ctx := context.Background()
	if err := plantSuiteDocuments(ctx); err != nil {
		return err
	}
	if err := startTailsTarget(ctx); err != nil {
		return err
	}
	if err := startStreamTarget(ctx); err != nil {
		return err
	}
	if err := waitScraping(); err != nil {
		return err
	}
	for _, obj := range append(scenarioObjects(), tailsObjects()...) {
		if err := env.client.Create(ctx, obj); err != nil {
			return fmt.Errorf("creating %T %s: %w", obj, obj.GetName(), err)
		}
	}
	if err := waitFor(4*time.Minute, time.Second/2, "a finished canary run", func() (bool, error) {
		var c v1alpha1.RevocationCanary
		err := env.client.Get(ctx, client.ObjectKey{Namespace: scenarioNamespace, Name: "alice-grant"}, &c)
		return err == nil && c.Status.LastRun != nil && c.Status.LastRun.Verdict != "", err
	}); err != nil {
		return err
	}
	if err := waitFor(2*time.Minute, time.Second/2, "a finished suite run", func() (bool, error) {
		var s v1alpha1.EvalSuite
		err := env.client.Get(ctx, client.ObjectKey{Namespace: scenarioNamespace, Name: "isolation"}, &s)
		return err == nil && s.Status.LastRun != nil, err
	}); err != nil {
		return err
	}
	// The censored and the content-freshness runs: every family of the
	// tails panels and alerts has a series.
	return waitTailsScenario(ctx)
}

// plantSuiteDocuments writes the suite's evidence into ragtarget's source:
// alice may read both documents, mallory only the handbook.
func plantSuiteDocuments(ctx context.Context) error {
	d, err := httpdriver.New(httpdriver.Config{BaseURL: env.ragtargetURL, SourceToken: sourceToken, Timeout: 5 * time.Second})
	if err != nil {
		return err
	}
	docs := []driver.Document{
		{ID: "handbook", Title: "Employee handbook", Body: "The handbook explains holidays, expenses and the vpn setup for every employee.", Principals: []string{"alice@example.com", "mallory@example.com"}},
		{ID: "salaries", Title: "Salary bands", Body: "Confidential salary bands for engineering levels and their yearly review.", Principals: []string{"alice@example.com"}},
	}
	for _, doc := range docs {
		if err := d.CreateDocument(ctx, doc); err != nil {
			return fmt.Errorf("planting %s: %w", doc.ID, err)
		}
	}
	return nil
}

func scenarioObjects() []client.Object {
	secret := func(name, value string) *corev1.Secret {
		return objects.CredentialSecret(scenarioNamespace, name, value)
	}
	persona := func(name, subject string) *v1alpha1.Persona { return tokenPersona(scenarioNamespace, name, subject) }
	ref := func(n string) v1alpha1.LocalObjectReference { return v1alpha1.LocalObjectReference{Name: n} }
	dur := func(d time.Duration) metav1.Duration { return metav1.Duration{Duration: d} }
	every := dur(20 * time.Second)
	return []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: scenarioNamespace}},
		secret("source", sourceToken), secret("alice", aliceToken), secret("mallory", malloryToken),
		scenarioCorpus(scenarioNamespace, "kb", env.ragtargetURL),
		persona("alice", "alice@example.com"), persona("mallory", "mallory@example.com"),
		&v1alpha1.RevocationCanary{
			ObjectMeta: metav1.ObjectMeta{Namespace: scenarioNamespace, Name: "alice-grant",
				Annotations: map[string]string{v1alpha1.AnnotationRunNow: "first"}},
			Spec: v1alpha1.RevocationCanarySpec{
				Scheduling: v1alpha1.Scheduling{Schedule: v1alpha1.Schedule{Every: &every}},
				CanarySpec: v1alpha1.CanarySpec{
					CorpusRef: ref("kb"), PersonaRef: ref("alice"),
					ControlPersonaRefs: []v1alpha1.LocalObjectReference{ref("mallory")},
					Probing: v1alpha1.Probing{
						Interval: dur(300 * time.Millisecond), Confirmations: 2,
						VisibilityTimeout: dur(30 * time.Second), ExclusionTimeout: dur(60 * time.Second), MaxInterval: dur(10 * time.Minute),
						Surfaces: []v1alpha1.Surface{v1alpha1.SurfaceSearch, v1alpha1.SurfaceAnswer},
					},
				},
			},
		},
		// A sentinel canary whose first run is an hour away: ready, so its
		// sighting series exist at zero for the alert and the panel, and it
		// plants nothing the other tests would see. Its own exclusionSLO
		// gives the scenario a canary_surface_slo_seconds series (only a
		// canary that sets one has it) for the queries that read it.
		&v1alpha1.RevocationCanary{
			ObjectMeta: metav1.ObjectMeta{Namespace: scenarioNamespace, Name: "sentinel"},
			Spec: v1alpha1.RevocationCanarySpec{
				Scheduling: v1alpha1.Scheduling{Schedule: v1alpha1.Schedule{Every: &metav1.Duration{Duration: time.Hour}}},
				CanarySpec: v1alpha1.CanarySpec{
					CorpusRef: ref("kb"), PersonaRef: ref("alice"), ExclusionSLO: &metav1.Duration{Duration: 45 * time.Second},
					ControlPersonaRefs: []v1alpha1.LocalObjectReference{ref("mallory")},
					Sentinel:           &v1alpha1.Sentinel{Lifetime: dur(time.Hour)},
					Probing: v1alpha1.Probing{
						Interval: dur(time.Second), Confirmations: 2,
						VisibilityTimeout: dur(30 * time.Second), ExclusionTimeout: dur(60 * time.Second), MaxInterval: dur(10 * time.Minute),
						Surfaces: []v1alpha1.Surface{v1alpha1.SurfaceSearch},
					},
				},
			},
		},
		// The group path: a RemoveFromGroup canary of a corpus that takes
		// its groups from a directory. This suite runs no LDAP server and
		// the manager's allowlist admits none, so the corpus is never Ready
		// and the canary never runs; its spec alone gives the scenario the
		// ragcanary_canary_revocation_path_info series the exclusion alerts
		// and the path panel join, for the queries that read it.
		directoryCorpus(),
		&v1alpha1.RevocationCanary{
			ObjectMeta: metav1.ObjectMeta{Namespace: scenarioNamespace, Name: "group-path"},
			Spec: v1alpha1.RevocationCanarySpec{
				Scheduling: v1alpha1.Scheduling{Schedule: v1alpha1.Schedule{Every: &metav1.Duration{Duration: time.Hour}}},
				CanarySpec: v1alpha1.CanarySpec{
					CorpusRef: ref("kb-directory"), PersonaRef: ref("alice"),
					Revocation: v1alpha1.Revocation{Method: v1alpha1.RevokeRemoveFromGroup, Group: "staff"},
					Probing: v1alpha1.Probing{
						Interval: dur(time.Second), Confirmations: 2,
						VisibilityTimeout: dur(30 * time.Second), ExclusionTimeout: dur(60 * time.Second), MaxInterval: dur(10 * time.Minute),
					},
				},
			},
		},
		&v1alpha1.EvalSuite{
			ObjectMeta: metav1.ObjectMeta{Namespace: scenarioNamespace, Name: "isolation",
				Annotations: map[string]string{v1alpha1.AnnotationRunNow: "first"}},
			Spec: v1alpha1.EvalSuiteSpec{
				CorpusRef: ref("kb"), K: 5,
				Cases: []v1alpha1.EvalCase{{
					ID: "salaries", Question: "salary bands engineering", AskAnswer: true,
					Expectations: []v1alpha1.Expectation{
						{Persona: "alice", RelevantIDs: []string{"salaries#0"}, AllowedIDs: []string{"salaries#0", "handbook#0"}},
						{Persona: "mallory", AllowedIDs: []string{"handbook#0"}, MustAbstain: true},
					},
				}},
			},
		},
	}
}

// directoryCorpus is kb with an LDAP directory as its group authority, at
// a loopback port nothing listens on (and the allowlist refuses).
func directoryCorpus() *v1alpha1.Corpus {
	c := scenarioCorpus(scenarioNamespace, "kb-directory", env.ragtargetURL)
	c.Spec.Directory = &v1alpha1.Directory{Type: v1alpha1.DirectoryLDAP, LDAP: &v1alpha1.LDAPDirectory{
		URL: "ldap://127.0.0.1:1", BindDN: "cn=admin,dc=example,dc=org",
		BindPasswordSecretRef: v1alpha1.SecretKeyReference{Name: "source", Key: objects.TokenKey},
		GroupDN:               "cn={group},ou=groups,dc=example,dc=org", MemberAttribute: v1alpha1.LDAPMember,
		UserDN: "uid={subject},ou=people,dc=example,dc=org",
	}}
	return c
}

// waitFor checks cond every interval until it holds, and fails once
// timeout has passed. It is for the suite's setup (TestMain), which has no
// testing.TB to fail; tests wait with testutil.Eventually.
func waitFor(timeout, interval time.Duration, what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not reached within %s (last error: %v)", what, timeout, err)
		}
		<-tick.C
	}
}
