package report

import (
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/scoring"
)

// decodeJSON renders ev as JSON and decodes it generically, as a reader of
// the file would.
func decodeJSON(t *testing.T, ev Evidence) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(render(t, ev, FormatJSON), &m); err != nil {
		t.Fatalf("the JSON report does not decode: %v", err)
	}
	return m
}

// path walks decoded JSON by keys and indexes.
func path(t *testing.T, v any, keys ...any) any {
	t.Helper()
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("at %q: not an object: %v", k, v)
			}
			if v, ok = m[k]; !ok {
				t.Fatalf("no key %q in %v", k, m)
			}
		case int:
			a, ok := v.([]any)
			if !ok || k >= len(a) {
				t.Fatalf("at [%d]: not a long enough array: %v", k, v)
			}
			v = a[k]
		}
	}
	return v
}

func TestCanaryJSONHasExactValues(t *testing.T) {
	m := decodeJSON(t, BuildCanary(canaryFixture(), reportTime))
	c := path(t, m, "canaryRun")
	for _, tc := range []struct {
		name string
		keys []any
		want any
	}{
		// People read 1.2s–1.8s; the JSON keeps the measured microseconds.
		{"search lower", []any{"surfaces", 0, "lowerSeconds"}, 1.25},
		{"search upper", []any{"surfaces", 0, "upperSeconds"}, 1.7499},
		{"answer upper", []any{"surfaces", 1, "upperSeconds"}, 45.1999},
		{"answer SLO from the cache-invalidation SLO", []any{"surfaces", 1, "sloSeconds"}, 30.0},
		{"answer certainly breached", []any{"surfaces", 1, "againstSLO"}, CertainBreach},
		{"search within", []any{"surfaces", 0, "againstSLO"}, WithinSLO},
		{"probe total", []any{"surfaces", 1, "probes", "total"}, 22.0},
		{"time to visibility", []any{"timeToVisibilitySeconds"}, 2.265433},
		{"share requested to the microsecond", []any{"timeline", 2, "time"}, "2026-03-01T10:00:01.234567Z"},
		{"acknowledgement offset", []any{"timeline", 5, "offsetSeconds"}, 0.3499},
		{"acknowledgement field", []any{"timeline", 5, "field"}, "status.revokeAcknowledgedTime"},
		// A control persona with nothing recorded is null, never 0.
		{"unrecorded control", []any{"controls", 1, "answered"}, nil},
		{"recorded control", []any{"controls", 0, "answered"}, 20.0},
		{"missing control persona", []any{"controlPersonas", 1, "found"}, false},
		{"persona edited after the run", []any{"persona", "changedSinceRun"}, true},
		{"corpus not edited since (status writes do not count)", []any{"corpus", "changedSinceRun"}, false},
		{"canary from the owner reference", []any{"canary"}, "hr-canary"},
	} {
		if got := path(t, c, tc.keys...); got != tc.want {
			t.Errorf("%s: got %v (%T), want %v", tc.name, got, got, tc.want)
		}
	}
}

func TestSuiteJSONKeepsCountsAndUndefined(t *testing.T) {
	m := decodeJSON(t, suiteEvidence(t))
	s := path(t, m, "suiteRun")
	for _, tc := range []struct {
		name string
		keys []any
		want any
	}{
		// The precise completion annotation, not status's whole second.
		{"duration", []any{"durationSeconds"}, 3.12},
		{"passed", []any{"passed"}, false},
		{"alice utility numerator", []any{"personas", 0, "utility", "numerator"}, "2"},
		{"alice utility denominator", []any{"personas", 0, "utility", "denominator"}, 3.0},
		// alice has no required-block case: undefined, never 0.
		{"alice disclosure rate undefined", []any{"personas", 0, "disclosureRate", "value"}, nil},
		{"alice disclosure denominator", []any{"personas", 0, "disclosureRate", "denominator"}, 0.0},
		// bob's two leaks, the refused case and the answerable one, are
		// affected answers; only the refused one is in the rate.
		{"bob affected answers", []any{"personas", 1, "affectedAnswers"}, 2.0},
		{"bob disclosure numerator", []any{"personas", 1, "disclosureRate", "numerator"}, "1"},
		{"bob disclosure denominator", []any{"personas", 1, "disclosureRate", "denominator"}, 1.0},
		{"alice affected answers: zero, not undefined", []any{"personas", 0, "affectedAnswers"}, 0.0},
		{"bob's hr affected answers", []any{"strata", 1, "personas", 1, "affectedAnswers"}, 1.0},
		{"first stratum", []any{"strata", 0, "stratum"}, "finance"},
		{"bob's hr utility undefined", []any{"strata", 1, "personas", 1, "utility", "value"}, nil},
		{"first failing case is the disclosure", []any{"failingCases", 0, "caseID"}, "leave-policy"},
		{"its forbidden evidence", []any{"failingCases", 0, "forbiddenIDs", 0}, "hr-leave"},
		{"the answerable leak keeps its outcome", []any{"failingCases", 1, "outcome"}, "unsupported"},
		{"and is flagged a disclosure", []any{"failingCases", 1, "disclosed"}, true},
		{"a false block is not", []any{"failingCases", 3, "disclosed"}, false},
		{"probe error listed with its sanitized reason", []any{"failingCases", 2, "error"}, "timed out"},
		{"deciding gate", []any{"decidingGates", 0}, "no_forbidden"},
		{"source of failing cases", []any{"failingCasesSource"}, "report ConfigMap hr-suite-1772359200-report"},
	} {
		if got := path(t, s, tc.keys...); got != tc.want {
			t.Errorf("%s: got %v (%T), want %v", tc.name, got, got, tc.want)
		}
	}
}

