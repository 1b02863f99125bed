package suite

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/scoring"
)

// Plan is a suite frozen for one run: the resolved cases (one per case ×
// persona, fixture-derived evidence filled in), the fixture, the personas'
// identities, k and the gates. A run executes its plan, never the live
// suite, so editing the suite mid-run changes nothing about that run; the
// plan is stored before anything is planted or asked.
type Plan struct {
	// Suite and Corpus are namespace/name and name, for humans and metrics.
	Suite      string `json:"suite"`
	Generation int64  `json:"generation"`
	Corpus     string `json:"corpus"`
	// At is when the plan was frozen: cases without asOf derive fixture
	// evidence at this instant.
	At          time.Time                 `json:"at"`
	K           int                       `json:"k"`
	Parallelism int                       `json:"parallelism"`
	Options     scoring.EvidenceOptions   `json:"options"`
	Jobs        []Job                     `json:"jobs"`
	Personas    []scoring.PersonaSnapshot `json:"personas"`
	Fixture     *FixtureSpec              `json:"fixture,omitempty"`
}

// Job is one case asked as one persona.
type Job struct {
	// Case is the scoring case; Case.ID is CaseKey(SuiteCase, persona).
	Case      scoring.CaseV2 `json:"case"`
	SuiteCase string         `json:"suite_case"`
	AskAnswer bool           `json:"ask_answer,omitempty"`
	// V1 marks a v1 expectation, scored exactly as v1 cases always were.
	V1 bool `json:"v1,omitempty"`
}

// FixtureSpec is the fixture as frozen in a plan.
type FixtureSpec struct {
	Documents         []v1alpha1.FixtureDocument `json:"documents"`
	Groups            []v1alpha1.FixtureGroup    `json:"groups,omitempty"`
	VisibilityTimeout metav1.Duration            `json:"visibilityTimeout"`
}

// LoadFixture rebuilds the plan's fixture; nil without one.
func (p *Plan) LoadFixture() (*Fixture, error) {
	if p.Fixture == nil {
		return nil, nil
	}
	origins := make([]string, len(p.Fixture.Documents))
	for i := range origins {
		origins[i] = "the run's frozen fixture"
	}
	return BuildFixture(p.Fixture.Documents, origins, p.Fixture.Groups, p.Fixture.VisibilityTimeout.Duration)
}

// Cases are the plan's scoring cases in job order.
func (p *Plan) Cases() []scoring.CaseV2 {
	out := make([]scoring.CaseV2, len(p.Jobs))
	for i, j := range p.Jobs {
		out[i] = j.Case
	}
	return out
}

// CasesHash is the content hash of the plan's cases, as evidence records it.
func (p *Plan) CasesHash() string { return scoring.CasesHash(p.Cases()) }

// Freeze turns a resolved suite into a plan at time at. Fixture cases get
// their allowed and superseded evidence from the fixture's policy; the
// result is validated by the scoring engine's own case validation, so a
// plan that freezes is a plan the engine scores. A failure is an
// InvalidCases *Problem naming the case, persona and field.
func Freeze(def *Definition, s *v1alpha1.EvalSuite, g Gates, k int, at time.Time) (*Plan, error) {
	if k <= 0 {
		k = int(s.Spec.K)
	}
	if k <= 0 {
		k = scoring.DefaultK
	}
	p := &Plan{
		Suite: s.Namespace + "/" + s.Name, Generation: s.Generation, Corpus: def.Corpus.Name,
		At: at.UTC(), K: k, Parallelism: int(max(s.Spec.Parallelism, 1)),
		Options: scoring.FreezeOptions(g.Options(k)),
	}
	for _, name := range slices.Sorted(mapKeys(def.Personas)) {
		ps := def.Personas[name].Spec
		p.Personas = append(p.Personas, scoring.PersonaSnapshot{Name: name, Subject: ps.Subject, Tenant: ps.Tenant,
			Groups: slices.Clone(ps.Groups)})
	}
	if f := def.Fixture; f != nil {
		spec := &FixtureSpec{Groups: f.Groups, VisibilityTimeout: metav1.Duration{Duration: f.VisibilityTimeout}}
		for _, d := range f.Documents {
			spec.Documents = append(spec.Documents, d.FixtureDocument)
		}
		p.Fixture = spec
	}
	var msgs []string
	for _, c := range def.Cases {
		for _, e := range c.Expectations {
			job, err := freezeJob(def, c, e, p.At)
			if err != nil {
				msgs = append(msgs, fmt.Sprintf("case %q persona %q: %v", clip(c.ID, maxCaseIDLength), e.Persona, err))
				continue
			}
			p.Jobs = append(p.Jobs, job)
		}
	}
	if len(msgs) > 0 {
		if len(msgs) > maxProblemsInMessage {
			msgs = append(msgs[:maxProblemsInMessage], fmt.Sprintf("and %d more", len(msgs)-maxProblemsInMessage))
		}
		return nil, problem(v1alpha1.ReasonInvalidCases, "%s", strings.Join(msgs, "; "))
	}
	return p, nil
}

