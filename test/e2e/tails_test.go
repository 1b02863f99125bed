package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/objects"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
)

// tailsTargetPath is where the scenario serves a ragtarget that loses
// revocations, on the e2e target's listener (inside the allowed URLs).
const tailsTargetPath = "/tails"

// tailsTarget serves it once the scenario started it.
var tailsTarget mount

// startTailsTarget serves a ragtarget that acknowledges a grant's removal
// without applying it: a source that loses revocations, so the canary on it
// is still visible at its timeout every time, a censored run by
// construction rather than by a race with a sync.
func startTailsTarget(ctx context.Context) error {
	// Fast syncs: the share is visible at once; only the lost revocation
	// keeps the canary visible.
	return startMounted(ctx, &tailsTarget, ragtarget.Config{ACLSyncInterval: 200 * time.Millisecond},
		func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodDelete && strings.Contains(r.URL.Path, "/grants/") {
					w.WriteHeader(http.StatusNoContent)
					return
				}
				next.ServeHTTP(w, r)
			})
		})
}

// startMounted starts a ragtarget with the scenario's credentials and a
// 200ms content sync (cfg adds the rest) and serves it on m, through wrap
// when set.
func startMounted(ctx context.Context, m *mount, cfg ragtarget.Config, wrap func(http.Handler) http.Handler) error {
	cfg.SourceToken = sourceToken
	cfg.Tokens = map[string]string{aliceToken: "alice@example.com", malloryToken: "mallory@example.com"}
	cfg.ContentSyncInterval = 200 * time.Millisecond
	svc, err := ragtarget.New(cfg)
	if err != nil {
		return err
	}
	svc.Start(ctx)
	h := svc.Handler()
	if wrap != nil {
		h = wrap(h)
	}
	m.set(h)
	return nil
}

// streamTargetPath is where the scenario serves a ragtarget whose chat
// streams slowly and never re-checks access: the in-flight canary's run
// measures a post-revocation delivery on it.
const streamTargetPath = "/stream"

// streamTarget serves it once the scenario started it.
var streamTarget mount

// startStreamTarget starts the streaming target.
func startStreamTarget(ctx context.Context) error {
	return startMounted(ctx, &streamTarget, ragtarget.Config{ACLSyncInterval: 200 * time.Millisecond,
		StreamChunkInterval: 150 * time.Millisecond}, nil)
}

// tailsObjects are the scenario's content-freshness canary (on the main
// ragtarget, whose content sync runs every 500ms) and its censored canary
// (on the target that loses revocations). Each runs once.
func tailsObjects() []client.Object {
	ref := func(n string) v1alpha1.LocalObjectReference { return v1alpha1.LocalObjectReference{Name: n} }
	dur := func(d time.Duration) metav1.Duration { return metav1.Duration{Duration: d} }
	hourly := dur(time.Hour)
	probing := func(timeout time.Duration, surfaces ...v1alpha1.Surface) v1alpha1.Probing {
		return v1alpha1.Probing{Interval: dur(300 * time.Millisecond), Confirmations: 2,
			VisibilityTimeout: dur(30 * time.Second), ExclusionTimeout: dur(timeout), MaxInterval: dur(time.Minute),
			Surfaces: surfaces}
	}
	canary := func(name, corpus string, method v1alpha1.RevocationMethod, p v1alpha1.Probing) *v1alpha1.RevocationCanary {
		return &v1alpha1.RevocationCanary{
			ObjectMeta: metav1.ObjectMeta{Namespace: scenarioNamespace, Name: name,
				Annotations: map[string]string{v1alpha1.AnnotationRunNow: "first"}},
			Spec: v1alpha1.RevocationCanarySpec{
				Scheduling: v1alpha1.Scheduling{Schedule: v1alpha1.Schedule{Every: &hourly}},
				CanarySpec: v1alpha1.CanarySpec{CorpusRef: ref(corpus), PersonaRef: ref("alice"),
					ControlPersonaRefs: []v1alpha1.LocalObjectReference{ref("mallory")},
					Revocation:         v1alpha1.Revocation{Method: method}, Probing: p},
			},
		}
	}
	return []client.Object{
		scenarioCorpus(scenarioNamespace, "stuck", env.ragtargetURL+tailsTargetPath),
		canary("alice-stuck", "stuck", v1alpha1.RevokeRemoveGrant, probing(5*time.Second, v1alpha1.SurfaceSearch)),
		scenarioCorpus(scenarioNamespace, "streaming", env.ragtargetURL+streamTargetPath,
			objects.Surfaces(v1alpha1.CorpusSurfaces{Chat: &v1alpha1.ChatSurface{Type: v1alpha1.ChatOpenAI,
				URL: env.ragtargetURL + streamTargetPath + "/v1/", Model: "ragtarget", Stream: true}})),
		canary("alice-in-flight", "streaming", v1alpha1.RevokeRemoveGrant, probing(60*time.Second, v1alpha1.SurfaceSearch, v1alpha1.SurfaceInFlight)),
		canary("alice-edit", "kb", v1alpha1.RevokeUpdateContent, probing(60*time.Second, v1alpha1.SurfaceSearch, v1alpha1.SurfaceAnswer)),
	}
}

