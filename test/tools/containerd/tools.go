//go:build tools

// Package tools pins the container runtime of the real node built by the
// Makefile: containerd, its runc shim and ctr.
package tools

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
	_ "github.com/containerd/containerd/v2/cmd/ctr"
)
