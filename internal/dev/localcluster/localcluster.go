// Package localcluster runs a real Kubernetes control plane (etcd,
// kube-apiserver and kube-controller-manager built from Go modules into
// bin/) for people and end-to-end tests, with the ragcanary CRDs installed
// and an admin kubeconfig written to a known path. kube-controller-manager
// runs the garbage collector and the namespace controller, so owned objects
// and deleted namespaces go away as in a real cluster.
package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Cluster is a running control plane.
type Cluster struct {
	env *envtest.Environment
	// Config reaches the API server as cluster admin.
	Config *rest.Config
	// Kubeconfig is the path of the admin kubeconfig written for the cluster.
	Kubeconfig string
	// ControllerManager is the running kube-controller-manager.
	ControllerManager ControllerManager

	kcm *kcmProcess
	// kcmDir holds kcm's kubeconfig and serving certificate.
	kcmDir   string
	stopOnce sync.Once
	stopErr  error
}

// Options say where the binaries, CRDs and kubeconfig are.
type Options struct {
	// BinDir holds kube-apiserver, kube-controller-manager and etcd.
	BinDir string
	// CRDDir holds the CRD manifests to install.
	CRDDir string
	// Kubeconfig is where the admin kubeconfig is written.
	Kubeconfig string
	// ControllerManagerLog receives kube-controller-manager's output;
	// kube-controller-manager.log next to Kubeconfig when empty. It is
	// kept after Stop, for reading after a failure.
	ControllerManagerLog string
}

// binaries are what Start runs from BinDir.
var binaries = []string{"kube-apiserver", "etcd", "kube-controller-manager"}

// Start starts etcd and kube-apiserver, installs the CRDs, writes the
// kubeconfig and starts kube-controller-manager. It returns once every
// part is up; on an error nothing is left running. The caller must call
// Stop.
func Start(opts Options) (*Cluster, error) {
	for _, name := range binaries {
		if _, err := os.Stat(filepath.Join(opts.BinDir, name)); err != nil {
			return nil, fmt.Errorf("%s not found in %s: run 'make envtest-assets' first", name, opts.BinDir)
		}
	}
	if opts.ControllerManagerLog == "" {
		opts.ControllerManagerLog = filepath.Join(filepath.Dir(opts.Kubeconfig), "kube-controller-manager.log")
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: opts.BinDir,
		CRDDirectoryPaths:     []string{opts.CRDDir},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting control plane: %w", err)
	}
	c := &Cluster{env: env, Config: cfg, Kubeconfig: opts.Kubeconfig}
	if err := c.writeKubeconfig(); err != nil {
		_ = c.Stop()
		return nil, err
	}
	if err := c.startControllerManager(opts); err != nil {
		_ = c.Stop()
		return nil, err
	}
	return c, nil
}

// writeKubeconfig provisions a cluster-admin user and writes its kubeconfig.
func (c *Cluster) writeKubeconfig() error {
	return c.writeUserKubeconfig(envtest.User{Name: "ragcanary-admin", Groups: []string{"system:masters"}}, c.Kubeconfig)
}

func (c *Cluster) writeUserKubeconfig(u envtest.User, path string) error {
	user, err := c.env.AddUser(u, nil)
	if err != nil {
		return fmt.Errorf("provisioning user %s: %w", u.Name, err)
	}
	data, err := user.KubeConfig()
	if err != nil {
		return fmt.Errorf("rendering kubeconfig: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

// startControllerManager runs kcm as its own cluster admin: the namespace
// controller deletes every kind of namespaced object, more than the
// bootstrap kube-controller-manager role allows. A second call while it
// runs does nothing.
func (c *Cluster) startControllerManager(opts Options) error {
	if c.kcm != nil && c.kcm.running() {
		return nil
	}
	if c.kcmDir == "" {
		dir, err := os.MkdirTemp("", "localcluster-kcm-")
		if err != nil {
			return err
		}
		c.kcmDir = dir
	}
	kubeconfig := filepath.Join(c.kcmDir, "kubeconfig")
	if err := c.writeUserKubeconfig(envtest.User{Name: "system:kube-controller-manager", Groups: []string{"system:masters"}}, kubeconfig); err != nil {
		return err
	}
	p, err := startControllerManager(context.Background(), kcmConfig{
		binary:     filepath.Join(opts.BinDir, "kube-controller-manager"),
		kubeconfig: kubeconfig,
		certDir:    filepath.Join(c.kcmDir, "serving"),
	}, opts.ControllerManagerLog)
	if err != nil {
		return err
	}
	c.kcm, c.ControllerManager = p, p.info
	return nil
}

// Stop stops kube-controller-manager (first, so it does not outlive the API
// server it talks to), then the control plane, and removes their data and
// the kubeconfig. It waits for every process to exit. Calling it again
// returns the first result.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() { c.stopErr = c.stop() })
	return c.stopErr
}

func (c *Cluster) stop() error {
	if c.kcm != nil {
		c.kcm.stop()
	}
	errs := []error{c.env.Stop()}
	if c.kcmDir != "" {
		errs = append(errs, os.RemoveAll(c.kcmDir))
	}
	if err := os.Remove(c.Kubeconfig); err != nil && !os.IsNotExist(err) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