// waitScraping waits until Prometheus has scraped the manager. A counter's
// first increase is visible to increase() only if its zero was scraped
// first; the scenario's censored run ends seconds after its canary's
// counters are created at zero, so scraping must already be running.
func waitScraping() error {
	return waitFor(time.Minute, time.Second/2, "Prometheus scraping the manager", func() (bool, error) {
		got, err := promVector(`up{job="ragcanary"} == 1`)
		return len(got) > 0, err
	})
}

// waitTailsScenario waits until both tails canaries finished their run.
func waitTailsScenario(ctx context.Context) error {
	for _, name := range []string{"alice-stuck", "alice-edit", "alice-in-flight"} {
		if err := waitFor(2*time.Minute, time.Second/2, "a finished run of "+name, func() (bool, error) {
			var c v1alpha1.RevocationCanary
			err := env.client.Get(ctx, client.ObjectKey{Namespace: scenarioNamespace, Name: name}, &c)
			return err == nil && c.Status.LastRun != nil && c.Status.LastRun.Verdict != "", err
		}); err != nil {
			return err
		}
	}
	return nil
}

// TestCensoredRunsReachPrometheus: the run censored at its timeout is in
// the metrics a real Prometheus scraped, the censored-runs alert expression
// fires for it (and only for it), and the dashboard's censored panels show
// it beside the quantiles. The content-freshness canary's run is on its
// panel and within its SLO.
func TestCensoredRunsReachPrometheus(t *testing.T) {
	ensureScenario(t)
	ctx := context.Background()
	var stuck, edit v1alpha1.RevocationCanary
	for name, c := range map[string]*v1alpha1.RevocationCanary{"alice-stuck": &stuck, "alice-edit": &edit} {
		if err := env.client.Get(ctx, client.ObjectKey{Namespace: scenarioNamespace, Name: name}, c); err != nil {
			t.Fatal(err)
		}
	}
	if v := stuck.Status.LastRun.Verdict; v != v1alpha1.VerdictNotExcluded {
		t.Fatalf("the canary on the target that loses revocations ended %s, want NotExcluded", v)
	}
	if v := edit.Status.LastRun.Verdict; v != v1alpha1.VerdictSLOMet {
		t.Fatalf("the content-freshness canary ended %s, want SLOMet", v)
	}

	alert := alertExpr(t, "RagcanaryCanaryRunsCensored")
	var firing []promSample
	testutil.EventuallyEvery(t, time.Minute, time.Second/2, "the censored-runs alert firing for alice-stuck", func() error {
		var err error
		if firing, err = promVector(alert); err != nil {
			return err
		}
		if !hasSample(firing, map[string]string{"canary": "alice-stuck", "surface": "Search"}, 1) {
			raw, qerr := promVector(`ragcanary_canary_censored_runs_total{canary="alice-stuck",surface="Search"}[10m]`)
			return fmt.Errorf("alert samples: %v\n  counter samples: %v (%v)", firing, raw, qerr)
		}
		return nil
	})
	// Other tests' runs end censored on purpose (the conversation test's
	// hand-made history run is NotExcluded by design), so "only for it"
	// is a claim about this scenario's namespace.
	for _, s := range firing {
		if s.Metric["namespace"] == scenarioNamespace && s.Metric["canary"] != "alice-stuck" {
			t.Errorf("censored-runs alert fires for %v, whose runs all ended", s.Metric)
		}
	}

	panels := dashboardQueries(t)
	for _, tc := range []struct {
		panel  string
		labels map[string]string
		// min is the least value the series must show.
		min float64
	}{
		{"Censored runs (no upper bound)", map[string]string{"corpus": "stuck", "surface": "Search"}, 1},
		// The one run of alice-stuck was censored: a share of 1.
		{"Censored share", map[string]string{"canary": "alice-stuck", "surface": "Search"}, 1},
		// Still visible at its 5s timeout: at least 5s.
		{"Censored last runs: at least", map[string]string{"canary": "alice-stuck", "surface": "Search"}, 5},
		// alice-grant runs every 20s, so its upper bounds have a rate.
		{"Time-to-exclusion p50 / p95 / p99 (upper bound)", map[string]string{"corpus": "kb", "surface": "Search"}, 0},
		{"Content freshness vs SLO (last run)", map[string]string{"canary": "alice-edit", "surface": "Answer"}, 0},
	} {
		expr, ok := panels[tc.panel]
		if !ok {
			t.Errorf("dashboard has no panel %q", tc.panel)
			continue
		}
		testutil.EventuallyEvery(t, time.Minute, time.Second/2, "panel "+tc.panel, func() error {
			got, err := promVector(expr)
			if err != nil {
				return err
			}
			if !hasSample(got, tc.labels, tc.min) {
				return fmt.Errorf("samples %v, want %v at least %v\n  query: %s", got, tc.labels, tc.min, expr)
			}
			return nil
		})
	}
	// Met its SLO: the content-freshness alert stays silent for it.
	got, err := promVector(alertExpr(t, "RagcanaryContentFreshnessSLOBreached"))
	if err != nil {
		t.Fatal(err)
	}
	if hasSample(got, map[string]string{"canary": "alice-edit"}, 0) {
		t.Errorf("content-freshness alert fires for a canary that met its SLO: %v", got)
	}
}

