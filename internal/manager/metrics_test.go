package manager

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/ragcanary/ragcanary/internal/dev/testutil"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/charttest"
	"github.com/ragcanary/ragcanary/internal/dev/testutil/kubetest"
	"github.com/ragcanary/ragcanary/internal/metrics"
)

// The chart is installed as release "rc" in releaseNamespace; the scrapers
// live in scraperNamespace.
const (
	releaseNamespace = "ragcanary-system"
	scraperNamespace = "monitoring"
	// reader is bound to the chart's metrics-reader ClusterRole through
	// metrics.readerSubjects; stranger is bound to nothing.
	reader   = "reader"
	stranger = "stranger"
)

var (
	adminClient client.Client
	// managerConfig reaches the API server as the chart's manager
	// ServiceAccount, holding only the RBAC the chart grants it.
	managerConfig *rest.Config
	// tokens are ServiceAccount tokens from the TokenRequest API.
	readerToken, strangerToken string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		fmt.Fprintln(os.Stderr, "KUBEBUILDER_ASSETS is not set: run with 'make test', which builds kube-apiserver and etcd into bin/")
		return 1
	}
	env := &envtest.Environment{}
	cfg, err := env.Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting envtest: %v\n", err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping envtest: %v\n", err)
		}
	}()
	if err := installChart(context.Background(), cfg); err != nil {
		fmt.Fprintf(os.Stderr, "installing the chart's RBAC: %v\n", err)
		return 1
	}
	// A series of ours, so a 200 is seen to carry ragcanary_ metrics.
	metrics.RunsTotal.WithLabelValues("team-a", "canary", "corpus", "passed").Inc()
	return m.Run()
}

// installChart applies the chart's ServiceAccounts and RBAC, rendered by
// bin/helm, and gets tokens for the manager and the two scrapers.
func installChart(ctx context.Context, cfg *rest.Config) error {
	var err error
	if adminClient, err = client.New(cfg, client.Options{}); err != nil {
		return err
	}
	for _, ns := range []string{releaseNamespace, scraperNamespace} {
		if err := adminClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			return err
		}
	}
	objs, err := renderChart()
	if err != nil {
		return err
	}
	managerSA, err := applyRBAC(ctx, objs)
	if err != nil {
		return err
	}
	managerToken, err := kubetest.ServiceAccountToken(ctx, adminClient, releaseNamespace, managerSA, time.Hour)
	if err != nil {
		return err
	}
	managerConfig = rest.AnonymousClientConfig(cfg)
	managerConfig.BearerToken = managerToken
	if readerToken, err = newServiceAccountToken(ctx, scraperNamespace, reader); err != nil {
		return err
	}
	strangerToken, err = newServiceAccountToken(ctx, scraperNamespace, stranger)
	return err
}

// renderChart renders the chart with the reader bound to its
// metrics-reader ClusterRole.
func renderChart() ([]unstructured.Unstructured, error) {
	return charttest.RenderObjects(filepath.Join("..", ".."), "rc", releaseNamespace, charttest.MetricsReader(scraperNamespace, reader)...)
}

// rbacKinds are what applyRBAC creates; the Deployment only names the
// ServiceAccount the manager runs as.
var rbacKinds = map[string]bool{"ServiceAccount": true, "ClusterRole": true, "ClusterRoleBinding": true, "Role": true, "RoleBinding": true}

// applyRBAC creates the manifest's ServiceAccounts and RBAC objects and
// returns the ServiceAccount the chart's Deployment runs the manager as.
func applyRBAC(ctx context.Context, objs []unstructured.Unstructured) (string, error) {
	managerSA := ""
	for _, obj := range objs {
		if obj.GetKind() == "Deployment" {
			managerSA, _, _ = unstructured.NestedString(obj.Object, "spec", "template", "spec", "serviceAccountName")
		}
		if !rbacKinds[obj.GetKind()] {
			continue
		}
		if err := adminClient.Create(ctx, &obj); err != nil {
			return "", fmt.Errorf("creating %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
	if managerSA == "" {
		return "", errors.New("the rendered Deployment names no ServiceAccount")
	}
	return managerSA, nil
}

// newServiceAccountToken creates a ServiceAccount and returns a token for it.
func newServiceAccountToken(ctx context.Context, namespace, name string) (string, error) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if err := adminClient.Create(ctx, sa); err != nil {
		return "", err
	}
	return kubetest.ServiceAccountToken(ctx, adminClient, namespace, name, time.Hour)
}

// serveMetrics starts the metrics server m configures, with the manager's
// identity, and returns its address.
func serveMetrics(t *testing.T, m MetricsServing) string {
	t.Helper()
	opts, err := m.Options()
	if err != nil {
		t.Fatal(err)
	}
	httpClient, err := rest.HTTPClientFor(managerConfig)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := metricsserver.NewServer(opts, managerConfig, httpClient)
	if err != nil {
		t.Fatal(err)
	}
	bound, ok := srv.(interface{ GetBindAddr() string })
	if !ok {
		t.Fatal("the metrics server does not report its address")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("metrics server: %v", err)
		}
	})
	testutil.EventuallyTrue(t, 10*time.Second, "the metrics server listens", func() bool { return bound.GetBindAddr() != "" })
	return bound.GetBindAddr()
}

