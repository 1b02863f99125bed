package objects_test

import (
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/objects"
)

// built is one object of each kind, with the options that reach the
// builders' optional durations (a sentinel's lifetime, a fixture's timeout).
func built() []client.Object {
	return []client.Object{
		objects.Corpus("ns", "corpus", "http://127.0.0.1:1"),
		objects.Persona("ns", "alice", "alice@example.com"),
		objects.CanaryRun("ns", "run"),
		objects.RevocationCanary("ns", "canary", time.Hour),
		objects.RevocationCanary("ns", "sentinel", time.Hour, objects.Sentinel(time.Minute)),
		objects.EvalSuite("ns", "suite", []v1alpha1.EvalCase{{ID: "c", Question: "q?",
			Expectations: []v1alpha1.Expectation{{Persona: "alice"}}}}, objects.Fixture(v1alpha1.Fixture{})),
		objects.SuiteRun("ns", "suite-1", "suite"),
	}
}

// A typed client sends a zero metav1.Duration as "0s", so the CRD default
// never applies: every duration a builder leaves reachable must be set.
func TestEveryReachableDurationIsSet(t *testing.T) {
	for _, obj := range built() {
		var zero []string
		walkDurations(reflect.ValueOf(obj).Elem().FieldByName("Spec"), "spec", &zero)
		if len(zero) > 0 {
			t.Errorf("%T %s leaves zero durations: %v", obj, obj.GetName(), zero)
		}
	}
}

var durationType = reflect.TypeFor[metav1.Duration]()

func walkDurations(v reflect.Value, path string, zero *[]string) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			walkDurations(v.Elem(), path, zero)
		}
	case reflect.Struct:
		if v.Type() == durationType {
			if v.Interface().(metav1.Duration).Duration <= 0 {
				*zero = append(*zero, path)
			}
			return
		}
		for i := range v.NumField() {
			walkDurations(v.Field(i), path+"."+v.Type().Field(i).Name, zero)
		}
	case reflect.Slice:
		for i := range v.Len() {
			walkDurations(v.Index(i), path, zero)
		}
	}
}

// The canary defaults satisfy the CRD's probing rules, so a created run is
// not rejected: exclusion can be confirmed, and visibility observed.
func TestCanaryDefaultsPassProbingRules(t *testing.T) {
	p := objects.CanarySpec().Probing
	if int64(p.Confirmations)*p.Interval.Milliseconds() >= p.ExclusionTimeout.Milliseconds() {
		t.Errorf("confirmations %d × interval %s must be below exclusionTimeout %s", p.Confirmations, p.Interval.Duration, p.ExclusionTimeout.Duration)
	}
	if p.Interval.Duration >= p.VisibilityTimeout.Duration {
		t.Errorf("interval %s must be below visibilityTimeout %s", p.Interval.Duration, p.VisibilityTimeout.Duration)
	}
	if p.MaxInterval.Duration < p.Interval.Duration {
		t.Errorf("maxInterval %s must not be below interval %s", p.MaxInterval.Duration, p.Interval.Duration)
	}
}

// Options reach the fields they name.
func TestCanaryOptions(t *testing.T) {
	run := objects.CanaryRun("ns", "run", objects.OnCorpus("kb"), objects.SharedWith("bob"), objects.Controls(),
		objects.Revoke(v1alpha1.RevokeRemoveFromGroup, "eng"), objects.Probe(v1alpha1.SurfaceAnswer),
		objects.Every(time.Second, 3), objects.Timeouts(time.Minute, 2*time.Minute), objects.SLO(time.Minute))
	s := run.Spec.CanarySpec
	got := []any{s.CorpusRef.Name, s.PersonaRef.Name, len(s.ControlPersonaRefs), s.Revocation.Method, s.Revocation.Group,
		s.Probing.Surfaces[0], s.Probing.Interval.Duration, s.Probing.Confirmations, s.Probing.VisibilityTimeout.Duration,
		s.Probing.ExclusionTimeout.Duration, s.ExclusionSLO.Duration}
	want := []any{"kb", "bob", 0, v1alpha1.RevokeRemoveFromGroup, "eng",
		v1alpha1.SurfaceAnswer, time.Second, int32(3), time.Minute, 2 * time.Minute, time.Minute}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("spec fields = %v, want %v", got, want)
	}
}

// SLO(0) leaves the judging to the corpus's SLO.
func TestZeroSLOSetsNone(t *testing.T) {
	if s := objects.CanarySpec(objects.SLO(0)); s.ExclusionSLO != nil {
		t.Fatalf("exclusionSLO = %s, want none", s.ExclusionSLO.Duration)
	}
}

// Adaptive sets the schedule, its precision and its longest gap together.
func TestAdaptiveOption(t *testing.T) {
	p := objects.CanarySpec(objects.Adaptive("5%", time.Minute)).Probing
	if p.Schedule != v1alpha1.ScheduleAdaptive || p.Precision != "5%" || p.MaxInterval.Duration != time.Minute {
		t.Fatalf("probing = %s %q %s, want Adaptive 5%% 1m", p.Schedule, p.Precision, p.MaxInterval.Duration)
	}
}

// The target door reads only Secrets labelled as credentials; a persona's
// default credential is "<name>-cred", key TokenKey.
func TestCredentialsMatchTheirReaders(t *testing.T) {
	s := objects.CredentialSecret("ns", "alice-cred", "v")
	if s.Labels[v1alpha1.LabelCredential] != v1alpha1.LabelCredentialValue || string(s.Data[objects.TokenKey]) != "v" {
		t.Fatalf("secret labels %v data %v, want the credential label and the value under %q", s.Labels, s.Data, objects.TokenKey)
	}
	ref := objects.Persona("ns", "alice", "alice@example.com").Spec.CredentialSecretRef
	if ref.Name != s.Name || ref.Key != objects.TokenKey {
		t.Fatalf("persona credential %+v, want %s/%s", ref, s.Name, objects.TokenKey)
	}
}

// A negative bound is unknown: left unset, never a zero that reads as
// "excluded at once".
func TestBoundsLeaveNegativeUnset(t *testing.T) {
	b := objects.Bounds(-1, time.Second)
	if b.Lower != nil || b.Upper == nil || b.Upper.Duration != time.Second {
		t.Fatalf("bounds %+v, want no lower and a 1s upper", b)
	}
}

// Corpus options reach the fields they name.
func TestCorpusOptions(t *testing.T) {
	c := objects.Corpus("ns", "c", "http://127.0.0.1:1", objects.SourceSecret("src", "key"), objects.CallTimeout(time.Second),
		objects.ExclusionSLO(time.Minute), objects.RateLimit(200, 300), objects.HealthCheck(5*time.Second))
	s := c.Spec
	got := []any{s.Driver.HTTP.CredentialSecretRef, s.Driver.Timeout.Duration, s.Freshness.ExclusionSLO.Duration,
		s.RateLimit.RequestsPerSecond, s.RateLimit.Burst, s.HealthCheckInterval.Duration}
	want := []any{objects.SecretKey("src", "key"), time.Second, time.Minute, int32(200), int32(300), 5 * time.Second}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("spec fields = %v, want %v", got, want)
	}
}
