// Package cli is the logic behind the kubectl-ragcanary plugin: what each
// command reads from the cluster and how it is shown to a person. Durations
// and intervals are formatted by internal/format, the same leaf the
// controllers write their short status fields with, so kubectl get and the
// plugin agree.
package cli
