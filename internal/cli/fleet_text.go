package cli

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/format"
	"github.com/ragcanary/ragcanary/internal/measure"
	"github.com/ragcanary/ragcanary/internal/safetext"
)

// table writes aligned columns; with allNamespaces every row starts with
// its namespace. Every cell is quoted for a terminal as Fprintf quotes its
// arguments: cells hold names, reasons and verdicts read from objects.
type table struct {
	tw            *tabwriter.Writer
	allNamespaces bool
}

func newTable(w io.Writer, allNamespaces bool, header ...string) *table {
	t := &table{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0), allNamespaces: allNamespaces}
	if allNamespaces {
		header = append([]string{"NAMESPACE"}, header...)
	}
	fmt.Fprintln(t.tw, strings.Join(header, "\t"))
	return t
}

func (t *table) row(ns string, cells ...string) {
	if t.allNamespaces {
		cells = append([]string{ns}, cells...)
	}
	quoted := make([]string, len(cells))
	for i, c := range cells {
		quoted[i] = safetext.Terminal(c)
	}
	fmt.Fprintln(t.tw, strings.Join(quoted, "\t"))
}

func (t *table) flush() error { return t.tw.Flush() }

// WriteFleet writes the fleet for people: one table per kind, then what is
// breached. allNamespaces adds a namespace column.
func WriteFleet(w io.Writer, f *Fleet, allNamespaces bool) error {
	sections := []func(io.Writer, *Fleet, bool) error{writeCorpora, writeCanaries, writeInFlightAndSentinels, writeRecent, writeSuites}
	for i, section := range sections {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if err := section(w, f, allNamespaces); err != nil {
			return err
		}
	}
	fmt.Fprintln(w)
	writeProblems(w, f.Problems)
	return nil
}

func writeCorpora(w io.Writer, f *Fleet, all bool) error {
	fmt.Fprintln(w, "CORPORA")
	if len(f.Corpora) == 0 {
		fmt.Fprintln(w, "  none")
		return nil
	}
	t := newTable(w, all, "NAME", "READY", "REASON", "EXCLUSION SLO")
	for _, c := range f.Corpora {
		t.row(c.Namespace, c.Name, c.Ready, dash(c.Reason), secondsText(c.ExclusionSLOSeconds, "5m (default)"))
	}
	return t.flush()
}

func writeCanaries(w io.Writer, f *Fleet, all bool) error {
	fmt.Fprintln(w, "REVOCATION CANARIES (time to exclusion vs SLO)")
	if len(f.Canaries) == 0 {
		fmt.Fprintln(w, "  none")
		return nil
	}
	t := newTable(w, all, "NAME", "CORPUS", "READY", "LAST VERDICT", "SEARCH", "ANSWER (CACHE)", "CONVERSATION", "IN-FLIGHT", "VISIBLE AFTER", "FINISHED", "NEXT RUN")
	for _, c := range f.Canaries {
		ready := c.Ready
		if c.Reason != "" && c.Ready != string(metav1.ConditionTrue) {
			ready += " (" + c.Reason + ")"
		}
		next := "-"
		switch {
		case c.Suspended:
			next = "suspended"
		case c.NextRun != nil:
			next = relative(*c.NextRun, f.Now)
		}
		verdict, search, answer, conversation, inFlight, visible, done := "-", "-", "-", "-", "-", "-", "-"
		if r := c.LastRun; r != nil {
			verdict = dash(r.Verdict)
			search, answer = surfaceText(r.Surfaces, v1alpha1.SurfaceSearch), surfaceText(r.Surfaces, v1alpha1.SurfaceAnswer)
			conversation = surfaceText(r.Surfaces, v1alpha1.SurfaceConversation)
			inFlight = inFlightText(r.InFlight)
			visible = secondsText(r.TimeToVisibilitySeconds, "-")
			if r.CompletionTime != nil {
				done = relative(*r.CompletionTime, f.Now)
			}
		}
		t.row(c.Namespace, c.Name, c.Corpus, ready, verdict, search, answer, conversation, inFlight, visible, done, next)
	}
	return t.flush()
}

// inFlightText is the post-revocation delivery against its SLO: "none ≤ 0s",
// "2.7s ≰ 1s", "? vs 1s" when not established; "-" when not measured.
func inFlightText(r *InFlightResult) string {
	if r == nil {
		return "-"
	}
	rel := "vs"
	if r.DeliverySeconds != nil {
		rel = "≤"
		if measure.DeliveryBreached(r.deliveryAt, r.CanaryBytesAfterRequest, r.slo) {
			rel = "≰"
		}
	}
	return r.delivery + " " + rel + " " + format.HumanDuration(r.slo)
}

// surfaceText is the surface's interval against its SLO, "-" when the
// surface is not probed.
func surfaceText(ss []SurfaceBounds, s v1alpha1.Surface) string {
	for _, b := range ss {
		if b.Surface == string(s) {
			return AgainstSLO(b.bounds, b.slo)
		}
	}
	return "-"
}

func writeInFlightAndSentinels(w io.Writer, f *Fleet, all bool) error {
	if err := writeInFlight(w, f, all); err != nil {
		return err
	}
	return writeSentinels(w, f, all)
}

