package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/ragcanary/ragcanary/internal/dev/testutil/charttest"
)

// parsed is the manager's settings from its flags with only the required
// allowlist given: flag.CommandLine takes each flag once per process, so
// every test reads this one parse.
var parsed = sync.OnceValues(func() (settings, error) {
	return parseFlags([]string{"--allowed-target-urls=https://rag.internal/"})
})

func defaultSettings(t *testing.T) settings {
	t.Helper()
	s, err := parsed()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// flagDefaults are the manager's defaults of the flags the chart passes,
// typed so the chart's text is compared in the flag's own units.
func flagDefaults(s settings) map[string]any {
	return map[string]any{
		"metrics-bind-address":                  s.metrics.BindAddress,
		"metrics-secure":                        s.metrics.Secure,
		"health-probe-bind-address":             s.probeAddr,
		"sharding":                              s.sharding,
		"shard-drain-timeout":                   s.shardDrain,
		"default-requests-per-second":           int64(s.defaults.RateLimit.RequestsPerSecond),
		"default-burst":                         int64(s.defaults.RateLimit.Burst),
		"max-reply-bytes-per-corpus":            s.defaults.RateLimit.ReplyBytes,
		"conversation-history-bytes":            s.historyBytes,
		"default-successful-runs-history-limit": int64(s.defaults.SuccessfulRunsHistoryLimit),
		"default-failed-runs-history-limit":     int64(s.defaults.FailedRunsHistoryLimit),
		"secret-cache-max-entries":              int64(s.secretCache.MaxEntries),
		"secret-cache-max-bytes":                s.secretCache.MaxBytes,
	}
}

// chartOwnSettings are flags the chart sets to something other than the
// manager's default on purpose, and why; each is a deployment choice, not
// a copy of a default.
var chartOwnSettings = map[string]string{
	"allowed-target-urls":       "required at install; the test sets it",
	"leader-elect":              "in a cluster replicas may be added, so the chart elects a leader; a local run needs none",
	"leader-election-namespace": "the release namespace, where the chart grants the Lease",
	"zap-log-level":             "controller-runtime's flag: operator.logLevel, the operator's own choice",
	"zap-encoder":               "JSON for log collectors; controller-runtime's flag",
	"metrics-cert-path":         "where the chart mounts metrics.certSecret",
}

// chartToggles render the flags the chart sets only when a toggle is on,
// with the values.yaml defaults of their settings.
var chartToggles = [][]string{{"--set", "sharding.enabled=true"}}

// TestChartDefaultsAreTheManagers: every flag the chart passes with its
// default values carries the manager's own default, in the flag's units
// (a duration, a byte count), unless chartOwnSettings says why not; so a
// default changed in Go and not in values.yaml (or the reverse) fails here.
func TestChartDefaultsAreTheManagers(t *testing.T) {
	defaults := flagDefaults(defaultSettings(t))
	for name, value := range chartFlags(t) {
		if _, own := chartOwnSettings[name]; own {
			continue
		}
		def, ok := defaults[name]
		if !ok {
			t.Errorf("the chart sets --%s=%s: add its manager default to flagDefaults, or say in chartOwnSettings why the chart chooses its own", name, value)
			continue
		}
		if err := sameValue(def, value); err != nil {
			t.Errorf("the chart's default --%s=%s differs from the manager's (%v): %v", name, value, def, err)
		}
	}
}

// chartFlags are the manager's arguments as the chart renders them with
// its defaults; a flag that only a toggle renders is read with the toggle on.
func chartFlags(t *testing.T) map[string]string {
	t.Helper()
	flags := renderedArgs(t)
	for _, toggle := range chartToggles {
		for name, value := range renderedArgs(t, toggle...) {
			if _, ok := flags[name]; !ok {
				flags[name] = value
			}
		}
	}
	return flags
}

// renderedArgs renders the chart (charttest, bin/helm) and returns the
// manager container's flags, name to value ("true" for a bare boolean flag).
func renderedArgs(t *testing.T, set ...string) map[string]string {
	t.Helper()
	objs := charttest.Objects(t, filepath.Join("..", ".."), "rc", "ragcanary",
		append([]string{"--set", "operator.allowedTargetURLs={https://rag.internal/}"}, set...)...)
	args, err := managerArgs(objs)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, a := range args {
		name, value, found := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !found {
			value = "true"
		}
		out[name] = value
	}
	return out
}

// managerArgs are the args of the manager container of the rendered Deployment.
func managerArgs(objs []unstructured.Unstructured) ([]string, error) {
	for _, o := range objs {
		if o.GetKind() != "Deployment" {
			continue
		}
		var d appsv1.Deployment
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &d); err != nil {
			return nil, err
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			if c.Name == "manager" {
				return c.Args, nil
			}
		}
	}
	return nil, errors.New("no Deployment with a manager container in the rendered chart")
}

// sameValue compares a flag's text with its default in the default's type.
func sameValue(def any, text string) error {
	var got any
	var err error
	switch def.(type) {
	case string:
		got = text
	case bool:
		got, err = strconv.ParseBool(text)
	case time.Duration:
		got, err = time.ParseDuration(text)
	case int64:
		got, err = strconv.ParseInt(text, 10, 64)
	default:
		return fmt.Errorf("no comparison for a %T default", def)
	}
	if err != nil {
		return err
	}
	if got != def {
		return errors.New("values.yaml and the Go default disagree")
	}
	return nil
}
