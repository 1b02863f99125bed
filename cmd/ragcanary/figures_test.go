package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/metrics"
	"github.com/ragcanary/ragcanary/internal/report"
	"github.com/ragcanary/ragcanary/internal/scoring"
	"github.com/ragcanary/ragcanary/internal/suite"
)

// TestEveryFigureReachesEveryConsumer: each row of scoring.Figures is in
// the JSON report's stats, in SuiteRun status, in the metrics, and — when
// the row has a text or report header — in the text summary's columns and
// the SuiteRun report's persona columns and JSON; and each of those holds
// nothing that is not a row. Adding an outcome is then one row (with its
// Stats field and scoring rule): a consumer that drops it, or names a
// figure the table does not have, fails here.
func TestEveryFigureReachesEveryConsumer(t *testing.T) {
	args := []string{td("cases_v2.json"), td("results_v2_marker.json")}
	_, out, stderr := runEvalCmd(append([]string{"--format", "json"}, args...)...)
	var rep scoring.Report
	var raw struct {
		Summary struct {
			Overall map[string]json.RawMessage `json:"overall"`
		} `json:"summary"`
	}
	if err := errors.Join(json.Unmarshal([]byte(out), &rep), json.Unmarshal([]byte(out), &raw)); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var all, text, reportCols, reportKeys []string
	for _, f := range scoring.Figures {
		all = append(all, f.Name)
		if f.Text != "" {
			text = append(text, f.Text)
		}
		if f.Report != "" {
			reportCols, reportKeys = append(reportCols, f.Report), append(reportKeys, f.ReportKey)
		}
	}

	t.Run("JSON stats", func(t *testing.T) {
		for _, name := range all {
			if _, ok := raw.Summary.Overall[name]; !ok {
				t.Errorf("summary.overall has no %q", name)
			}
		}
	})

	t.Run("text summary", func(t *testing.T) {
		_, out, _ := runEvalCmd(args...)
		if got, want := summaryHeader(t, out), append([]string{"PERSONA"}, text...); !slices.Equal(got, want) {
			t.Errorf("text columns %v, want %v", got, want)
		}
	})

	rows := suite.PersonaResults(suite.Result{Report: rep})
	t.Run("SuiteRun status", func(t *testing.T) {
		var counts, rates []string
		for _, c := range rows[0].Counts {
			counts = append(counts, c.Name)
		}
		for _, r := range rows[0].Rates {
			rates = append(rates, r.Name)
		}
		if got := append(counts, rates...); !sameSet(got, all) {
			t.Errorf("status counts %v and rates %v, want the table's %v", counts, rates, all)
		}
	})

	t.Run("metrics", func(t *testing.T) {
		s := metrics.Suite{Namespace: "ns-figures", Suite: "figures", Corpus: "corp"}
		var ps []metrics.PersonaScores
		for p, st := range rep.Summary.Personas {
			ps = append(ps, metrics.PersonaScores{Persona: p, Stats: st})
		}
		metrics.RecordSuiteCompletion(s, metrics.SuiteCompletion{Finished: time.Unix(100, 0), Personas: ps})
		defer metrics.ForgetSuite(s.Namespace, s.Suite)
		served := servedFigures(t, s.Namespace)
		for _, f := range scoring.Figures {
			defined := f.Kind == scoring.KindCount
			for _, st := range rep.Summary.Personas {
				defined = defined || f.Ratio(&st).Value != nil
			}
			if defined && !served[f.Name] {
				t.Errorf("%s is defined for a persona but not served", f.Name)
			}
			delete(served, f.Name)
		}
		for name := range served {
			t.Errorf("a suite metric serves %q, which is no row of the table", name)
		}
	})

	t.Run("SuiteRun report", func(t *testing.T) {
		run := &v1alpha1.SuiteRun{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "ns"},
			Status: v1alpha1.SuiteRunStatus{Personas: rows}}
		ev, err := report.BuildSuite(report.SuiteInput{Run: run}, time.Unix(100, 0))
		if err != nil {
			t.Fatal(err)
		}
		var js, md bytes.Buffer
		if err := errors.Join(report.Render(&js, ev, report.FormatJSON), report.Render(&md, ev, report.FormatMarkdown)); err != nil {
			t.Fatal(err)
		}
		var doc struct {
			SuiteRun struct {
				Personas []json.RawMessage `json:"personas"`
			} `json:"suiteRun"`
		}
		if err := json.Unmarshal(js.Bytes(), &doc); err != nil || len(doc.SuiteRun.Personas) == 0 {
			t.Fatalf("report JSON: %v, %d persona rows", err, len(doc.SuiteRun.Personas))
		}
		if got, want := objectKeys(t, doc.SuiteRun.Personas[0]), append([]string{"persona"}, reportKeys...); !slices.Equal(got, want) {
			t.Errorf("report JSON persona keys %v, want %v", got, want)
		}
		if got, want := markdownHeader(t, md.String(), "Per persona, all strata"), append([]string{"Persona"}, reportCols...); !slices.Equal(got, want) {
			t.Errorf("report persona columns %v, want %v", got, want)
		}
	})
}

func sameSet(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

// summaryHeader is the columns of the text report's first table.
func summaryHeader(t *testing.T, out string) []string {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "PERSONA ") {
			return strings.Fields(line)
		}
	}
	t.Fatalf("no summary header in\n%s", out)
	return nil
}

// markdownHeader is the header row of the Markdown table after caption.
func markdownHeader(t *testing.T, md, caption string) []string {
	t.Helper()
	_, after, ok := strings.Cut(md, "\n"+caption+"\n\n")
	if !ok {
		t.Fatalf("no table %q in\n%s", caption, md)
	}
	line, _, _ := strings.Cut(after, "\n")
	var cols []string
	for _, c := range strings.Split(strings.Trim(line, "|"), "|") {
		cols = append(cols, strings.TrimSpace(c))
	}
	return cols
}

// objectKeys is a JSON object's keys in their order.
func objectKeys(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	var keys []string
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

// servedFigures are the figures the suite metrics of a namespace name: the
// outcome labels of ragcanary_suite_cases and the <name> of every
// ragcanary_suite_<name>_ratio but the per-status correct abstention.
func servedFigures(t *testing.T, ns string) map[string]bool {
	t.Helper()
	fams, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			if labelOf(m, metrics.LabelNamespace) != ns {
				continue
			}
			if f.GetName() == "ragcanary_suite_cases" {
				out[labelOf(m, metrics.LabelOutcome)] = true
			}
			name, ok := strings.CutSuffix(strings.TrimPrefix(f.GetName(), "ragcanary_suite_"), "_ratio")
			if ok && name != "correct_abstention" {
				out[name] = true
			}
		}
	}
	return out
}

func labelOf(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