// mdTables finds each Markdown table by the caption line before it and
// returns its rows split into cells (header first), honouring \| escapes.
func mdTables(t *testing.T, md string) map[string][][]string {
	t.Helper()
	out := map[string][][]string{}
	lines := strings.Split(md, "\n")
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "| ") || i < 2 {
			continue
		}
		caption := lines[i-2]
		var rows [][]string
		for ; i < len(lines) && strings.HasPrefix(lines[i], "|"); i++ {
			rows = append(rows, mdCells(lines[i]))
		}
		out[caption] = append(rows[:1], rows[2:]...) // drop the --- line
	}
	return out
}

func mdCells(line string) []string {
	var cells []string
	var cur strings.Builder
	for i := 1; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line):
			cur.WriteByte(line[i+1])
			i++
		case line[i] == '|':
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(line[i])
		}
	}
	return cells
}

func TestMarkdownTables(t *testing.T) {
	in := canaryFixture()
	// A message with table syntax must not break the conditions table.
	in.Run.Status.Conditions[0].Message = "cleanup | retried"
	tables := mdTables(t, string(render(t, BuildCanary(in, reportTime), FormatMarkdown)))
	bounds := tables["Time to exclusion per surface"]
	want := [][]string{
		{"Surface", "Interval", "SLO", "Against the SLO", "SLO from", "Excluded"},
		{"Search", "1.2s–1.8s", "30s", "within SLO (upper ≤ 30s)", "corpus freshness.exclusionSLO", "yes"},
		{"Answer", "42.1s–45.2s", "30s", "certain breach (lower > 30s)", "corpus freshness.cacheInvalidationSLO", "yes"},
	}
	if len(bounds) != len(want) {
		t.Fatalf("bounds table has %d rows, want %d: %v", len(bounds), len(want), bounds)
	}
	for i := range want {
		if strings.Join(bounds[i], "¦") != strings.Join(want[i], "¦") {
			t.Errorf("bounds row %d = %q, want %q", i, bounds[i], want[i])
		}
	}
	for caption, rows := range tables {
		for _, r := range rows[1:] {
			if len(r) != len(rows[0]) {
				t.Errorf("table %q: row %q has %d cells, header %d", caption, r, len(r), len(rows[0]))
			}
		}
	}
	if got := tables["Status conditions"][1][3]; got != "cleanup | retried" {
		t.Errorf("escaped message reads %q", got)
	}

	suiteTables := mdTables(t, string(render(t, suiteEvidence(t), FormatMarkdown)))
	hr := suiteTables["Stratum hr"]
	if len(hr) != 3 || hr[2][0] != "bob" || hr[2][1] != "0/0 undefined" || hr[2][3] != "1/1 = 1" {
		t.Errorf("stratum hr table = %q, want bob with utility 0/0 undefined and disclosures 1/1 = 1", hr)
	}
	if n := len(suiteTables["Failing executions"]) - 1; n != 4 {
		t.Errorf("failing executions table has %d rows, want 4", n)
	}
}

