// Command dashboard writes the Grafana dashboard shipped in the Helm chart
// (charts/ragcanary/files/dashboard.json). Panels are declared here so the
// JSON stays consistent; 'go generate ./...' (make generate) rewrites it and
// make verify fails if the committed file differs.
package main

import (
	"encoding/json"
	"fmt"
	"os"
)

//go:generate go run . ../../charts/ragcanary/files/dashboard.json

// sel is the label selector every panel applies from the template variables.
const sel = `namespace=~"$namespace", corpus=~"$corpus"`

// lastBound is each canary's last-run bound per surface: the upper, or the
// lower of a censored surface (a surface exports one of the two).
const lastBound = `(ragcanary_last_run_exclusion_upper_bound_seconds{` + sel + `, canary!=""} or ragcanary_last_run_exclusion_lower_bound_seconds{` + sel + `, canary!=""})`

// counted is the increase of a counter over window, counting a series that
// did not exist window ago with its highest value in the window: the
// operator creates a canary's counters with their first event, so they
// appear at 1 and increase() alone misses that event, and max_over_time
// still sees a series a manager restart left stale. Series are matched on
// all their labels.
func counted(metric, selector, window string) string {
	m := metric + "{" + selector + "}"
	return "((increase(" + m + "[" + window + "]) and " + m + " offset " + window + ")" +
		" or (max_over_time(" + m + "[" + window + "]) unless " + m + " offset " + window + "))"
}

type target struct {
	Expr         string `json:"expr"`
	LegendFormat string `json:"legendFormat,omitempty"`
	RefID        string `json:"refId"`
}

type panel struct {
	ID          int            `json:"id"`
	Title       string         `json:"title"`
	Description string         `json:"description,omitempty"`
	Type        string         `json:"type"`
	GridPos     map[string]int `json:"gridPos"`
	Datasource  map[string]any `json:"datasource"`
	Targets     []target       `json:"targets"`
	FieldConfig map[string]any `json:"fieldConfig,omitempty"`
}

// spec declares one panel; panels are laid out two per row.
type spec struct {
	title, description, kind, unit string
	queries                        [][2]string // expr, legend
}

