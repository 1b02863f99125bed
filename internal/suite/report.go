package suite

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/scoring"
)

// MaxReportBytes keeps the ConfigMap under the API server's 1 MiB object
// limit with room for metadata.
const MaxReportBytes = 900 * 1024

// ProbeError is one execution without a reply, as the report lists it.
type ProbeError = v1alpha1.ReportProbeError

// FinalReport is the report that decided the run: the scoring engine's
// gates followed by GateProbeErrors, and Passed equal to the run's verdict.
// The engine only sees executions that replied, so its own Passed can be
// true on a run that failed on probe errors; every stored or printed report
// (the report ConfigMap, live mode's output) and status.gates come from here
// so they cannot disagree with the run.
func FinalReport(r Result) scoring.Report {
	report := r.Report
	errs := float64(len(r.Errored))
	report.Gates = append(slices.Clone(r.Report.Gates),
		scoring.Gate{Name: GateProbeErrors, Passed: errs == 0, Value: &errs, Threshold: 0})
	report.Passed = r.Passed
	return report
}

// ReportData renders the report ConfigMap's data besides the plan (which
// takes planBytes of the budget): the frozen evidence, FinalReport and the
// probe errors. The evidence is kept whole or not at all (a partial one
// could not be replayed); when everything does not fit in MaxReportBytes,
// the report keeps its summary and gates and lists only as many cases as
// fit, in input order, and v1alpha1.ReportKeyTruncated says what was cut.
func ReportData(r Result, planBytes int) (map[string]string, error) {
	errs := probeErrors(r)
	errJSON, err := json.Marshal(errs)
	if err != nil {
		return nil, err
	}
	data := map[string]string{v1alpha1.ReportKeyProbeErrors: string(errJSON)}
	budget := MaxReportBytes - planBytes - len(errJSON)
	var notes []string
	if r.Evidence != nil {
		var buf bytes.Buffer
		if err := scoring.WriteEvidence(&buf, r.Evidence); err != nil {
			return nil, err
		}
		if buf.Len() <= budget/2 {
			data[v1alpha1.ReportKeyEvidence] = buf.String()
			budget -= buf.Len()
		} else {
			notes = append(notes, fmt.Sprintf("%s omitted: the frozen evidence (%d bytes) does not fit the report ConfigMap", v1alpha1.ReportKeyEvidence, buf.Len()))
		}
	}
	report := FinalReport(r)
	full, err := json.Marshal(report)
	if err != nil {
		return nil, err
	}
	if len(full) <= budget {
		data[v1alpha1.ReportKeyReport] = string(full)
	} else {
		cut, kept, err := truncateCases(report, budget)
		if err != nil {
			return nil, err
		}
		data[v1alpha1.ReportKeyReport] = cut
		notes = append(notes, fmt.Sprintf("%s lists the first %d of %d cases; summary and gates cover all of them",
			v1alpha1.ReportKeyReport, kept, len(report.Cases)))
	}
	if len(notes) > 0 {
		data[v1alpha1.ReportKeyTruncated] = "TRUNCATED: " + joinNotes(notes)
	}
	return data, nil
}

func joinNotes(notes []string) string {
	out := notes[0]
	for _, n := range notes[1:] {
		out += "; " + n
	}
	return out
}

// truncateCases finds, by bisection, the most cases that fit in budget.
func truncateCases(report scoring.Report, budget int) (string, int, error) {
	all := report.Cases
	lo, hi := 0, len(all)
	best := ""
	for lo <= hi {
		mid := (lo + hi) / 2
		report.Cases = all[:mid]
		b, err := json.Marshal(report)
		if err != nil {
			return "", 0, err
		}
		if len(b) <= budget {
			best, lo = string(b), mid+1
		} else {
			hi = mid - 1
		}
	}
	return best, hi, nil
}

func probeErrors(r Result) []ProbeError {
	out := []ProbeError{}
	for _, x := range r.Errored {
		out = append(out, ProbeError{CaseID: x.CaseID, Persona: x.Persona, Error: ErrorText(x.Err)})
	}
	// Bound the list like the report: a suite failing everywhere must
	// still produce a ConfigMap that fits.
	const maxListed = 1000
	if len(out) > maxListed {
		out = out[:maxListed]
	}
	return out
}
