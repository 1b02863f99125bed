package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/format"
)

// timeLayout is how history shows a run's start: absolute, since a trend
// is read against the calendar.
const timeLayout = "2006-01-02 15:04:05Z"

// WriteHistory writes a canary's kept runs for people, then the spread of
// their upper bounds with a sparkline.
func WriteHistory(w io.Writer, h *History) error {
	Fprintf(w, "revocationcanary %s/%s  corpus %s  %d kept run(s)", h.Namespace, h.Canary, h.Corpus, len(h.Runs))
	if slo := sloLine(h.Runs); slo != "" {
		Fprintf(w, "  SLO %s", slo)
	}
	fmt.Fprintln(w)
	if len(h.Runs) == 0 {
		fmt.Fprintln(w, "\nNo kept runs: the canary has not run yet, or its history limits keep none.")
		return nil
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tSTARTED\tVERDICT\tSEARCH\tANSWER (CACHE)\tCONVERSATION\tVISIBLE AFTER\tREAPPEARANCES\tPROBE ERRORS")
	for _, r := range h.Runs {
		started := "-"
		if r.StartTime != nil {
			started = r.StartTime.UTC().Format(timeLayout)
		}
		verdict := dash(r.Verdict)
		if r.CompletionTime == nil {
			verdict = "(" + dash(r.Phase) + ")"
		}
		var reappear, errs int32
		for _, s := range r.Surfaces {
			reappear += s.Reappearances
			errs += s.Probes.Errors
		}
		Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\n", r.Name, started, verdict,
			runSurfaceText(r, v1alpha1.SurfaceSearch), runSurfaceText(r, v1alpha1.SurfaceAnswer), runSurfaceText(r, v1alpha1.SurfaceConversation),
			secondsText(r.TimeToVisibilitySeconds, "-"), reappear, errs)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "OVER FINISHED RUNS\tRUNS\tP50\tP95\tMAX\tTREND (oldest → newest)")
	for _, sp := range h.Upper {
		// Upper bounds round up, as in the rows above.
		spreadRow(tw, sp.Surface+" upper bound", sp, format.Up)
	}
	spreadRow(tw, "Time to visibility", h.Visibility, format.Nearest)
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "· a run that established no value (still visible at the timeout, or probe errors); such runs are not in the percentiles.")
	return nil
}

// sloLine is the SLOs of the newest run, "Search 30s, Answer 1m".
func sloLine(runs []HistoryRun) string {
	if len(runs) == 0 {
		return ""
	}
	var parts []string
	for _, s := range runs[len(runs)-1].Surfaces {
		parts = append(parts, s.Surface+" "+format.HumanDuration(s.slo))
	}
	return strings.Join(parts, ", ")
}

// runSurfaceText is the run's interval on a surface; "-" when not probed
// and empty while the run is in flight.
func runSurfaceText(r HistoryRun, s v1alpha1.Surface) string {
	for _, rs := range r.Surfaces {
		if rs.Surface != string(s) {
			continue
		}
		if r.CompletionTime == nil {
			return ""
		}
		return format.Interval(rs.bounds)
	}
	return "-"
}

func spreadRow(tw io.Writer, label string, sp Spread, r format.Rounding) {
	runs := fmt.Sprint(sp.N)
	if sp.Missing > 0 {
		runs = fmt.Sprintf("%d (+%d without)", sp.N, sp.Missing)
	}
	p50, p95, top := "-", "-", "-"
	if sp.N > 0 {
		p50, p95, top = format.Rounded(sp.p50, r), format.Rounded(sp.p95, r), format.Rounded(sp.max, r)
	}
	Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", label, runs, p50, p95, top, sp.Sparkline)
}
