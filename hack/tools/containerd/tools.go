//go:build tools

// Package tools pins the container runtime the one-node cluster's kubelet
// talks to: containerd, its runc shim and ctr (to import images built here).
package tools

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
	_ "github.com/containerd/containerd/v2/cmd/ctr"
)
