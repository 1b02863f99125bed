// Command demo runs ragcanary end to end on this machine: a local control
// plane, the reference RAG target (ragtarget) with a visible ACL sync lag and
// an answer cache, the manager, and the sample Corpus, Personas and
// RevocationCanary. It prints the canary table as runs complete. Ctrl-C
// stops everything it started.
//
// Run it with 'make demo' (which builds the binaries it needs first).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/ragcanary/ragcanary/internal/dev/demo"
	"github.com/ragcanary/ragcanary/internal/dev/localcluster"
)

// Addresses and credentials the samples in config/samples expect.
const (
	ragtargetAddr = "127.0.0.1:8089"
	metricsAddr   = "127.0.0.1:8080"
	probeAddr     = "127.0.0.1:8081"
)

// samples applied to the cluster, in order.
var samples = []string{
	"config/samples/ragcanary_v1alpha1_corpus.yaml",
	"config/samples/ragcanary_v1alpha1_persona.yaml",
	"config/samples/ragcanary_v1alpha1_revocationcanary.yaml",
	"config/samples/ragcanary_v1alpha1_corpus_surfaces.yaml",
	"config/samples/ragcanary_v1alpha1_evalsuite.yaml",
}

func main() {
	runFor := flag.Duration("for", 0, "stop by itself after this long (0: run until Ctrl-C)")
	refresh := flag.Duration("refresh", 15*time.Second, "how often to print the canary table")
	aclSync := flag.Duration("acl-sync-interval", 10*time.Second, "ragtarget ACL sync interval: the revocation lag the canaries should measure")
	cacheTTL := flag.Duration("answer-cache-ttl", 20*time.Second, "ragtarget answer cache TTL")
	filterMode := flag.String("filter-mode", "prefilter", "ragtarget principal filter; none ignores access lists, so the sample suite and canaries fail on purpose (docs/eval.md)")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *runFor > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *runFor)
		defer cancel()
	}
	if err := run(ctx, *refresh, *aclSync, *cacheTTL, *filterMode); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, refresh, aclSync, cacheTTL time.Duration, filterMode string) error {
	kubeconfig := demo.Abs(".local/kubeconfig")
	demo.Step("starting the local control plane (etcd, kube-apiserver, kube-controller-manager from bin/)")
	cluster, err := localcluster.Start(localcluster.Options{BinDir: demo.Abs("bin"), CRDDir: demo.Abs("config/crd/bases"), Kubeconfig: kubeconfig})
	if err != nil {
		return err
	}
	defer func() {
		demo.Step("stopping the control plane")
		_ = cluster.Stop()
	}()

	demo.Step(fmt.Sprintf("starting ragtarget on %s (ACL sync every %s, answer cache %s, filter %s)", ragtargetAddr, aclSync, cacheTTL, filterMode))
	target, err := demo.StartProcess(".local", "demo", "ragtarget", demo.Abs("bin/ragtarget"),
		"--listen", ragtargetAddr,
		"--source-token", "demo-source-token",
		"--token", "demo-alice-token=alice@example.com",
		"--token", "demo-mallory-token=mallory@example.com",
		"--content-sync-interval", "2s",
		"--acl-sync-interval", aclSync.String(),
		"--answer-cache-ttl", cacheTTL.String(),
		"--filter-mode", filterMode)
	if err != nil {
		return err
	}
	defer demo.StopProcess("ragtarget", target)

	demo.Step("starting the manager")
	manager, err := demo.StartProcess(".local", "demo", "manager", demo.Abs("bin/manager"),
		"--kubeconfig", kubeconfig,
		"--metrics-bind-address", metricsAddr,
		"--metrics-secure=false",
		"--health-probe-bind-address", probeAddr,
		"--allowed-target-urls", "http://"+ragtargetAddr)
	if err != nil {
		return err
	}
	defer demo.StopProcess("manager", manager)

	demo.Step("planting the sample suite's documents in ragtarget")
	if err := demo.PlantSuiteDocuments(ctx, demo.Abs("."), "http://"+ragtargetAddr); err != nil {
		return err
	}

	demo.Step("applying samples")
	for _, s := range samples {
		if err := demo.Kubectl(ctx, kubeconfig, "", "apply", "-f", s); err != nil {
			return err
		}
	}
	// Start the first canary and suite runs now instead of at their first
	// scheduled time.
	for _, obj := range []string{"revocationcanary/alice-grant-revocation", "revocationcanary/alice-assistant-revocation", "evalsuite/access-isolation"} {
		if err := demo.Kubectl(ctx, kubeconfig, "", "annotate", "--overwrite", obj, "ragcanary.dev/run-now=demo-start"); err != nil {
			return err
		}
	}
	fmt.Printf("\nmetrics: http://%s/metrics   kubeconfig: %s\n", metricsAddr, kubeconfig)
	fmt.Printf("try: bin/kubectl --kubeconfig %s get ragcanary\n", kubeconfig)
	fmt.Println("Ctrl-C stops everything.")

	demo.WatchTable(ctx, kubeconfig, refresh, "corpora,personas,revocationcanaries,canaryruns,evalsuites,suiteruns")
	return nil
}