var panels = []spec{
	{"Time-to-exclusion vs SLO (last run)", "The bound the last run's verdict turns on, per canary and surface, against the surface's exclusion SLO: the upper bound when exclusion was confirmed (it happened by then), else the lower bound of a censored run (it took at least that long). Both bounds of the interval are in the run's status. The SLO lines are the corpus's per surface, and a canary's own where it sets exclusionSLO.", "timeseries", "s", [][2]string{
		{`max by (namespace, canary, corpus, surface) (ragcanary_last_run_exclusion_upper_bound_seconds{` + sel + `})`, "{{canary}} {{surface}} upper"},
		{`max by (namespace, canary, corpus, surface) (ragcanary_last_run_exclusion_lower_bound_seconds{` + sel + `})`, "{{canary}} {{surface}} lower"},
		{`max by (namespace, corpus, surface) (ragcanary_corpus_surface_slo_seconds{` + sel + `, surface!="InFlight"})`, "{{corpus}} {{surface}} SLO"},
		{`max by (namespace, canary, corpus, surface) (ragcanary_canary_surface_slo_seconds{` + sel + `, surface!="InFlight"})`, "{{canary}} {{surface}} own SLO"},
	}},
	// The group path (a directory the target syncs from), a permissions
	// engine and the target itself lag differently; one series per path
	// shows which one a slow canary measures.
	{"Time-to-exclusion by revocation path (last run)", "The slowest last-run bound per revocation path and surface: the upper bound, or the lower bound of a censored run. The path is where the revocation was made: the target itself, a permissions engine (with the method), the directory the target syncs its groups from (RemoveFromGroup on a corpus with spec.directory: the group path), or the persona's OAuth2 authorization server (RevokeCredential).", "bargauge", "s", [][2]string{
		{`max by (revoked_in, method, surface) (` + lastBound + ` * on (namespace, canary) group_left (revoked_in, method) (max by (namespace, canary, revoked_in, method) (ragcanary_canary_revocation_path_info{` + sel + `})` +
			` or on (namespace, canary) label_replace(group by (namespace, canary) (` + lastBound + `), "revoked_in", "target", "", "")))`, "{{revoked_in}} {{method}} ({{surface}})"},
	}},
	{"Live exposure", "Seconds a revoked canary has still been visible in runs in progress; alertable before the run ends.", "timeseries", "s", [][2]string{
		{`max by (namespace, canary, corpus, surface) (ragcanary_live_exposure_seconds{` + sel + `})`, "{{canary}} {{surface}}"},
	}},
	// The quantiles and the censored runs sit side by side: quantiles of
	// upper bounds describe only the runs that ended, so the censored count
	// next to them says how much of the tail they leave out.
	{"Time-to-exclusion p50 / p95 / p99 (upper bound)", "Quantiles of confirmed exclusion upper bounds per corpus and surface. Runs censored at the timeout are not in them: see the censored runs beside this panel.", "timeseries", "s", [][2]string{
		{`histogram_quantile(0.5, sum by (le, corpus, surface) (rate(ragcanary_canary_exclusion_upper_bound_seconds_bucket{` + sel + `}[$__rate_interval])))`, "{{corpus}} {{surface}} p50"},
		{`histogram_quantile(0.95, sum by (le, corpus, surface) (rate(ragcanary_canary_exclusion_upper_bound_seconds_bucket{` + sel + `}[$__rate_interval])))`, "{{corpus}} {{surface}} p95"},
		{`histogram_quantile(0.99, sum by (le, corpus, surface) (rate(ragcanary_canary_exclusion_upper_bound_seconds_bucket{` + sel + `}[$__rate_interval])))`, "{{corpus}} {{surface}} p99"},
	}},
	{"Censored runs (no upper bound)", "Runs per corpus and surface that ended without an upper bound over the dashboard range: still visible at the timeout, left open by probe errors, or new content never seen. Anything above zero means the quantiles beside this panel understate the tail.", "bargauge", "short", [][2]string{
		{`sum by (corpus, surface) (` + counted("ragcanary_canary_censored_runs_total", sel, "$__range") + `)`, "{{corpus}} {{surface}}"},
	}},
	{"Censored share", "Per canary and surface, censored runs over measured runs (every verdict but SetupFailed) over the dashboard range. Both counters are created by their first event, and a series that appeared within the range counts in full, so the first censored run counts; a surface the last run measured, with measured runs and none censored, shows 0, a canary with no measured run shows nothing.", "stat", "percentunit", [][2]string{
		{`(sum by (namespace, canary, corpus, surface) (` + counted("ragcanary_canary_censored_runs_total", sel, "$__range") + `)` +
			` or on (namespace, canary, corpus, surface) (0 * group by (namespace, canary, corpus, surface) (ragcanary_last_run_exclusion_upper_bound_seconds{` + sel + `} or ragcanary_last_run_exclusion_lower_bound_seconds{` + sel + `})))` +
			` / on (namespace, canary, corpus) group_left sum by (namespace, canary, corpus) (` + counted("ragcanary_runs_total", sel+`, verdict!="SetupFailed"`, "$__range") + `)`, "{{canary}} {{surface}}"},
	}},
	{"Censored last runs: at least", "Canaries whose last run ended without an upper bound, at the lower bound they established: exclusion (or content freshness) took at least this long. Built from the objects, so it survives a manager restart; the distribution of censored lower bounds is ragcanary_canary_censored_lower_bound_seconds.", "timeseries", "s", [][2]string{
		{`max by (namespace, canary, corpus, surface) (ragcanary_last_run_exclusion_lower_bound_seconds{` + sel + `}) unless on (namespace, canary, corpus, surface) ragcanary_last_run_exclusion_upper_bound_seconds`, "{{canary}} {{surface}} exclusion ≥"},
		{`max by (namespace, canary, corpus, surface) (ragcanary_last_run_content_freshness_lower_bound_seconds{` + sel + `}) unless on (namespace, canary, corpus, surface) ragcanary_last_run_content_freshness_upper_bound_seconds`, "{{canary}} {{surface}} freshness ≥"},
	}},
	{"Content freshness vs SLO (last run)", "Content-freshness (UpdateContent) canaries: the time until the surface served only the new content (new visible, old gone) in the last run, against the content-freshness SLO: the upper bound, or the lower bound of a censored surface.", "timeseries", "s", [][2]string{
		{`max by (namespace, canary, corpus, surface) (ragcanary_last_run_content_freshness_upper_bound_seconds{` + sel + `})`, "{{canary}} {{surface}} upper"},
		{`max by (namespace, canary, corpus, surface) (ragcanary_last_run_content_freshness_lower_bound_seconds{` + sel + `})`, "{{canary}} {{surface}} lower"},
		{`max by (namespace, canary, corpus, surface) (ragcanary_canary_content_freshness_slo_seconds{` + sel + `})`, "{{canary}} {{surface}} SLO"},
	}},
	{"Content freshness p50 / p95 / p99 (upper bound)", "Quantiles of content-freshness upper bounds per corpus and surface; censored content runs are counted with the censored runs.", "timeseries", "s", [][2]string{
		{`histogram_quantile(0.5, sum by (le, corpus, surface) (rate(ragcanary_content_freshness_seconds_bucket{` + sel + `}[$__rate_interval])))`, "{{corpus}} {{surface}} p50"},
		{`histogram_quantile(0.95, sum by (le, corpus, surface) (rate(ragcanary_content_freshness_seconds_bucket{` + sel + `}[$__rate_interval])))`, "{{corpus}} {{surface}} p95"},
		{`histogram_quantile(0.99, sum by (le, corpus, surface) (rate(ragcanary_content_freshness_seconds_bucket{` + sel + `}[$__rate_interval])))`, "{{corpus}} {{surface}} p99"},
	}},
	{"Cache invalidation (answer surface)", "How long answers kept citing revoked content: last run's bounds and the p95 of upper bounds.", "timeseries", "s", [][2]string{
		{`max by (namespace, canary, corpus) (ragcanary_last_run_exclusion_upper_bound_seconds{` + sel + `, surface="Answer"})`, "{{canary}} upper"},
		{`histogram_quantile(0.95, sum by (le, corpus) (rate(ragcanary_cache_invalidation_seconds_bucket{` + sel + `}[$__rate_interval])))`, "{{corpus}} p95"},
	}},
	{"Run verdicts", "Finished canary runs by verdict over the dashboard range; a verdict's series appears with a canary's first run of it and counts in full.", "bargauge", "short", [][2]string{
		{`sum by (verdict) (` + counted("ragcanary_runs_total", sel, "$__range") + `)`, "{{verdict}}"},
	}},
	{"Isolation violations", "Control personas that saw a canary, and suite personas shown forbidden evidence. Anything above zero is a permission leak.", "stat", "short", [][2]string{
		{`sum by (namespace, kind, canary, suite, corpus) (increase(ragcanary_isolation_violations_total{` + sel + `}[$__range]))`, "{{kind}} {{canary}}{{suite}}"},
	}},
	{"Reappearances", "Revoked content that came back after being absent: a lagging replica or cache.", "timeseries", "short", [][2]string{
		{`sum by (corpus, surface) (increase(ragcanary_reappearances_total{` + sel + `}[$__rate_interval]))`, "{{corpus}} {{surface}}"},
	}},
	{"Time-to-visibility p50", "How soon a newly shared canary became retrievable.", "timeseries", "s", [][2]string{
		{`histogram_quantile(0.5, sum by (le, corpus) (rate(ragcanary_time_to_visibility_seconds_bucket{` + sel + `}[$__rate_interval])))`, "{{corpus}}"},
	}},
	{"Suite utility per persona", "Supported answers over answerable cases in the latest suite run.", "timeseries", "percentunit", [][2]string{
		{`max by (namespace, suite, persona) (ragcanary_suite_utility_ratio{` + sel + `, persona=~"$persona"})`, "{{suite}} {{persona}}"},
	}},
	{"Suite disclosure and false-block rates per persona", "Improper disclosures over required-block cases, and false blocks over answerable cases.", "timeseries", "percentunit", [][2]string{
		{`max by (namespace, suite, persona) (ragcanary_suite_disclosure_rate_ratio{` + sel + `, persona=~"$persona"})`, "{{suite}} {{persona}} disclosure"},
		{`max by (namespace, suite, persona) (ragcanary_suite_false_block_rate_ratio{` + sel + `, persona=~"$persona"})`, "{{suite}} {{persona}} false block"},
	}},
	{"Suite failed-to-abstain rate per persona", "Required-block cases the persona got an answer for (no forbidden ID leaked, but policy said refuse) over required-block cases, in the latest suite run. Zero tolerance by default.", "timeseries", "percentunit", [][2]string{
		{`max by (namespace, suite, persona) (ragcanary_suite_failed_to_abstain_rate_ratio{` + sel + `, persona=~"$persona"})`, "{{suite}} {{persona}}"},
	}},
	{"Suite stale-evidence rate per persona", "Answerable cases answered with support only from superseded versions (valid before the question's as-of time) over answerable cases, in the latest suite run.", "timeseries", "percentunit", [][2]string{
		{`max by (namespace, suite, persona) (ragcanary_suite_stale_rate_ratio{` + sel + `, persona=~"$persona"})`, "{{suite}} {{persona}}"},
	}},
	{"Probe errors", "Probes that errored, timed out or got unparseable replies: the check is broken, not necessarily the target.", "timeseries", "reqps", [][2]string{
		{`sum by (corpus, surface) (rate(ragcanary_probes_total{` + sel + `, outcome="error"}[$__rate_interval]))`, "{{corpus}} {{surface}} errors"},
		{`sum by (corpus) (rate(ragcanary_probes_total{` + sel + `}[$__rate_interval]))`, "{{corpus}} all probes"},
	}},
	{"Probe scheduling lag p95", "Delay between a probe's due time and its start (rate limit and load). It widens the measured intervals.", "timeseries", "s", [][2]string{
		{`histogram_quantile(0.95, sum by (le, corpus) (rate(ragcanary_probe_scheduling_lag_seconds_bucket{` + sel + `}[$__rate_interval])))`, "{{corpus}}"},
	}},
	{"In-flight delivery vs SLO (last run)", "Answers already streaming when access was revoked: time from the revocation request to the last canary content they delivered (0: none after it), against the post-revocation delivery SLO. Absent when not established.", "timeseries", "s", [][2]string{
		{`max by (namespace, canary, corpus) (ragcanary_last_run_post_revocation_delivery_seconds{` + sel + `})`, "{{canary}} delivery"},
		{`max by (namespace, corpus) (ragcanary_corpus_surface_slo_seconds{` + sel + `, surface="InFlight"})`, "{{corpus}} SLO"},
		{`max by (namespace, canary, corpus) (ragcanary_canary_surface_slo_seconds{` + sel + `, surface="InFlight"})`, "{{canary}} own SLO"},
	}},
	{"Sentinel sightings", "Probes by personas outside a sentinel canary's access list that saw its payload, per canary, persona and surface, over the dashboard range. Anything above zero is a leak through derived content (a digest, a summary); the run's status.sentinel.sightings names the carrier.", "bargauge", "short", [][2]string{
		{`sum by (namespace, canary, persona, surface) (increase(ragcanary_sentinel_sightings_total{` + sel + `}[$__range]))`, "{{canary}} {{persona}} {{surface}}"},
	}},
}