func freezeJob(def *Definition, c v1alpha1.EvalCase, e v1alpha1.Expectation, at time.Time) (Job, error) {
	id := CaseKey(c.ID, e.Persona)
	job := Job{SuiteCase: c.ID, AskAnswer: c.AskAnswer}
	if !IsV2(e) {
		job.V1 = true
		job.Case = scoring.Case{ID: id, Persona: e.Persona, Question: c.Question,
			RelevantIDs: nonNil(e.RelevantIDs), AllowedIDs: nonNil(e.AllowedIDs), MustAbstain: e.MustAbstain}.V2()
		job.Case.Stratum = c.Stratum
		return job, nil
	}
	cv := scoring.CaseV2{ID: id, Question: c.Question, Persona: e.Persona, Stratum: c.Stratum, AsOf: c.AsOf,
		Expected: scoring.Expected{
			Action:              scoring.Action(e.Action),
			AllowedEvidence:     slices.Clone(e.AllowedEvidence),
			RequiredEvidence:    slices.Clone(e.RequiredEvidence),
			RequiredAnyOf:       cloneSets(e.RequiredAnyOf),
			ForbiddenEvidence:   slices.Clone(e.ForbiddenEvidence),
			SupersededEvidence:  slices.Clone(e.SupersededEvidence),
			ExpectedCitations:   slices.Clone(e.ExpectedCitations),
			InternalReason:      scoring.ReasonCode(e.InternalReason),
			PublicResponseClass: e.PublicResponseClass,
			ForbiddenMarkers:    slices.Clone(e.ForbiddenMarkers),
		}}
	if f := def.Fixture; f != nil {
		when := at
		if c.AsOf != "" {
			t, err := time.Parse(time.RFC3339, c.AsOf)
			if err != nil {
				return job, fmt.Errorf("asOf %q is not an RFC 3339 time", c.AsOf)
			}
			when = t
		}
		ps := def.Personas[e.Persona].Spec
		d := f.Derive(Reader{Subject: ps.Subject, Groups: ps.Groups}, when)
		if err := scoring.FillEvidence(&cv, d.Allowed, d.Superseded); err != nil {
			return job, fmt.Errorf("allowedEvidence %v differs from what the fixture's policy gives this persona (%v); leave it out to derive it",
				e.AllowedEvidence, d.Allowed)
		}
		if msg := CheckDerived(e, cv.Expected.AllowedEvidence); msg != "" {
			return job, fmt.Errorf("%s (derived from the fixture for subject %q)", msg, ps.Subject)
		}
	} else if cv.Expected.AllowedEvidence == nil {
		// Without a fixture, an absent list is the empty list: the persona
		// may see nothing (the API server drops empty lists).
		cv.Expected.AllowedEvidence = []string{}
	}
	if err := scoring.ValidateCase(&cv, false); err != nil {
		var ve *scoring.ValidationError
		if errors.As(err, &ve) && len(ve.Problems) > 0 {
			return job, errors.New(ve.Problems[0].Message)
		}
		return job, err
	}
	job.Case = cv
	return job, nil
}

func cloneSets(sets [][]string) [][]string {
	if sets == nil {
		return nil
	}
	out := make([][]string, len(sets))
	for i, s := range sets {
		out[i] = slices.Clone(s)
	}
	return out
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// PlanCases freezes cases that need no fixture: the persona snapshots hold
// names only. Offline callers and tests use it; a run freezes with Freeze.
func PlanCases(cases []v1alpha1.EvalCase, k int, g Gates) (*Plan, error) {
	def := &Definition{Cases: cases, Corpus: &v1alpha1.Corpus{}, Personas: map[string]*v1alpha1.Persona{}}
	for _, name := range PersonaNames(cases) {
		def.Personas[name] = &v1alpha1.Persona{}
	}
	return Freeze(def, &v1alpha1.EvalSuite{}, g, k, time.Time{})
}
