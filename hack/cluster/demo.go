package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ragcanary/ragcanary/internal/dev/demo"
)

type demoOptions struct {
	dir, id, bin    string
	block           int
	refresh, runFor time.Duration
}

// demoNamespace holds the samples.
const demoNamespace = "ragcanary-demo"

// runDemo is make demo-cluster: the cluster, ragtarget and the operator as
// Pods from the images built here, the samples, and the canary table as
// runs complete, until Ctrl-C (or --for), then everything torn down.
func runDemo(ctx context.Context, o demoOptions, stdout io.Writer) (err error) {
	if o.runFor > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.runFor)
		defer cancel()
	}
	demo.Step("starting the one-node cluster (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kube-proxy, containerd, CoreDNS from bin/)")
	c, err := start(context.Background(), o.dir, o.id, o.block, o.bin, "")
	if err != nil {
		return err
	}
	defer func() {
		demo.Step("tearing the cluster down")
		err = errors.Join(err, c.Stop(context.Background()))
	}()
	if err := c.WaitReady(ctx); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "node Ready %s after the start\n", c.Ready.Sub(c.Started).Round(100*time.Millisecond))
	root, err := filepath.Abs(".")
	if err != nil {
		return err
	}
	t := demo.Tools{Root: root, Kubeconfig: c.Kubeconfig, StateDir: o.dir}
	digest, err := os.ReadFile(filepath.Join(root, "bin", "images", "manager.digest"))
	if err != nil {
		return err
	}
	demo.Step("installing ragtarget and the chart (image " + strings.TrimSpace(string(digest)) + ", never pulled)")
	if err := t.InstallOnCluster(ctx, demoNamespace, demo.ChartValues(strings.TrimSpace(string(digest)))); err != nil {
		return stopped(ctx, err)
	}
	target, err := t.RagtargetURL(ctx)
	if err != nil {
		return stopped(ctx, err)
	}
	demo.Step("planting the sample suite's documents in ragtarget through its Service (" + target + ")")
	if err := demo.PlantSuiteDocuments(ctx, root, target); err != nil {
		return stopped(ctx, err)
	}
	for _, obj := range []string{"revocationcanary/alice-grant-revocation", "revocationcanary/alice-assistant-revocation", "evalsuite/access-isolation"} {
		if _, err := t.Kubectl(ctx, "-n", demoNamespace, "annotate", "--overwrite", obj, "ragcanary.dev/run-now=demo-start"); err != nil {
			return stopped(ctx, err)
		}
	}
	fmt.Fprintf(stdout, "\nkubeconfig: %s\ntry: bin/kubectl --kubeconfig %s -n %s get ragcanary\n", c.Kubeconfig, c.Kubeconfig, demoNamespace)
	fmt.Fprintln(stdout, "Ctrl-C tears everything down.")
	watch(ctx, t, o.refresh, stdout)
	return nil
}

// watch prints the canary and suite tables every refresh until ctx ends.
func watch(ctx context.Context, t demo.Tools, refresh time.Duration, stdout io.Writer) {
	tick := time.NewTicker(refresh)
	defer tick.Stop()
	for {
		out, err := t.Kubectl(ctx, "-n", demoNamespace, "get", "revocationcanaries,canaryruns,evalsuites,suiterun")
		if ctx.Err() != nil {
			return
		}
		fmt.Fprintf(stdout, "\n--- %s\n%s", time.Now().Format(time.TimeOnly), out)
		if err != nil {
			fmt.Fprintln(stdout, err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// stopped drops an error that only says Ctrl-C came first.
func stopped(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}
