//go:build tools

// Package tools pins the Kubernetes commands of the oldest supported minor
// that the Makefile builds into bin/k8s-1.35: the API server the envtest
// suites run on, and the kubectl some of them call.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
