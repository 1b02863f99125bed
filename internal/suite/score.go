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

// Gates are a suite's gates in scoring's terms.
type Gates struct {
	// MaxDisclosures is how many cases per persona may leak.
	MaxDisclosures int
	// MaxInvalidCitations is how many cases per persona may cite outside
	// retrieved ∩ allowed.
	MaxInvalidCitations int
	// Optional per-persona thresholds, when set.
	MinRecall, MinMRR, MinUtility, MaxFalseBlockRate, MaxStaleRate *float64
}

// Options are the engine options for these gates at depth k.
func (g Gates) Options(k int) scoring.Options {
	return scoring.Options{K: k, MinRecall: g.MinRecall, MinMRR: g.MinMRR, MinUtility: g.MinUtility,
		MaxFalseBlockRate: g.MaxFalseBlockRate, MaxStaleRate: g.MaxStaleRate,
		MaxDisclosures: g.MaxDisclosures, MaxInvalidCitations: g.MaxInvalidCitations}
}

// ParseGates converts the API's gates. The CRD already restricts the
// decimals to [0, 1]; a value that slipped past it is a *Problem.
func ParseGates(g v1alpha1.Gates) (Gates, error) {
	out := Gates{MaxDisclosures: int(max(g.MaxDisclosures, 0)), MaxInvalidCitations: int(max(g.MaxInvalidCitations, 0))}
	for _, t := range []struct {
		field string
		value string
		into  **float64
	}{
		{"minRecall", g.MinRecall, &out.MinRecall},
		{"minMRR", g.MinMRR, &out.MinMRR},
		{"minUtility", g.MinUtility, &out.MinUtility},
		{"maxFalseBlockRate", g.MaxFalseBlockRate, &out.MaxFalseBlockRate},
		{"maxStaleRate", g.MaxStaleRate, &out.MaxStaleRate},
	} {
		v, err := parseThreshold(t.field, t.value)
		if err != nil {
			return out, err
		}
		*t.into = v
	}
	return out, nil
}