func writeInFlight(w io.Writer, f *Fleet, all bool) error {
	fmt.Fprintln(w, "RUNS IN FLIGHT")
	if len(f.InFlight) == 0 {
		fmt.Fprintln(w, "  none")
		return nil
	}
	t := newTable(w, all, "NAME", "CANARY", "PHASE", "STARTED", "LIVE EXPOSURE", "CONTROL SIGHTINGS")
	for _, r := range f.InFlight {
		started := "-"
		if r.StartTime != nil {
			started = relative(*r.StartTime, f.Now)
		}
		t.row(r.Namespace, r.Name, dash(r.Canary), r.Phase, started, exposureText(r.Exposure), fmt.Sprint(r.IsolationViolations))
	}
	return t.flush()
}

// exposureText is "Search 12s (SLO 30s)" per exposed surface, "-" when the
// run has not revoked yet or every surface is confirmed excluded.
func exposureText(es []Exposure) string {
	if len(es) == 0 {
		return "-"
	}
	parts := make([]string, 0, len(es))
	for _, e := range es {
		rel := "SLO"
		if e.Seconds > e.SLOSeconds {
			rel = "over SLO"
		}
		parts = append(parts, fmt.Sprintf("%s %s (%s %s)", e.Surface, format.HumanDuration(seconds(e.Seconds)), rel, format.HumanDuration(seconds(e.SLOSeconds))))
	}
	return strings.Join(parts, ", ")
}

func writeRecent(w io.Writer, f *Fleet, all bool) error {
	fmt.Fprintln(w, "RUNS FINISHED IN THE LAST 24H (kept runs)")
	if len(f.Recent) == 0 {
		fmt.Fprintln(w, "  none")
		return nil
	}
	t := newTable(w, all, "CANARY", "RUNS", "BY VERDICT")
	for _, r := range f.Recent {
		verdicts := make([]string, 0, len(r.ByVerdict))
		total := 0
		for v, n := range r.ByVerdict {
			verdicts = append(verdicts, fmt.Sprintf("%d %s", n, dash(v)))
			total += n
		}
		sort.Slice(verdicts, func(i, j int) bool { return verdictRank(verdicts[i]) < verdictRank(verdicts[j]) })
		canary := r.Canary
		if canary == "" {
			canary = "(created by hand)"
		}
		t.row(r.Namespace, canary, fmt.Sprint(total), strings.Join(verdicts, ", "))
	}
	return t.flush()
}

// verdictOrder lists verdicts good news first, so counts read the same way
// in every row.
var verdictOrder = []v1alpha1.Verdict{
	v1alpha1.VerdictSLOMet, v1alpha1.VerdictIsolated, v1alpha1.VerdictSLOBreached, v1alpha1.VerdictNotExcluded,
	v1alpha1.VerdictIsolationViolation, v1alpha1.VerdictInconclusive, v1alpha1.VerdictSetupFailed,
}

// verdictRank orders "<n> <verdict>" strings by verdictOrder.
func verdictRank(s string) int {
	_, v, _ := strings.Cut(s, " ")
	for i, o := range verdictOrder {
		if string(o) == v {
			return i
		}
	}
	return len(verdictOrder)
}

func writeSuites(w io.Writer, f *Fleet, all bool) error {
	fmt.Fprintln(w, "EVAL SUITES")
	if len(f.Suites) == 0 {
		fmt.Fprintln(w, "  none")
		return nil
	}
	t := newTable(w, all, "NAME", "CORPUS", "READY", "LAST RUN", "PASSED", "DISCLOSURES", "GATES", "FINISHED")
	for _, s := range f.Suites {
		ready := s.Ready
		if s.Reason != "" && s.Ready != string(metav1.ConditionTrue) {
			ready += " (" + s.Reason + ")"
		}
		if s.LastRun == nil {
			t.row(s.Namespace, s.Name, s.Corpus, ready, "-", "-", "-", "-", "-")
			continue
		}
		r := s.LastRun
		done := "-"
		if r.CompletionTime != nil {
			done = relative(*r.CompletionTime, f.Now)
		}
		t.row(s.Namespace, s.Name, s.Corpus, ready, r.Name, fmt.Sprint(r.Passed), fmt.Sprint(r.Disclosures), gatesText(r), done)
	}
	return t.flush()
}

// gatesText is "3/3 passed", or the failing gates with their values.
func gatesText(r *SuiteLastRun) string {
	if !r.RunKept {
		return "(run no longer kept)"
	}
	if len(r.Gates) == 0 {
		return "none"
	}
	passed := 0
	var failing []string
	for _, g := range r.Gates {
		if g.Passed {
			passed++
			continue
		}
		value := g.Value
		if value == "" {
			value = "undefined"
		}
		failing = append(failing, fmt.Sprintf("%s=%s (threshold %s)", g.Name, value, dash(g.Threshold)))
	}
	s := fmt.Sprintf("%d/%d passed", passed, len(r.Gates))
	if len(failing) > 0 {
		s += "; failed: " + strings.Join(failing, ", ")
	}
	return s
}

func writeProblems(w io.Writer, problems []string) {
	if len(problems) == 0 {
		fmt.Fprintln(w, "No breaches or violations.")
		return
	}
	fmt.Fprintf(w, "%d breached or violated:\n", len(problems))
	for _, p := range problems {
		Fprintf(w, "  %s\n", p)
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func secondsText(s *float64, none string) string {
	if s == nil {
		return none
	}
	return format.HumanDuration(seconds(*s))
}

// relative is "28s ago" or "in 2m" from now, to the second at most: a
// tenth of a second says nothing about when something happened.
func relative(t, now time.Time) string {
	if t.After(now) {
		return "in " + format.HumanDuration(t.Sub(now).Round(time.Second))
	}
	return format.HumanDuration(now.Sub(t).Round(time.Second)) + " ago"
}
