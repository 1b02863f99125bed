package controllers

import (
	"sigs.k8s.io/controller-runtime/pkg/cache"
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
