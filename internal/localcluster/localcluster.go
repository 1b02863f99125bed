// Package localcluster runs a real Kubernetes control plane (etcd and
// kube-apiserver built from Go modules into bin/) for people and end-to-end
// tests, with the ragcanary CRDs installed and an admin kubeconfig written to
// a known path.
package localcluster

import (
	"fmt"
	"os"
	"path/filepath"

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
}

// Options say where the binaries, CRDs and kubeconfig are.
type Options struct {
	// BinDir holds kube-apiserver and etcd.
	BinDir string
	// CRDDir holds the CRD manifests to install.
	CRDDir string
	// Kubeconfig is where the admin kubeconfig is written.
	Kubeconfig string
}

// Start starts etcd and kube-apiserver, installs the CRDs and writes the
// kubeconfig. The caller must call Stop.
func Start(opts Options) (*Cluster, error) {
	for _, name := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(opts.BinDir, name)); err != nil {
			return nil, fmt.Errorf("%s not found in %s: run 'make envtest-assets' first", name, opts.BinDir)
		}
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
		_ = env.Stop()
		return nil, err
	}
	return c, nil
}

// writeKubeconfig provisions a cluster-admin user and writes its kubeconfig.
func (c *Cluster) writeKubeconfig() error {
	user, err := c.env.AddUser(envtest.User{Name: "ragcanary-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return fmt.Errorf("provisioning admin user: %w", err)
	}
	data, err := user.KubeConfig()
	if err != nil {
		return fmt.Errorf("rendering kubeconfig: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(c.Kubeconfig), 0o700); err != nil {
		return err
	}
	return os.WriteFile(c.Kubeconfig, data, 0o600)
}

// Stop stops the control plane, removes its data and the kubeconfig.
func (c *Cluster) Stop() error {
	err := c.env.Stop()
	if rmErr := os.Remove(c.Kubeconfig); rmErr != nil && !os.IsNotExist(rmErr) && err == nil {
		err = rmErr
	}
	return err
}
