// Package report builds the evidence behind one CanaryRun or SuiteRun verdict
// and renders it for an auditor: JSON with exact values, Markdown, and a
// self-contained HTML page with inline SVG that needs no network and prints.
//
// The evidence holds what the run persisted and the spec of what it
// references. It never holds a Secret's data: only the names of Secrets a
// spec points at.
package report

import (
	"encoding/json"
	"sort"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

// Kinds of run a report covers.
const (
	KindCanaryRun = "CanaryRun"
	KindSuiteRun  = "SuiteRun"
)

// Evidence is one run's report. Exactly one of Canary and Suite is set.
type Evidence struct {
	// Kind is KindCanaryRun or KindSuiteRun.
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
	// GeneratedAt is when the report read the cluster; referenced objects
	// are shown as they were then.
	GeneratedAt time.Time       `json:"generatedAt"`
	Canary      *CanaryEvidence `json:"canaryRun,omitempty"`
	Suite       *SuiteEvidence  `json:"suiteRun,omitempty"`
}

// Seconds is a duration that marshals as a JSON number of seconds, exact to
// the nanosecond (the shortest decimal that round-trips), so JSON readers
// get the value the run measured, not the rounded one people read.
type Seconds time.Duration

// MarshalJSON writes the duration in seconds.
func (s Seconds) MarshalJSON() ([]byte, error) {
	return []byte(strconv.FormatFloat(time.Duration(s).Seconds(), 'f', -1, 64)), nil
}

// UnmarshalJSON reads seconds back, for tests and tools reading a report.
func (s *Seconds) UnmarshalJSON(b []byte) error {
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	*s = Seconds(time.Duration(f * float64(time.Second)))
	return nil
}

// Duration is the value as a time.Duration.
func (s Seconds) Duration() time.Duration { return time.Duration(s) }

// Referenced is an object a run names, as read when the report was made.
// The run does not snapshot these, so LastWritten says whether they may have
// changed since the run was created.
type Referenced[S any] struct {
	Name string `json:"name"`
	// Found is false when the object no longer exists; Spec is then null.
	Found      bool  `json:"found"`
	Generation int64 `json:"generation,omitempty"`
	// LastWritten is the latest write to the object other than its status
	// (from managedFields, to the second).
	LastWritten *time.Time `json:"lastWritten,omitempty"`
	// ChangedSinceRun is true when LastWritten is after the run was created:
	// the spec shown may differ from the one the run used.
	ChangedSinceRun bool `json:"changedSinceRun"`
	Spec            *S   `json:"spec"`
}

// Condition is a status condition as persisted.
type Condition struct {
	Type               string    `json:"type"`
	Status             string    `json:"status"`
	Reason             string    `json:"reason"`
	Message            string    `json:"message"`
	LastTransitionTime time.Time `json:"lastTransitionTime"`
}

// Event is one persisted timestamp of a run.
type Event struct {
	// Field is where the timestamp is persisted, e.g. status.revokeRequestedTime.
	Field string `json:"field"`
	// Label says in words what happened.
	Label string    `json:"label"`
	Time  time.Time `json:"time"`
	// Offset is Time minus the timeline's origin (the revocation request
	// of a canary run, the start of a suite run); null without an origin.
	Offset *Seconds `json:"offsetSeconds"`
}

// timeline collects events relative to an origin and sorts them by time;
// events at the same instant keep the order they were added in.
type timeline struct {
	origin *time.Time
	events []Event
}

func (tl *timeline) add(field, label string, t *time.Time) {
	if t == nil {
		return
	}
	e := Event{Field: field, Label: label, Time: *t}
	if tl.origin != nil {
		d := Seconds(t.Sub(*tl.origin))
		e.Offset = &d
	}
	tl.events = append(tl.events, e)
}

func (tl *timeline) sorted() []Event {
	out := append([]Event{}, tl.events...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out
}

func conditions(in []metav1.Condition) []Condition {
	out := make([]Condition, 0, len(in))
	for _, c := range in {
		out = append(out, Condition{Type: c.Type, Status: string(c.Status), Reason: c.Reason,
			Message: c.Message, LastTransitionTime: c.LastTransitionTime.UTC()})
	}
	return out
}

// secondsOf converts an optional API duration.
func secondsOf(d *metav1.Duration) *Seconds {
	if d == nil {
		return nil
	}
	s := Seconds(d.Duration)
	return &s
}

// timeOf converts an optional API time to UTC.
func timeOf(t *metav1.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// microTimeOf converts an optional API micro time to UTC.
func microTimeOf(t *metav1.MicroTime) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// lastWritten is the latest non-status write recorded in managedFields.
func lastWritten(meta metav1.ObjectMeta) *time.Time {
	var last *time.Time
	for _, f := range meta.ManagedFields {
		if f.Subresource != "" || f.Time == nil {
			continue
		}
		if t := f.Time.UTC(); last == nil || t.After(*last) {
			last = &t
		}
	}
	return last
}

// reference builds a Referenced from an object read at report time; obj is
// nil when it was not found.
func reference[S any](name string, meta *metav1.ObjectMeta, spec *S, runCreated time.Time) Referenced[S] {
	r := Referenced[S]{Name: name}
	if meta == nil {
		return r
	}
	r.Found, r.Generation, r.Spec = true, meta.Generation, spec
	r.LastWritten = lastWritten(*meta)
	// managedFields keep whole seconds, so a write in the run's own second
	// is not flagged: the flag is a hint, never a claim of no change.
	r.ChangedSinceRun = r.LastWritten != nil && r.LastWritten.After(runCreated)
	return r
}

// Secret names a report may show: which Secret a spec points at, never its data.
type SecretName struct {
	// Use says what the Secret is for.
	Use  string `json:"use"`
	Name string `json:"name"`
	Key  string `json:"key,omitempty"`
}

// corpusSecrets are every Secret the corpus reads (CorpusSpec.SecretRefs).
func corpusSecrets(c *v1alpha1.CorpusSpec) []SecretName {
	if c == nil {
		return nil
	}
	var out []SecretName
	for _, r := range c.SecretRefs() {
		out = append(out, SecretName{Use: r.Use, Name: r.Ref.Name, Key: r.Ref.Key})
	}
	return out
}

func personaSecret(use string, p *v1alpha1.PersonaSpec) []SecretName {
	if p == nil {
		return nil
	}
	refs := p.SecretRefs()
	out := make([]SecretName, 0, len(refs))
	for _, r := range refs {
		u := use
		if len(refs) > 1 { // an OAuth2 persona: say which key is which
			u = use + " (" + r.Use + ")"
		}
		out = append(out, SecretName{Use: u, Name: r.Ref.Name, Key: r.Ref.Key})
	}
	return out
}
