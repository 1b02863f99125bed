package shared

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CacheOptions are the manager cache settings the reconcilers are written
// for. Managed fields are dropped from every cached object: no reconciler
// reads them, status is written as merge patches computed between two
// cached copies, and an update that omits them leaves the server's copy
// alone. On a fleet of active runs they were a few KiB of every CanaryRun,
// RevocationCanary and Secret the cache holds (make bench-canaries).
// namespace, when set, limits the cache to that namespace.
func CacheOptions(namespace string) cache.Options {
	opts := cache.Options{DefaultTransform: cache.TransformStripManagedFields()}
	if namespace != "" {
		opts.DefaultNamespaces = map[string]cache.Config{namespace: {}}
	}
	return opts
}

// ScopeSecrets limits the Secret caches to namespaces, the namespaces the
// chart's secretNamespaces value binds Secret access in: a cluster-wide
// Secret watch needs a cluster-wide grant, and without it the cache never
// syncs and no controller starts. Empty namespaces leave opts as they are.
//
// The cache delegates by group, version and kind, so the one &corev1.Secret{}
// entry also scopes the metadata-only informer that the Secret watches
// (builder.OnlyMetadata, a PartialObjectMetadata of kind Secret) start.
// When opts already limit the cache to a namespace, Secrets are cached only
// where both allow; a configuration where none is left is refused, since it
// would silently watch no Secret at all.
func ScopeSecrets(opts cache.Options, namespaces []string) (cache.Options, error) {
	if len(namespaces) == 0 {
		return opts, nil
	}
	if err := checkNamespaceNames(namespaces); err != nil {
		return opts, err
	}
	scoped := map[string]cache.Config{}
	for _, ns := range namespaces {
		if _, watched := opts.DefaultNamespaces[ns]; watched || len(opts.DefaultNamespaces) == 0 {
			scoped[ns] = cache.Config{}
		}
	}
	if len(scoped) == 0 {
		return opts, fmt.Errorf("no Secret namespace (%s) is a watched namespace (%s)",
			strings.Join(namespaces, ","), strings.Join(slices.Sorted(maps.Keys(opts.DefaultNamespaces)), ","))
	}
	byObject := make(map[client.Object]cache.ByObject, len(opts.ByObject)+1)
	maps.Copy(byObject, opts.ByObject)
	byObject[&corev1.Secret{}] = cache.ByObject{Namespaces: scoped}
	opts.ByObject = byObject
	return opts, nil
}

func checkNamespaceNames(namespaces []string) error {
	for _, ns := range namespaces {
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return fmt.Errorf("secret namespace %q is not a namespace name: %s", ns, strings.Join(errs, "; "))
		}
	}
	return nil
}

// uncachedConfigMaps is the reconcilers' client, with ConfigMap reads going
// to the API server. The cache holds ConfigMaps as metadata only (the suite
// watch needs no more): a cached read of a full ConfigMap would start an
// informer holding every ConfigMap in the cluster with its data, which any
// tenant can inflate. A suite reads its few case and fixture ConfigMaps when
// it is reconciled, so they are fresh without being cached.
type uncachedConfigMaps struct {
	client.Client
	server client.Reader
}

func NewUncachedConfigMaps(c client.Client, server client.Reader) client.Client {
	return uncachedConfigMaps{Client: c, server: server}
}

func (c uncachedConfigMaps) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*corev1.ConfigMap); ok {
		return c.server.Get(ctx, key, obj, opts...)
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

func (c uncachedConfigMaps) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if _, ok := list.(*corev1.ConfigMapList); ok {
		return c.server.List(ctx, list, opts...)
	}
	return c.Client.List(ctx, list, opts...)
}
