package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
)

// verdict is what both tools must agree on: the exit status, the verdict
// and the counts behind the zero-tolerance gates, and the recall and MRR
// means (nil when undefined).
type verdict struct {
	exit             int
	passed           bool
	cases            int
	forbidden        int // cases with a forbidden ID at any rank or cited
	invalidCitations int // cases citing outside retrieved ∩ allowed
	failedToAbstain  int
	recall, mrr      *float64
}

func (v verdict) String() string {
	return fmt.Sprintf("exit=%d passed=%v cases=%d forbidden=%d invalid_citations=%d failed_to_abstain=%d recall=%s mrr=%s",
		v.exit, v.passed, v.cases, v.forbidden, v.invalidCitations, v.failedToAbstain, fmtMean(v.recall), fmtMean(v.mrr))
}

func fmtMean(v *float64) string {
	if v == nil {
		return "null"
	}
	return fmt.Sprintf("%.6f", *v)
}

// ragcanaryReport is the part of `ragcanary eval --format json` compared.
// Cases decode into empty structs: only their number matters here.
type ragcanaryReport struct {
	Passed *bool `json:"passed"`
	Gates  []struct {
		Name  string   `json:"name"`
		Value *float64 `json:"value"`
	} `json:"gates"`
	Summary struct {
		Overall struct {
			RecallAtK struct {
				Value *float64 `json:"value"`
			} `json:"recall_at_k"`
			MRRAtK struct {
				Value *float64 `json:"value"`
			} `json:"mrr_at_k"`
		} `json:"overall"`
	} `json:"summary"`
	Cases []struct{} `json:"cases"`
}

// gateCounts maps each tool's gate name to the verdict count it fills.
var gateCounts = map[string]func(*verdict) *int{
	"no_forbidden":         func(v *verdict) *int { return &v.forbidden },
	"citation_validity":    func(v *verdict) *int { return &v.invalidCitations },
	"no_failed_to_abstain": func(v *verdict) *int { return &v.failedToAbstain },
}

// readRagcanary reads a ragcanary JSON report. Exit 2 prints no report, so
// only the exit status is compared then.
func readRagcanary(path string, exit int) (verdict, error) {
	v := verdict{exit: exit}
	if exit == 2 {
		return v, nil
	}
	var r ragcanaryReport
	if err := readJSON(path, &r); err != nil {
		return v, fmt.Errorf("ragcanary report: %w", err)
	}
	if r.Passed == nil {
		return v, fmt.Errorf("ragcanary report %s has no \"passed\"", path)
	}
	v.passed, v.cases = *r.Passed, len(r.Cases)
	for _, g := range r.Gates {
		if field, ok := gateCounts[g.Name]; ok && g.Value != nil {
			*field(&v) = int(*g.Value)
		}
	}
	v.recall, v.mrr = r.Summary.Overall.RecallAtK.Value, r.Summary.Overall.MRRAtK.Value
	return v, nil
}

// baselineSummary is baseline.py's output.
type baselineSummary struct {
	Passed           *bool `json:"passed"`
	Cases            int   `json:"cases"`
	ForbiddenCases   int   `json:"forbidden_cases"`
	InvalidCitations int   `json:"invalid_citation_cases"`
	FailedToAbstain  int   `json:"failed_to_abstain"`
	RecallAtK        struct {
		Value *float64 `json:"value"`
	} `json:"recall_at_k"`
	MRRAtK struct {
		Value *float64 `json:"value"`
	} `json:"mrr_at_k"`
}

func readBaseline(path string, exit int) (verdict, error) {
	v := verdict{exit: exit}
	if exit == 2 {
		return v, nil
	}
	var s baselineSummary
	if err := readJSON(path, &s); err != nil {
		return v, fmt.Errorf("baseline summary: %w", err)
	}
	if s.Passed == nil {
		return v, fmt.Errorf("baseline summary %s has no \"passed\"", path)
	}
	v.passed, v.cases = *s.Passed, s.Cases
	v.forbidden, v.invalidCitations, v.failedToAbstain = s.ForbiddenCases, s.InvalidCitations, s.FailedToAbstain
	v.recall, v.mrr = s.RecallAtK.Value, s.MRRAtK.Value
	return v, nil
}

func readJSON(path string, into any) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return json.NewDecoder(f).Decode(into)
}

// disagreement lists where two verdicts differ; empty means they agree.
// Means are compared to 1e-9: the tools sum in the same order, but not
// necessarily with the same floating-point steps.
func disagreement(a, b verdict) string {
	var d []string
	add := func(name string, x, y any) {
		if x != y {
			d = append(d, fmt.Sprintf("%s %v vs %v", name, x, y))
		}
	}
	add("exit", a.exit, b.exit)
	if a.exit == 2 || b.exit == 2 {
		return strings.Join(d, "; ")
	}
	add("passed", a.passed, b.passed)
	add("cases", a.cases, b.cases)
	add("forbidden", a.forbidden, b.forbidden)
	add("invalid_citations", a.invalidCitations, b.invalidCitations)
	add("failed_to_abstain", a.failedToAbstain, b.failedToAbstain)
	if !sameMean(a.recall, b.recall) {
		d = append(d, fmt.Sprintf("recall %s vs %s", fmtMean(a.recall), fmtMean(b.recall)))
	}
	if !sameMean(a.mrr, b.mrr) {
		d = append(d, fmt.Sprintf("mrr %s vs %s", fmtMean(a.mrr), fmtMean(b.mrr)))
	}
	return strings.Join(d, "; ")
}

func sameMean(a, b *float64) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return math.Abs(*a-*b) <= 1e-9
}
