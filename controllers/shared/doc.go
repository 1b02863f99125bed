// Package shared holds what the per-kind controller packages share and no
// kind owns: the scheduling of child runs for RevocationCanary and EvalSuite
// (scheduling.go), sharding across replicas (sharding.go), the options the
// manager passes (options.go), the cache and uncached ConfigMap reads
// (cache.go), watch mappings (mapping.go), status patches (status.go), the
// object metrics collector, and the few helpers two kinds need (canary.go,
// corpus.go, suite.go). It imports no kind's package.
package shared
