package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"sigs.k8s.io/yaml"
)

// metricName finds the metric names an expression reads. Our metrics and the
// controller-runtime ones the operator exports are all it may use.
var metricName = regexp.MustCompile(`\b(?:ragcanary|controller_runtime)_[a-z0-9_]+\b`)

// grafanaVariables are replaced before a dashboard query is sent to
// Prometheus, the way Grafana would expand them.
var grafanaVariables = strings.NewReplacer(
	"$__rate_interval", "1m",
	"$__interval", "15s",
	"$__range", "1h",
	"$namespace", ".*",
	"$corpus", ".*",
	"$persona", ".*",
)

// TestAlertRulesAgainstOperator sends every alert expression of the chart to
// a Prometheus that scraped the running operator: each must parse and read
// only metrics the operator really emitted.
func TestAlertRulesAgainstOperator(t *testing.T) {
	ensureScenario(t)
	queries := map[string]string{}
	for name, expr := range alertRules(t) {
		queries["alert "+name] = expr
	}
	if len(queries) < 12 {
		t.Fatalf("found %d alerts in alerts.yaml, want the 12 the chart documents", len(queries))
	}
	checkQueries(t, queries)
}

// alertRules maps each alert of the chart's alerts.yaml to its expression.
func alertRules(t *testing.T) map[string]string {
	t.Helper()
	var file struct {
		Groups []struct {
			Rules []struct {
				Alert string `json:"alert"`
				Expr  string `json:"expr"`
			} `json:"rules"`
		} `json:"groups"`
	}
	readYAML(t, "charts/ragcanary/files/alerts.yaml", &file)
	rules := map[string]string{}
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				rules[r.Alert] = r.Expr
			}
		}
	}
	return rules
}

// TestDashboardAgainstOperator does the same for every panel query and
// template variable of the Grafana dashboard.
func TestDashboardAgainstOperator(t *testing.T) {
	ensureScenario(t)
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	data, err := os.ReadFile(filepath.Join(env.root, "charts/ragcanary/files/dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("dashboard.json: %v", err)
	}
	queries := map[string]string{}
	for _, p := range dash.Panels {
		for i, target := range p.Targets {
			queries[fmt.Sprintf("panel %q target %d", p.Title, i)] = grafanaVariables.Replace(target.Expr)
		}
	}
	for _, v := range dash.Templating.List {
		if q, ok := v.Query.(string); ok {
			// label_values(selector, label) reads selector.
			if m := regexp.MustCompile(`^label_values\((.*),\s*\w+\)$`).FindStringSubmatch(q); m != nil {
				queries["variable "+v.Name] = grafanaVariables.Replace(m[1])
			}
		}
	}
	if len(queries) < 10 {
		t.Fatalf("found %d dashboard queries, want at least 10", len(queries))
	}
	checkQueries(t, queries)
}

// faultOnly are metrics whose series exist only while a fault this
// scenario's one unsharded manager never has is present, each with the
// test that proves the operator emits it. Their queries are still sent to
// Prometheus, which must accept them.
var faultOnly = map[string]string{
	// The leader's sharder, for a canary no live replica owns.
	"ragcanary_shard_unowned_canary": "internal/shard TestSharderExportsUnownedCanaries",
	// A content-freshness surface's lower bound, exported only while its
	// last run is censored (no upper bound); no freshness run here is.
	"ragcanary_last_run_content_freshness_lower_bound_seconds": "internal/metrics TestCollectorFreshnessSeries (censored freshness surface)",
}

// checkQueries fails for a query Prometheus rejects or one that names a
// metric the operator never emitted. Names are read back from Prometheus
// after a bounded wait so the last scrape has landed.
func checkQueries(t *testing.T, queries map[string]string) {
	t.Helper()
	names := map[string]bool{}
	for _, q := range queries {
		for _, n := range metricName.FindAllString(q, -1) {
			if _, ok := faultOnly[n]; !ok {
				names[n] = true
			}
		}
	}
	testutil.EventuallyEvery(t, 30*time.Second, time.Second/2, "every referenced metric scraped", func() error {
		emitted, err := emittedNames()
		if err != nil {
			return err
		}
		return neverEmitted(names, emitted, queries)
	})
	for name, q := range queries {
		if err := promQuery(q); err != nil {
			t.Errorf("%s: %v\n  query: %s", name, err, q)
		}
	}
}

// neverEmitted names each referenced metric Prometheus has not scraped and
// the queries that use it.
func neverEmitted(names, emitted map[string]bool, queries map[string]string) error {
	var missing []string
	for n := range names {
		if emitted[n] {
			continue
		}
		var users []string
		for name, q := range queries {
			if strings.Contains(q, n) {
				users = append(users, name)
			}
		}
		sort.Strings(users)
		missing = append(missing, fmt.Sprintf("metric %s is never emitted by the operator; used by %s", n, strings.Join(users, ", ")))
	}
	if len(missing) == 0 {
		return nil
	}
	sort.Strings(missing)
	return errors.New(strings.Join(missing, "\n"))
}

// emittedNames lists metric names Prometheus scraped from the operator.
func emittedNames() (map[string]bool, error) {
	var body struct {
		Status string   `json:"status"`
		Data   []string `json:"data"`
	}
	if err := getJSON(env.prometheusURL+"/api/v1/label/__name__/values", &body); err != nil {
		return nil, err
	}
	names := map[string]bool{}
	for _, n := range body.Data {
		names[n] = true
		// A histogram is referred to by its family name or its series.
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(n, suffix); ok {
				names[base] = true
			}
		}
	}
	return names, nil
}

// promQuery evaluates expr and reports a parse or evaluation error.
func promQuery(expr string) error {
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
	}
	err := getJSON(env.prometheusURL+"/api/v1/query?query="+url.QueryEscape(expr), &body)
	if err != nil {
		return err
	}
	if body.Status != "success" {
		return fmt.Errorf("prometheus rejected the query: %s", body.Error)
	}
	return nil
}

func getJSON(u string, into any) error {
	resp, err := http.Get(u)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
		return fmt.Errorf("%s: status %d: %w", u, resp.StatusCode, err)
	}
	return nil
}

func readYAML(t *testing.T, rel string, into any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(env.root, rel))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, into); err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
}