// promSample is one element of an instant vector.
type promSample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
	Values [][2]any          `json:"values"`
}

func (s promSample) float() float64 {
	v, _ := s.Value[1].(string)
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 0
	}
	return f
}

// promVector evaluates expr now and returns its samples.
func promVector(expr string) ([]promSample, error) {
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []promSample `json:"result"`
		} `json:"data"`
	}
	if err := getJSON(env.prometheusURL+"/api/v1/query?query="+url.QueryEscape(expr), &body); err != nil {
		return nil, err
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("prometheus rejected the query: %s", body.Error)
	}
	return body.Data.Result, nil
}

// hasSample reports a sample carrying labels with a value of at least min.
func hasSample(samples []promSample, labels map[string]string, min float64) bool {
	for _, s := range samples {
		match := true
		for k, v := range labels {
			match = match && s.Metric[k] == v
		}
		if match && s.float() >= min {
			return true
		}
	}
	return false
}

// alertExpr is the expression of the chart's alert name.
func alertExpr(t *testing.T, name string) string {
	t.Helper()
	expr, ok := alertRules(t)[name]
	if !ok {
		t.Fatalf("alerts.yaml has no alert %s", name)
	}
	return expr
}

// dashboardRange expands the Grafana variables for a dashboard showing the
// last hour: rates over the hour, so a run finished minutes ago (before the
// restart tests, say) still counts, as on a dashboard zoomed to an hour.
var dashboardRange = strings.NewReplacer(
	"$__rate_interval", "1h", "$__interval", "15s", "$__range", "1h",
	"$namespace", ".*", "$corpus", ".*", "$persona", ".*",
)

// dashboardQueries maps each panel title to its first query, with the
// Grafana variables expanded (dashboardRange).
func dashboardQueries(t *testing.T) map[string]string {
	t.Helper()
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	data, err := os.ReadFile(filepath.Join(env.root, "charts/ragcanary/files/dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range dash.Panels {
		if len(p.Targets) > 0 {
			out[p.Title] = dashboardRange.Replace(p.Targets[0].Expr)
		}
	}
	return out
}

// TestInFlightDeliveryReachesPrometheus: the in-flight canary's stream
// (never re-authorised) delivered canary content after the revocation
// request, and the operator's gauge a real Prometheus scraped carries the
// delivery its status recorded.
func TestInFlightDeliveryReachesPrometheus(t *testing.T) {
	ensureScenario(t)
	var c v1alpha1.RevocationCanary
	if err := env.client.Get(context.Background(), client.ObjectKey{Namespace: scenarioNamespace, Name: "alice-in-flight"}, &c); err != nil {
		t.Fatal(err)
	}
	m := c.Status.LastRun.InFlight
	if m == nil || m.PostRevocationDelivery == nil || m.PostRevocationDelivery.Duration <= 0 || m.CanaryBytesAfterRequest == 0 {
		t.Fatalf("last run %s (%s): in-flight %+v, want canary content delivered after the request", c.Status.LastRun.Verdict, c.Status.LastRun.Name, m)
	}
	want := m.PostRevocationDelivery.Seconds()
	testutil.EventuallyEvery(t, time.Minute, time.Second/2, "the delivery gauge scraped", func() error {
		got, err := promVector(`ragcanary_last_run_post_revocation_delivery_seconds{canary="alice-in-flight"}`)
		if err != nil {
			return err
		}
		if !hasSample(got, map[string]string{"canary": "alice-in-flight"}, want) {
			return fmt.Errorf("samples %v, want %v", got, want)
		}
		return nil
	})
}
