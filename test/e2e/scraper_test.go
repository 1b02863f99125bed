package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ragcanary/ragcanary/internal/dev/testutil/charttest"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/kubetest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The e2e Prometheus scrapes as this ServiceAccount, bound to the chart's
// metrics-reader ClusterRole through metrics.readerSubjects, as a
// cluster's Prometheus would be.
const (
	scraperNamespace = "monitoring"
	scraperName      = "prometheus"
)

// grantScraper applies the chart's metrics-reader ClusterRole and its
// binding to the scraper, and writes a token of the scraper to a file.
func grantScraper(ctx context.Context, tmp string) (string, error) {
	objs, err := renderScraperRBAC()
	if err != nil {
		return "", err
	}
	if err := env.client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: scraperNamespace}}); err != nil {
		return "", err
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: scraperNamespace, Name: scraperName}}
	if err := env.client.Create(ctx, sa); err != nil {
		return "", err
	}
	for _, obj := range objs {
		if err := env.client.Create(ctx, &obj); err != nil {
			return "", fmt.Errorf("creating %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
	// The token outlives the e2e run, as the kubelet's projected one would.
	token, err := kubetest.ServiceAccountToken(ctx, env.client, sa.Namespace, sa.Name, 2*time.Hour)
	if err != nil {
		return "", err
	}
	path := filepath.Join(tmp, "scraper-token")
	return path, os.WriteFile(path, []byte(token), 0o600)
}

// renderScraperRBAC renders the chart's metrics-reader template.
func renderScraperRBAC() ([]unstructured.Unstructured, error) {
	return charttest.RenderObjects(env.root, "e2e", releaseNamespace,
		append([]string{"--show-only", "templates/metrics-reader.yaml"}, charttest.MetricsReader(scraperNamespace, scraperName)...)...)
}

// TestManagerServesMetricsOnlyToReaders: the manager binary, started with
// no metrics flag but the address, serves /metrics over TLS to the
// scraper's token, refuses a request without one, and answers no plain
// HTTP; Prometheus, configured as the chart's ServiceMonitor, scrapes it.
func TestManagerServesMetricsOnlyToReaders(t *testing.T) {
	// A test before this one may have restarted the manager.
	if err := waitListening(env.metricsURL, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := waitScraping(); err != nil {
		t.Error(err)
	}
	token, err := os.ReadFile(env.scraperTokenFile)
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the manager's certificate is self-signed
	}}
	for _, tc := range []struct {
		name  string
		token string
		want  int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"the scraper's token", string(token), http.StatusOK},
	} {
		status, body, err := fetchMetrics(c, env.metricsURL, tc.token)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if status != tc.want {
			t.Errorf("%s: status %d, want %d", tc.name, status, tc.want)
		}
		// The reconcilers' series exist from the start; ours only once a
		// canary has run.
		if hasSeries := strings.Contains(body, "controller_runtime_reconcile_total"); hasSeries != (tc.want == http.StatusOK) {
			t.Errorf("%s: the manager's series in the reply: %v", tc.name, hasSeries)
		}
	}
	plain := "http://" + strings.TrimPrefix(env.metricsURL, "https://")
	if status, body, err := fetchMetrics(&http.Client{Timeout: 30 * time.Second}, plain, string(token)); err == nil && (status == http.StatusOK || strings.Contains(body, "controller_runtime_")) {
		t.Errorf("plain HTTP was answered with status %d and metrics", status)
	}
}

func fetchMetrics(c *http.Client, url, token string) (int, string, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}