// TestHTMLIsSelfContained: the page loads nothing. URLs shown as text (the
// corpus's driver URL) are evidence; no tag or attribute may fetch anything.
func TestHTMLIsSelfContained(t *testing.T) {
	for name, ev := range map[string]Evidence{
		"canaryrun": BuildCanary(canaryFixture(), reportTime),
		"suiterun":  suiteEvidence(t),
	} {
		page := string(render(t, ev, FormatHTML))
		for _, tag := range []string{"<script", "<link", "<img", "<iframe", "<object", "<embed", "<base", "<use", "<image", "<audio", "<video", "<source", "<form"} {
			if strings.Contains(strings.ToLower(page), tag) {
				t.Errorf("%s: has a %s> element", name, tag)
			}
		}
		attrs := regexp.MustCompile(`<[a-zA-Z][^>]*>`).FindAllString(page, -1)
		attr := regexp.MustCompile(`\s([a-zA-Z:-]+)="([^"]*)"`)
		for _, tag := range attrs {
			for _, a := range attr.FindAllStringSubmatch(tag, -1) {
				if strings.Contains(a[2], "://") || strings.HasPrefix(a[2], "//") ||
					a[1] == "src" || a[1] == "href" || a[1] == "xlink:href" || a[1] == "srcset" {
					t.Errorf("%s: attribute %s=%q may load something", name, a[1], a[2])
				}
			}
		}
		style := page[strings.Index(page, "<style>"):strings.Index(page, "</style>")]
		for _, bad := range []string{"url(", "@import", "@font-face"} {
			if strings.Contains(style, bad) {
				t.Errorf("%s: stylesheet uses %s", name, bad)
			}
		}
		if !strings.Contains(style, "@media print") {
			t.Errorf("%s: stylesheet has no print rules", name)
		}
		if !strings.Contains(page, "<svg") {
			t.Errorf("%s: no inline SVG chart", name)
		}
	}
}

