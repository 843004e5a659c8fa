//go:build tools

// Package tools pins the CNI plugins of the real node built by the Makefile:
// bridge, host-local and loopback.
package tools

import (
	_ "github.com/containernetworking/plugins/plugins/ipam/host-local"
	_ "github.com/containernetworking/plugins/plugins/main/bridge"
	_ "github.com/containernetworking/plugins/plugins/main/loopback"
)
