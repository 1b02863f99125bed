// Package kubetest starts the real kube-apiserver and etcd that the
// project's envtest suites run against, with the project's CRDs installed.
// It is apart from testutil so tests that need no API server do not link
// envtest.
package kubetest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

// NewScheme knows the core kinds and ragcanary.dev/v1alpha1.
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

// Env is a started API server.
type Env struct {
	*envtest.Environment
	Config *rest.Config
}

// Start starts an API server with the CRDs of the repository whose root is
// root (relative to the test's package directory), serving scheme's kinds.
// Its binaries come from $KUBEBUILDER_ASSETS, which must be set: envtest
// would otherwise look elsewhere and fail less clearly.
func Start(root string, scheme *runtime.Scheme) (*Env, error) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		return nil, errors.New("KUBEBUILDER_ASSETS is not set: export KUBEBUILDER_ASSETS=$PWD/bin, or run 'make test', which builds kube-apiserver and etcd into bin/")
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		Scheme:                scheme,
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting envtest: %w", err)
	}
	return &Env{Environment: env, Config: cfg}, nil
}

// ServiceAccountToken asks the TokenRequest API for a token of the
// ServiceAccount namespace/name lasting ttl, as the kubelet projects one
// into a Pod.
func ServiceAccountToken(ctx context.Context, c client.Client, namespace, name string, ttl time.Duration) (string, error) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	expiry := int64(ttl / time.Second)
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry}}
	if err := c.SubResource("token").Create(ctx, sa, req); err != nil {
		return "", fmt.Errorf("requesting a token for %s/%s: %w", namespace, name, err)
	}
	return req.Status.Token, nil
}
