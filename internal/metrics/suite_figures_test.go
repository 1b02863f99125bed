package metrics

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/ragcanary/ragcanary/internal/scoring"
)

// TestSuiteFamiliesFromFigures: every count of the scoring table is a
// series of ragcanary_suite_cases (and of the families it names), every
// rate and mean its ragcanary_suite_<name>_ratio; every outcome label value
// and every rate family is a row of the table.
func TestSuiteFamiliesFromFigures(t *testing.T) {
	s := Suite{Namespace: "ns-fig", Suite: "table", Corpus: "corp"}
	st, want := everyFigure(t)
	RecordSuiteCompletion(s, SuiteCompletion{Finished: time.Unix(100, 0), Personas: []PersonaScores{{Persona: "p", Stats: st}}})
	defer ForgetSuite(s.Namespace, s.Suite)
	families := gathered(t, s.Namespace)
	for _, f := range scoring.Figures {
		if f.Kind != scoring.KindCount {
			if got := value(families[RateFamily(f.Name)], nil); got == nil || *got != want[f.Name] {
				t.Errorf("%s = %v, want %v", RateFamily(f.Name), got, want[f.Name])
			}
			continue
		}
		if got := value(families["ragcanary_suite_cases"], map[string]string{LabelOutcome: f.Name}); got == nil || *got != want[f.Name] {
			t.Errorf("ragcanary_suite_cases{outcome=%q} = %v, want %v", f.Name, got, want[f.Name])
		}
		for _, own := range []string{f.Gauge, f.Total} {
			if own == "" {
				continue
			}
			if got := value(families["ragcanary_"+own], nil); got == nil || *got != want[f.Name] {
				t.Errorf("ragcanary_%s = %v, want %v", own, got, want[f.Name])
			}
		}
	}
	for _, m := range families["ragcanary_suite_cases"].GetMetric() {
		if f, ok := scoring.FigureNamed(label(m, LabelOutcome)); !ok || f.Kind != scoring.KindCount {
			t.Errorf("ragcanary_suite_cases has outcome %q, no count of the table", label(m, LabelOutcome))
		}
	}
	for name := range families {
		rate, ok := strings.CutSuffix(strings.TrimPrefix(name, "ragcanary_suite_"), "_ratio")
		if f, found := scoring.FigureNamed(rate); ok && rate != "correct_abstention" && (!found || f.Kind == scoring.KindCount) {
			t.Errorf("family %s is no rate or mean of the table", name)
		}
	}
}

// TestSuiteFamiliesAlertsUse: every ragcanary_suite_ name the chart's
// alerts and dashboard or docs/observability.md use is still served.
func TestSuiteFamiliesAlertsUse(t *testing.T) {
	s := Suite{Namespace: "ns-names", Suite: "names", Corpus: "corp"}
	st, _ := everyFigure(t)
	RecordSuiteCompletion(s, SuiteCompletion{Started: time.Unix(90, 0), Finished: time.Unix(100, 0),
		Personas: []PersonaScores{{Persona: "p", Stats: st}}})
	defer ForgetSuite(s.Namespace, s.Suite)
	served := gathered(t, s.Namespace)
	ch := make(chan *prometheus.Desc, 64)
	NewObjectCollector(nil, nil).Describe(ch)
	close(ch)
	fqName := regexp.MustCompile(`fqName: "([a-z_]+)"`)
	for d := range ch {
		if m := fqName.FindStringSubmatch(d.String()); m != nil {
			served[m[1]] = nil
		}
	}
	files, err := filepath.Glob("../../charts/ragcanary/files/*")
	if err != nil {
		t.Fatal(err)
	}
	used := regexp.MustCompile(`ragcanary_suite_[a-z_]*[a-z]`)
	n := 0
	for _, path := range append(files, "../../docs/observability.md") {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range used.FindAllString(string(b), -1) {
			n++
			base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count")
			if _, ok := served[name]; !ok {
				if _, ok := served[base]; !ok {
					t.Errorf("%s uses %s, which is not served", filepath.Base(path), name)
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("found no ragcanary_suite_ names in the chart's files and docs")
	}
}

// everyFigure is Stats with every figure defined and set to a value of its
// own, and those values by figure name. The report's JSON keys are the
// figures' names, so the Stats are decoded from them.
func everyFigure(t *testing.T) (scoring.Stats, map[string]float64) {
	t.Helper()
	want := map[string]float64{}
	doc := map[string]any{}
	for i, f := range scoring.Figures {
		v := float64(i + 1)
		if f.Kind == scoring.KindCount {
			doc[f.Name] = v
		} else {
			v /= 100
			doc[f.Name] = map[string]any{"value": v, "numerator": v, "denominator": 1}
		}
		want[f.Name] = v
	}
	doc["correct_abstention"] = map[string]any{"not_found": map[string]any{"value": 1, "numerator": 1, "denominator": 1}}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	var st scoring.Stats
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	return st, want
}

// gathered is every family served, with only the series of one namespace.
func gathered(t *testing.T, ns string) map[string]*dto.MetricFamily {
	t.Helper()
	fams, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		var kept []*dto.Metric
		for _, m := range f.GetMetric() {
			if label(m, LabelNamespace) == ns {
				kept = append(kept, m)
			}
		}
		if len(kept) > 0 {
			f.Metric = kept
			out[f.GetName()] = f
		}
	}
	return out
}

// value is the one series of f matching the labels given, nil without one.
func value(f *dto.MetricFamily, labels map[string]string) *float64 {
	for _, m := range f.GetMetric() {
		match := true
		for k, v := range labels {
			match = match && label(m, k) == v
		}
		if !match {
			continue
		}
		var v float64
		switch {
		case m.Gauge != nil:
			v = m.GetGauge().GetValue()
		case m.Counter != nil:
			v = m.GetCounter().GetValue()
		}
		return &v
	}
	return nil
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
