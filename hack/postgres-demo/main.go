// Command postgres-demo runs ragcanary's canaries against a local
// PostgreSQL pair: a primary the canaries write to and a hot standby,
// applying WAL a few seconds late, that personas read from — the lag an
// application reading from a replica has. It starts a local control plane,
// the pair (loopback only, data in a temporary directory), the manager with
// an allowlist of exactly those two servers, a Postgres Corpus with the
// reference schema, two personas and one RevocationCanary per revocation
// method, and prints the table as runs complete. Ctrl-C stops everything.
//
// Run it with 'make demo-postgres'.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ragcanary/ragcanary/internal/dev/demo"
	"github.com/ragcanary/ragcanary/internal/dev/localcluster"
	"github.com/ragcanary/ragcanary/internal/dev/pgtest"
)

// Its own ports and directory, so it can run beside 'make demo'.
const (
	metricsAddr = "127.0.0.1:8082"
	probeAddr   = "127.0.0.1:8083"
	localDir    = ".local/postgres-demo"
	// Demo roles: passwords only ever go into the cluster's Secrets.
	writerPassword = "demo-writer-password"
	readerPassword = "demo-reader-password"
)

func main() {
	runFor := flag.Duration("for", 0, "stop by itself after this long (0: run until Ctrl-C)")
	refresh := flag.Duration("refresh", 15*time.Second, "how often to print the canary table")
	delay := flag.Duration("apply-delay", 5*time.Second, "the standby's recovery_min_apply_delay: the lag the canaries should measure")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *runFor > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *runFor)
		defer cancel()
	}
	if err := run(ctx, *refresh, *delay); err != nil {
		fmt.Fprintln(os.Stderr, "postgres-demo:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, refresh, delay time.Duration) error {
	kubeconfig := demo.Abs(filepath.Join(localDir, "kubeconfig"))
	if err := os.MkdirAll(demo.Abs(localDir), 0o755); err != nil {
		return err
	}
	demo.Step("starting the local control plane (etcd, kube-apiserver, kube-controller-manager from bin/)")
	cluster, err := localcluster.Start(localcluster.Options{BinDir: demo.Abs("bin"), CRDDir: demo.Abs("config/crd/bases"), Kubeconfig: kubeconfig})
	if err != nil {
		return err
	}
	defer func() {
		demo.Step("stopping the control plane")
		_ = cluster.Stop()
	}()

	demo.Step("starting a PostgreSQL primary")
	primary, err := pgtest.StartPrimary()
	if err != nil {
		return err
	}
	defer func() {
		demo.Step("stopping the primary and removing its data")
		primary.StopAndRemove()
	}()
	if err := primary.ExecAll(
		"create role writer login password '"+writerPassword+"'",
		"grant create on database postgres to writer",
		"create role reader login password '"+readerPassword+"'",
	); err != nil {
		return err
	}
	demo.Step(fmt.Sprintf("starting a hot standby applying WAL %s after commit", delay))
	standby, err := primary.StartStandby(delay)
	if err != nil {
		return err
	}
	defer func() {
		demo.Step("stopping the standby")
		standby.Stop()
	}()
	fmt.Printf("    primary 127.0.0.1:%d, standby 127.0.0.1:%d\n", primary.Port, standby.Port)

	demo.Step("starting the manager")
	allowed := fmt.Sprintf("postgres://127.0.0.1:%d,postgres://127.0.0.1:%d", primary.Port, standby.Port)
	manager, err := demo.StartProcess(localDir, "demo-postgres", "manager", demo.Abs("bin/manager"),
		"--kubeconfig", kubeconfig,
		"--metrics-bind-address", metricsAddr,
		"--metrics-secure=false",
		"--health-probe-bind-address", probeAddr,
		"--allowed-target-urls", allowed)
	if err != nil {
		return err
	}
	defer demo.StopProcess("manager", manager)

	demo.Step("applying the Postgres corpus, personas and canaries")
	objects := manifests(primary.DSN("writer", writerPassword), standby.DSN("reader", readerPassword))
	if err := demo.Kubectl(ctx, kubeconfig, objects, "apply", "-f", "-"); err != nil {
		return err
	}
	for _, m := range methods {
		if err := demo.Kubectl(ctx, kubeconfig, "", "annotate", "--overwrite", "revocationcanary/"+canaryName(m), "ragcanary.dev/run-now=demo-start"); err != nil {
			return err
		}
	}
	fmt.Printf("\nmetrics: http://%s/metrics   kubeconfig: %s\n", metricsAddr, kubeconfig)
	fmt.Printf("every method should measure about %s: the standby's apply delay\n", delay)
	fmt.Println("Ctrl-C stops everything.")

	demo.WatchTable(ctx, kubeconfig, refresh, "corpora,personas,revocationcanaries,canaryruns")
	return nil
}

var methods = []string{"RemoveGrant", "RemoveFromGroup", "DeleteDocument"}

func canaryName(method string) string { return "pg-" + strings.ToLower(method) }

// manifests are the demo's objects. A Postgres corpus identifies personas
// by subject and never reads their Secret (docs/postgres.md); the persona
// Secret exists only because the Persona controller's Ready checks it.
func manifests(writerDSN, readerDSN string) string {
	var b strings.Builder
	for _, s := range []struct{ name, key, value string }{
		{"pg-writer", "dsn", writerDSN}, {"pg-reader", "dsn", readerDSN}, {"unused-for-postgres", "token", "unused"},
	} {
		fmt.Fprintf(&b, `apiVersion: v1
kind: Secret
metadata:
  name: %s
  labels: {ragcanary.dev/credential: "true"}
stringData:
  %s: %s
---
`, s.name, s.key, strconv.Quote(s.value))
	}
	b.WriteString(`apiVersion: ragcanary.dev/v1alpha1
kind: Corpus
metadata: {name: postgres}
spec:
  driver:
    type: Postgres
    timeout: 5s
    postgres:
      dsnSecretRef: {name: pg-writer, key: dsn}
      readDSNSecretRef: {name: pg-reader, key: dsn}
      schema: rag
      manageSchema: true
  healthCheckInterval: 10s
  freshness: {exclusionSLO: 30s}
---
`)
	for _, p := range []string{"alice", "mallory"} {
		fmt.Fprintf(&b, `apiVersion: ragcanary.dev/v1alpha1
kind: Persona
metadata: {name: %[1]s}
spec:
  subject: %[1]s@example.com
  credentialSecretRef: {name: unused-for-postgres, key: token}
---
`, p)
	}
	for _, m := range methods {
		group := ""
		if m == "RemoveFromGroup" {
			group = "\n    group: engineering"
		}
		fmt.Fprintf(&b, `apiVersion: ragcanary.dev/v1alpha1
kind: RevocationCanary
metadata: {name: %s}
spec:
  schedule: {every: 1m}
  corpusRef: {name: postgres}
  personaRef: {name: alice}
  controlPersonaRefs: [{name: mallory}]
  revocation:
    method: %s%s
  probing:
    interval: 250ms
    confirmations: 3
    visibilityTimeout: 1m
    exclusionTimeout: 2m
    surfaces: [Search]
  exclusionSLO: 30s
---
`, canaryName(m), m, group)
	}
	return b.String()
}
