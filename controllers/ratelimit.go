package controllers

// limiterKey names a corpus's shared token bucket: canary probes and suite
// executions against the same corpus draw from one bucket.
func limiterKey(namespace, corpus string) string {
	return namespace + "/" + corpus
}