func variable(name, query string) map[string]any {
	return map[string]any{
		"name": name, "label": name, "type": "query", "query": query,
		"datasource": map[string]any{"type": "prometheus", "uid": "${datasource}"},
		"includeAll": true, "multi": true, "allValue": ".*", "refresh": 2,
		"current": map[string]any{"text": "All", "value": "$__all"},
	}
}

func dashboard() map[string]any {
	var out []panel
	for i, p := range panels {
		var targets []target
		for j, q := range p.queries {
			targets = append(targets, target{Expr: q[0], LegendFormat: q[1], RefID: string(rune('A' + j))})
		}
		out = append(out, panel{
			ID: i + 1, Title: p.title, Description: p.description, Type: p.kind,
			GridPos:     map[string]int{"h": 8, "w": 12, "x": (i % 2) * 12, "y": (i / 2) * 8},
			Datasource:  map[string]any{"type": "prometheus", "uid": "${datasource}"},
			Targets:     targets,
			FieldConfig: map[string]any{"defaults": map[string]any{"unit": p.unit}, "overrides": []any{}},
		})
	}
	return map[string]any{
		"title": "ragcanary", "uid": "ragcanary-fleet", "schemaVersion": 39, "version": 1,
		"tags": []string{"ragcanary", "rag", "permissions"}, "timezone": "utc", "refresh": "1m",
		"time":   map[string]any{"from": "now-24h", "to": "now"},
		"panels": out,
		"templating": map[string]any{"list": []any{
			map[string]any{"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Data source"},
			variable("namespace", `label_values(ragcanary_corpus_surface_slo_seconds, namespace)`),
			variable("corpus", `label_values(ragcanary_corpus_surface_slo_seconds{namespace=~"$namespace"}, corpus)`),
			variable("persona", `label_values(ragcanary_suite_utility_ratio{namespace=~"$namespace"}, persona)`),
		}},
	}
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: dashboard OUTPUT.json")
		os.Exit(2)
	}
	data, err := json.MarshalIndent(dashboard(), "", "  ")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := os.WriteFile(os.Args[1], append(data, '\n'), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
