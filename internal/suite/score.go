package suite

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/scoring"
)

// OutcomeProbeError marks a failing execution that got no usable reply. It
// is not a scoring outcome: such executions are never scored.
const OutcomeProbeError = "probe_error"

// Gates are a suite's gates in scoring's terms.
type Gates struct {
	// MaxDisclosures is how many cases may have forbidden evidence.
	MaxDisclosures int
	// MaxInvalidCitations is how many cases may cite outside retrieved ∩ allowed.
	MaxInvalidCitations int
	// MinRecall and MinMRR add threshold gates when set.
	MinRecall, MinMRR *float64
}

// ParseGates converts the API's gates. The CRD already restricts the
// decimals to [0, 1]; a value that slipped past it is a *Problem.
func ParseGates(g v1alpha1.Gates) (Gates, error) {
	out := Gates{MaxDisclosures: int(max(g.MaxDisclosures, 0)), MaxInvalidCitations: int(max(g.MaxInvalidCitations, 0))}
	var err error
	if out.MinRecall, err = parseThreshold("minRecall", g.MinRecall); err != nil {
		return out, err
	}
	out.MinMRR, err = parseThreshold("minMRR", g.MinMRR)
	return out, err
}

func parseThreshold(field, s string) (*float64, error) {
	if s == "" {
		return nil, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 || v > 1 {
		return nil, problem(ReasonInvalidCases, "spec.gates.%s %q must be a decimal in [0, 1]", field, s)
	}
	return &v, nil
}

// Result is a scored run.
type Result struct {
	// Report is the scoring engine's report over every execution that got a
	// reply, with the suite's tolerances applied to the zero-tolerance gates.
	// It has the same schema as `ragcanary eval --format json`.
	Report scoring.Report
	// Strata holds the per-persona summaries of each non-empty stratum.
	Strata map[string]scoring.Summary
	// Executions counts every case × persona, replied or not.
	Executions int
	// Errored are the executions that got no usable reply, in case order.
	Errored []Execution
	// Disclosures counts scored cases with forbidden evidence.
	Disclosures int
	// Passed is true when every gate passed and every execution got a reply.
	Passed bool
	// failing are the scored cases needing attention, in case order.
	failing []scoring.CaseScore
}

// CaseKey is the case ID in the report: the suite's case ID and the persona,
// because the engine needs one unique ID per scored execution.
func CaseKey(caseID, persona string) string { return caseID + "/" + persona }

// Score maps the executions onto the scoring engine and applies the gates.
// cases must have passed Validate; execs are Execute's output for them.
func Score(cases []v1alpha1.EvalCase, execs []Execution, k int, g Gates) (Result, error) {
	expect := expectations(cases)
	res := Result{Executions: len(execs), Strata: map[string]scoring.Summary{}}
	var scCases []scoring.Case
	var scResults []scoring.Result
	var strata []string
	for _, x := range execs {
		if x.Err != nil {
			res.Errored = append(res.Errored, x)
			continue
		}
		c, r := toScoring(expect[CaseKey(x.CaseID, x.Persona)], x)
		scCases, scResults = append(scCases, c), append(scResults, r)
		strata = append(strata, x.Stratum)
	}
	if len(scCases) == 0 {
		res.Report = emptyReport(k)
		return res, nil
	}
	opts := scoring.Options{K: k, MinRecall: g.MinRecall, MinMRR: g.MinMRR}
	report, err := scoring.Evaluate(scCases, scResults, opts)
	if err != nil {
		return res, fmt.Errorf("scoring validated cases: %w", err)
	}
	applyTolerances(&report, g)
	res.Report = report
	if res.Strata, err = strataSummaries(scCases, scResults, strata, k); err != nil {
		return res, err
	}
	for _, s := range report.Cases {
		if len(s.ForbiddenIDs) > 0 {
			res.Disclosures++
		}
		if s.Failing() {
			res.failing = append(res.failing, s)
		}
	}
	res.Passed = report.Passed && len(res.Errored) == 0
	return res, nil
}

// scoredExpectation is one case × persona with what the case says about it.
type scoredExpectation struct {
	c v1alpha1.EvalCase
	e v1alpha1.Expectation
}

func expectations(cases []v1alpha1.EvalCase) map[string]scoredExpectation {
	m := map[string]scoredExpectation{}
	for _, c := range cases {
		for _, e := range c.Expectations {
			m[CaseKey(c.ID, e.Persona)] = scoredExpectation{c: c, e: e}
		}
	}
	return m
}

// toScoring builds the engine's case and result for one replied execution.
func toScoring(se scoredExpectation, x Execution) (scoring.Case, scoring.Result) {
	c := scoring.Case{
		ID:          CaseKey(x.CaseID, x.Persona),
		Persona:     x.Persona,
		Question:    se.c.Question,
		RelevantIDs: nonNil(se.e.RelevantIDs),
		AllowedIDs:  nonNil(se.e.AllowedIDs),
		MustAbstain: se.e.MustAbstain,
	}
	r := scoring.Result{
		ID:           c.ID,
		RetrievedIDs: nonNil(x.Hits),
		CitedIDs:     Cited(x, se.e.RelevantIDs),
		Abstained:    Abstained(x),
	}
	return c, r
}

// Abstained is the abstention rule. With the answer surface asked, an
// answer citing nothing is an abstention whatever its text: refusals are
// phrased as text ("I could not find anything you have access to"), and an
// uncited answer can never be supported. Search only, zero hits is the
// abstention.
func Abstained(x Execution) bool {
	if x.Answered {
		return len(x.Citations) == 0
	}
	return len(x.Hits) == 0
}

// Cited is what the engine treats as the execution's citations. With the
// answer surface asked, the answer's citations. Search only, there is no
// answer: the hit list is what the persona gets, so its relevant hits stand
// in as the citations. That makes "supported" mean "found relevant evidence
// and nothing forbidden", and citation validity a property of answers only.
func Cited(x Execution, relevant []string) []string {
	if x.Answered {
		return nonNil(x.Citations)
	}
	out := []string{}
	for _, id := range x.Hits {
		if slices.Contains(relevant, id) && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// applyTolerances turns the zero-tolerance count gates into "at most N"
// gates when the suite allows some, and recomputes the verdict.
func applyTolerances(r *scoring.Report, g Gates) {
	r.Passed = true
	for i := range r.Gates {
		gate := &r.Gates[i]
		switch gate.Name {
		case scoring.GateNoForbidden:
			tolerate(gate, g.MaxDisclosures)
		case scoring.GateCitationValidity:
			tolerate(gate, g.MaxInvalidCitations)
		}
		r.Passed = r.Passed && gate.Passed
	}
}

func tolerate(gate *scoring.Gate, allowed int) {
	gate.Threshold = float64(allowed)
	gate.Passed = gate.Value != nil && *gate.Value <= gate.Threshold
}

// strataSummaries scores each non-empty stratum on its own, so every
// per-stratum number comes from the same engine as the overall one.
func strataSummaries(cases []scoring.Case, results []scoring.Result, strata []string, k int) (map[string]scoring.Summary, error) {
	out := map[string]scoring.Summary{}
	for _, name := range distinctNonEmpty(strata) {
		var sc []scoring.Case
		var sr []scoring.Result
		for i, s := range strata {
			if s == name {
				sc, sr = append(sc, cases[i]), append(sr, results[i])
			}
		}
		report, err := scoring.Evaluate(sc, sr, scoring.Options{K: k})
		if err != nil {
			return nil, fmt.Errorf("scoring stratum %q: %w", name, err)
		}
		out[name] = report.Summary
	}
	return out, nil
}

func distinctNonEmpty(ss []string) []string {
	var out []string
	for _, s := range ss {
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

// emptyReport is the report when no execution got a reply: nothing scored,
// nothing passed, every metric undefined.
func emptyReport(k int) scoring.Report {
	return scoring.Report{
		K:       k,
		Gates:   []scoring.Gate{},
		Summary: scoring.Summary{Personas: map[string]scoring.Stats{}},
		Cases:   []scoring.CaseScore{},
	}
}

func nonNil(ids []string) []string {
	if ids == nil {
		return []string{}
	}
	return ids
}

// ErrorText describes an execution error safely for a report or event:
// a *driver.Error's text is sanitized by contract (no credentials, no
// bodies); anything else is reduced to a fixed phrase.
func ErrorText(err error) string {
	var de *driver.Error
	switch {
	case errors.As(err, &de):
		return de.Error()
	case errors.Is(err, context.DeadlineExceeded):
		return "timed out"
	case errors.Is(err, errNoCredential):
		return errNoCredential.Error()
	default:
		return "failed"
	}
}