func TestAgainstSLO(t *testing.T) {
	s := func(d time.Duration) *Seconds { v := Seconds(d); return &v }
	for _, tc := range []struct {
		name         string
		lower, upper *Seconds
		want         string
	}{
		{"upper at the SLO meets it", s(time.Second), s(30 * time.Second), WithinSLO},
		{"upper above, lower within: not a certain breach", s(time.Second), s(31 * time.Second), UpperAboveSLO},
		{"lower above: certain", s(31 * time.Second), s(40 * time.Second), CertainBreach},
		{"right-censored beyond the SLO: certain", s(5 * time.Minute), nil, CertainBreach},
		{"right-censored within the SLO: unknown", s(10 * time.Second), nil, NotEstablished},
		{"nothing measured", nil, nil, NotEstablished},
	} {
		if got := againstSLO(tc.lower, tc.upper, 30*time.Second); got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestNotExcludedRunIsDrawnCensored(t *testing.T) {
	in := canaryFixture()
	in.Run.Status.Verdict = v1alpha1.VerdictNotExcluded
	in.Run.Status.Surfaces = in.Run.Status.Surfaces[:1]
	in.Run.Status.Surfaces[0].Bounds = &v1alpha1.ExclusionBounds{Lower: &metav1.Duration{Duration: 5 * time.Minute}}
	in.Run.Status.Surfaces[0].Excluded = false
	page := string(render(t, BuildCanary(in, reportTime), FormatHTML))
	if !strings.Contains(page, `class="censored"`) || strings.Contains(page, `class="interval"`) {
		t.Errorf("a right-censored surface must be drawn as censored, not as an interval")
	}
	if !strings.Contains(page, "&gt;5m (not excluded)") {
		t.Errorf("the censored bar is not labelled >5m (not excluded)")
	}
	ev := BuildCanary(in, reportTime)
	if ev.Canary.Surfaces[0].Upper != nil {
		t.Errorf("upper bound invented for a right-censored run: %v", *ev.Canary.Surfaces[0].Upper)
	}
}

func TestSuiteWithoutReportConfigMap(t *testing.T) {
	in := suiteFixture(t)
	in.ReportData, in.ReportFound = nil, false
	ev, err := BuildSuite(in, reportTime)
	if err != nil {
		t.Fatal(err)
	}
	s := ev.Suite
	if !strings.Contains(s.FailingCasesSource, "not found") || len(s.FailingCases) != len(in.Run.Status.FailingCases) {
		t.Errorf("without the ConfigMap the report must list status.failingCases and say why: %q, %d cases",
			s.FailingCasesSource, len(s.FailingCases))
	}
	if s.K != nil {
		t.Errorf("k is only known from the stored report, got %d", *s.K)
	}
}

func TestSuiteWithUndecodableReportFails(t *testing.T) {
	in := suiteFixture(t)
	in.ReportData = map[string]string{"report.json": "{not json"}
	if _, err := BuildSuite(in, reportTime); err == nil {
		t.Fatal("an undecodable report ConfigMap must fail the report, not show no failing cases")
	}
}

func TestParseRef(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    Ref
		wantErr bool
	}{
		{"run-1", Ref{Name: "run-1"}, false},
		{"canaryrun/run-1", Ref{Kind: KindCanaryRun, Name: "run-1"}, false},
		{"rcsr/run-1", Ref{Kind: KindSuiteRun, Name: "run-1"}, false},
		{"suiteruns.ragcanary.dev/run-1", Ref{Kind: KindSuiteRun, Name: "run-1"}, false},
		{"pod/run-1", Ref{}, true},
		{"canaryrun/", Ref{}, true},
		{"", Ref{}, true},
	} {
		got, err := ParseRef(tc.in)
		if (err != nil) != tc.wantErr || (!tc.wantErr && got != tc.want) {
			t.Errorf("ParseRef(%q) = %+v, %v; want %+v, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestFormatForPath(t *testing.T) {
	for in, want := range map[string]Format{"report.html": FormatHTML, "a/b.JSON": FormatJSON, "r.md": FormatMarkdown} {
		if got, err := FormatForPath(in); err != nil || got != want {
			t.Errorf("FormatForPath(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"report", "report.pdf"} {
		if _, err := FormatForPath(in); err == nil {
			t.Errorf("FormatForPath(%q) must fail", in)
		}
	}
}

func TestTicksAreRound(t *testing.T) {
	for _, tc := range []struct {
		span time.Duration
		step time.Duration
	}{
		{56 * time.Second, 10 * time.Second},
		{2 * time.Second, 500 * time.Millisecond},
		{40 * time.Minute, 10 * time.Minute},
		{300 * time.Millisecond, 50 * time.Millisecond},
	} {
		ts := ticks(tc.span)
		if len(ts) < 2 || ts[1]-ts[0] != tc.step || ts[len(ts)-1] > tc.span {
			t.Errorf("ticks(%v) = %v, want steps of %v within the span", tc.span, ts, tc.step)
		}
	}
}

func TestJSONSecondsRoundTrip(t *testing.T) {
	var b bytes.Buffer
	v := Seconds(1749900 * time.Microsecond)
	if err := json.NewEncoder(&b).Encode(v); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(b.String()); got != "1.7499" {
		t.Errorf("1.7499s marshals as %s", got)
	}
}

// TestSuiteFigureNotRecorded: a figure a run's status does not list (a run
// stored before the figure existed) shows as unknown, never as 0 or an
// undefined ratio, and the run's failing cases from status are still
// flagged by their forbidden IDs.
func TestSuiteFigureNotRecorded(t *testing.T) {
	in := suiteFixture(t)
	in.ReportData, in.ReportFound = nil, false
	for i := range in.Run.Status.Personas {
		p := &in.Run.Status.Personas[i]
		p.Counts = slices.DeleteFunc(p.Counts, func(c v1alpha1.NamedCount) bool { return c.Name == scoring.FigureAffectedAnswers })
		p.Rates = slices.DeleteFunc(p.Rates, func(r v1alpha1.NamedRatio) bool { return r.Name == scoring.FigureUtility })
	}
	for i := range in.Run.Status.FailingCases {
		in.Run.Status.FailingCases[i].Disclosed = false
	}
	ev, err := BuildSuite(in, reportTime)
	if err != nil {
		t.Fatal(err)
	}
	m := decodeJSON(t, ev)
	for _, key := range []string{"affectedAnswers", "utility"} {
		if got, ok := path(t, m, "suiteRun", "personas", 1).(map[string]any)[key]; !ok || got != nil {
			t.Errorf("bob %s = %v (present %v), want null when the run did not record it", key, got, ok)
		}
	}
	if got := path(t, m, "suiteRun", "failingCases", 1, "disclosed"); got != true {
		t.Errorf("deploy-guide disclosed = %v, want true from its forbidden IDs", got)
	}
	tables := mdTables(t, string(render(t, ev, FormatMarkdown)))
	personas := tables["Per persona, all strata"]
	if len(personas) != 3 || personas[0][4] != "Affected answers" || personas[2][4] != "not recorded" ||
		personas[0][1] != "Utility" || personas[2][1] != "not recorded" {
		t.Errorf("persona table = %q, want bob's affected answers and utility \"not recorded\"", personas)
	}
}
