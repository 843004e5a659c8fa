//go:build tools

// Package tools pins runc, the OCI runtime of the real node, built by the
// Makefile with cgo and seccomp.
package tools

import _ "github.com/opencontainers/runc"