// scrape is one GET of /metrics.
type scrape struct {
	status int
	body   string
	proto  int // HTTP major version
}

func get(c *http.Client, url, token string) (scrape, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return scrape{}, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return scrape{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return scrape{status: resp.StatusCode, body: string(body), proto: resp.ProtoMajor}, err
}

// tlsClient trusts roots, or any certificate when roots is nil; it offers
// HTTP/2 so a server that allowed it would negotiate it.
func tlsClient(roots *x509.CertPool) *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: roots, InsecureSkipVerify: roots == nil}, //nolint:gosec // the default certificate is self-signed
		ForceAttemptHTTP2: true,
	}}
}

// TestSecureMetricsAdmitOnlyReaders: with the manager's defaults, /metrics
// answers over TLS only a caller whose token the API server authenticates
// and whom the chart's metrics-reader ClusterRole lets GET /metrics; the
// manager's own access reviews run with the RBAC the chart grants it.
func TestSecureMetricsAdmitOnlyReaders(t *testing.T) {
	addr := serveMetrics(t, MetricsServing{BindAddress: "127.0.0.1:0", Secure: true})
	url := "https://" + addr + "/metrics"
	c := tlsClient(nil)
	tests := []struct {
		name  string
		token string
		// want is the status; only 200 may carry metrics.
		want int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"a token the API server does not know", "not-a-token", http.StatusInternalServerError},
		{"a ServiceAccount without the metrics-reader role", strangerToken, http.StatusForbidden},
		{"a ServiceAccount bound to the metrics-reader role", readerToken, http.StatusOK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := get(c, url, tc.token)
			if err != nil {
				t.Fatal(err)
			}
			if got.status != tc.want {
				t.Fatalf("status %d, want %d: %s", got.status, tc.want, got.body)
			}
			if hasSeries := strings.Contains(got.body, "ragcanary_runs_total"); hasSeries != (tc.want == http.StatusOK) {
				t.Errorf("ragcanary_ series in the reply: %v, want %v", hasSeries, tc.want == http.StatusOK)
			}
			if got.proto != 1 {
				t.Errorf("served over HTTP/%d; HTTP/2 is off unless enabled", got.proto)
			}
		})
	}
	t.Run("plain HTTP to the secure port", func(t *testing.T) {
		got, err := get(&http.Client{Timeout: 30 * time.Second}, "http://"+addr+"/metrics", readerToken)
		if err == nil && (got.status == http.StatusOK || strings.Contains(got.body, "ragcanary_")) {
			t.Fatalf("plain HTTP was answered with status %d and metrics", got.status)
		}
	})
}

// TestMetricsServeTheConfiguredCertificate: with a certificate directory,
// the server presents that certificate, so a scraper can verify it.
func TestMetricsServeTheConfiguredCertificate(t *testing.T) {
	dir := t.TempDir()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("ragcanary-metrics", []net.IP{net.IPv4(127, 0, 0, 1)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "cert.pem"), certPEM)
	writeFile(t, filepath.Join(dir, "key.pem"), keyPEM)
	addr := serveMetrics(t, MetricsServing{BindAddress: "127.0.0.1:0", Secure: true, CertDir: dir, CertName: "cert.pem", KeyName: "key.pem"})
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(certPEM) {
		t.Fatal("no certificate in the generated PEM")
	}
	got, err := get(tlsClient(roots), "https://"+addr+"/metrics", readerToken)
	if err != nil {
		t.Fatalf("a client trusting only the configured certificate: %v", err)
	}
	if got.status != http.StatusOK || !strings.Contains(got.body, "ragcanary_runs_total") {
		t.Fatalf("status %d: %s", got.status, got.body)
	}
}

// TestPlainMetricsForLocalRuns: --metrics-secure=false serves plain HTTP
// with no token, for local runs and the demos.
func TestPlainMetricsForLocalRuns(t *testing.T) {
	addr := serveMetrics(t, MetricsServing{BindAddress: "127.0.0.1:0"})
	got, err := get(&http.Client{Timeout: 30 * time.Second}, "http://"+addr+"/metrics", "")
	if err != nil {
		t.Fatal(err)
	}
	if got.status != http.StatusOK || !strings.Contains(got.body, "ragcanary_runs_total") {
		t.Fatalf("status %d: %s", got.status, got.body)
	}
}

// TestMetricsOptionsRefuseUnservableCertificates: a certificate that
// cannot be loaded stops the manager instead of being replaced by a
// self-signed one, and a certificate with plain HTTP is a contradiction.
func TestMetricsOptionsRefuseUnservableCertificates(t *testing.T) {
	empty := t.TempDir()
	garbled := t.TempDir()
	writeFile(t, filepath.Join(garbled, DefaultCertName), []byte("not a certificate"))
	writeFile(t, filepath.Join(garbled, DefaultKeyName), []byte("not a key"))
	tests := []struct {
		name string
		m    MetricsServing
		// wantErr is a substring of the refusal.
		wantErr string
	}{
		{"missing files", MetricsServing{Secure: true, CertDir: empty}, filepath.Join(empty, DefaultCertName)},
		{"files that are no key pair", MetricsServing{Secure: true, CertDir: garbled}, "loading the metrics certificate"},
		{"a certificate without TLS", MetricsServing{CertDir: garbled}, "--metrics-cert-path"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.m.Options()
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("got %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