func parseThreshold(field, s string) (*float64, error) {
	if s == "" {
		return nil, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 || v > 1 {
		return nil, problem(v1alpha1.ReasonInvalidCases, "spec.gates.%s %q must be a decimal in [0, 1]", field, s)
	}
	return &v, nil
}

// Result is a scored run.
type Result struct {
	// Report is the scoring engine's report over every execution that got
	// a reply. It has the same schema as `ragcanary eval --format json`.
	Report scoring.Report
	// Executions counts every case × persona, replied or not.
	Executions int
	// Errored are the executions that got no usable reply, in job order.
	Errored []Execution
	// Disclosures counts scored cases that leaked: forbidden evidence
	// retrieved or cited, a forbidden marker or document text in the answer.
	Disclosures int
	// Passed is true when every gate passed and every execution got a reply.
	Passed bool
	// Evidence is what the run evaluated, frozen for replay: the plan's
	// cases, options and personas, and every execution as scored.
	Evidence *scoring.Evidence
	// failing are the scored cases needing attention, in job order.
	failing []scoring.CaseScore
}

// CaseKey is the case ID in the report: the suite's case ID and the persona,
// because the engine needs one unique ID per scored execution.
func CaseKey(caseID, persona string) string { return caseID + "/" + persona }

// Score maps the executions onto the scoring engine — one engine for the
// cluster, live mode and replay — and builds the frozen evidence. Each
// execution is matched to its plan job by CaseKey; jobs without one are not
// scored. corpus is the corpus as the run saw it (nil when unknown).
func Score(plan *Plan, execs []Execution, corpus *scoring.CorpusSnapshot) (Result, error) {
	res := Result{Executions: len(execs)}
	ev := &scoring.Evidence{Suite: plan.Suite, Cases: plan.Cases(), Options: plan.Options,
		Personas: plan.Personas, Corpus: corpus, Executions: []scoring.Execution{}}
	opts := plan.Options.Options()
	if plan.Fixture != nil {
		ev.DocumentTexts = map[string]string{}
		for _, d := range plan.Fixture.Documents {
			ev.DocumentTexts[d.ID] = d.Body
		}
		opts.DocumentTexts = ev.DocumentTexts
	}
	jobs := make(map[string]Job, len(plan.Jobs))
	for _, j := range plan.Jobs {
		jobs[j.Case.ID] = j
	}
	var cases []scoring.CaseV2
	var results []scoring.ResultV2
	for _, x := range execs {
		if x.ID == "" {
			x.ID = CaseKey(x.CaseID, x.Persona)
		}
		job, ok := jobs[x.ID]
		if !ok {
			return res, fmt.Errorf("execution %q matches no case of the plan", x.ID)
		}
		if x.Err != nil {
			res.Errored = append(res.Errored, x)
			ev.Executions = append(ev.Executions, scoring.Execution{CaseID: x.ID, Persona: x.Persona,
				RetrievedIDs: []string{}, CitedIDs: []string{}, ErrorClass: ErrorClass(x.Err)})
			continue
		}
		r := toResult(job, x)
		cases, results = append(cases, job.Case), append(results, r)
		ev.Executions = append(ev.Executions, scoring.Execution{CaseID: r.ID, Persona: x.Persona,
			RetrievedIDs: r.RetrievedIDs, CitedIDs: r.CitedIDs, Response: r.Response, Reason: x.Reason,
			AnswerText: r.AnswerText, LatencyMS: r.LatencyMS})
	}
	res.Evidence = ev
	if len(cases) == 0 {
		res.Report = emptyReport(plan.K)
		final := FinalReport(res)
		ev.Report = &final
		return res, nil
	}
	report, err := scoring.EvaluateV2(cases, results, opts)
	if err != nil {
		return res, fmt.Errorf("scoring validated cases: %w", err)
	}
	res.Report = report
	res.Disclosures = report.Summary.Overall.Leaks
	for _, s := range report.Cases {
		if s.Failing() {
			res.failing = append(res.failing, s)
		}
	}
	res.Passed = report.Passed && len(res.Errored) == 0
	final := FinalReport(res)
	ev.Report = &final
	return res, nil
}

// toResult is one replied execution as the engine scores it. A v1 job keeps
// the v1 rules (Abstained, Cited); a v2 job reports the declared status,
// or, search only, cites its supporting hits and lets the engine's default
// apply (answer when it cites something, else not_found).
func toResult(job Job, x Execution) scoring.ResultV2 {
	latency := float64(x.Latency.Microseconds()) / 1000
	var r scoring.ResultV2
	if job.V1 {
		r = scoring.Result{ID: job.Case.ID, RetrievedIDs: nonNil(x.Hits),
			CitedIDs: Cited(x, job.Case.Expected.RequiredEvidence), Abstained: Abstained(x)}.V2()
	} else {
		r = scoring.ResultV2{ID: job.Case.ID, RetrievedIDs: nonNil(x.Hits), CitedIDs: nonNil(x.Citations), Response: x.Status}
		if !x.Answered {
			r.CitedIDs = supportIDs(x.Hits, job.Case.Expected)
		}
	}
	r.RetrievedIDs, r.CitedIDs = nonNil(r.RetrievedIDs), nonNil(r.CitedIDs)
	r.AnswerText = x.Text
	r.LatencyMS = &latency
	return r
}

// Abstained is the v1 abstention rule. With the answer surface asked, an
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

// Cited is what the engine treats as a v1 execution's citations. With the
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

// ErrorClass is an execution error's kind for the frozen evidence: a
// fixed word, never error text.
func ErrorClass(err error) string {
	var de *driver.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, errNoCredential):
		return "no_credential"
	case driver.IsUnauthorized(err):
		return "unauthorized"
	case driver.IsPermanent(err):
		return "rejected"
	case errors.As(err, &de):
		return "unavailable"
	default:
		return "failed"
	}
}
