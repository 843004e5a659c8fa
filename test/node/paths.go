package node

import "path/filepath"

// Paths are where the node's pieces live: the programs under the tools'
// directory (bin/), everything they write under the node's directory.
type Paths struct {
	// Programs.
	Kubelet, Containerd, Ctr, Shim, Runc, CNIBin, Busybox string
	// Containerd's directories, socket and configuration.
	ContainerdRoot, ContainerdState, ContainerdSocket, ContainerdOpt, ContainerdConfig, RegistryHosts string
	// Runc's state.
	RuncRoot string
	// The CNI configuration and the addresses host-local handed out.
	CNIConf, CNIState string
	// The kubelet's directory and configuration.
	KubeletRoot, KubeletConfig string
	// The containers' logs.
	PodLogs string
	// The registry's blobs.
	RegistryBlobs string
	// The logs of containerd, the kubelet and the registry.
	Logs string
	// State records every change made to the host, for Down.
	State string
}

func newPaths(binDir, dir string) Paths {
	node := filepath.Join(binDir, "node")
	return Paths{
		Kubelet:          filepath.Join(binDir, "k8s", "kubelet"),
		Containerd:       filepath.Join(node, "containerd"),
		Ctr:              filepath.Join(node, "ctr"),
		Shim:             filepath.Join(node, "containerd-shim-runc-v2"),
		Runc:             filepath.Join(node, "runc"),
		CNIBin:           filepath.Join(node, "cni"),
		Busybox:          filepath.Join(node, "debs", "root", "bin", "busybox"),
		ContainerdRoot:   filepath.Join(dir, "containerd", "root"),
		ContainerdState:  filepath.Join(dir, "containerd", "state"),
		ContainerdSocket: filepath.Join(dir, "containerd", "containerd.sock"),
		ContainerdOpt:    filepath.Join(dir, "containerd", "opt"),
		ContainerdConfig: filepath.Join(dir, "containerd", "config.toml"),
		RegistryHosts:    filepath.Join(dir, "containerd", "certs.d"),
		RuncRoot:         filepath.Join(dir, "runc"),
		CNIConf:          filepath.Join(dir, "cni", "net.d"),
		CNIState:         filepath.Join(dir, "cni", "ipam"),
		KubeletRoot:      filepath.Join(dir, "kubelet"),
		KubeletConfig:    filepath.Join(dir, "kubelet-config.yaml"),
		PodLogs:          filepath.Join(dir, "pod-logs"),
		RegistryBlobs:    filepath.Join(dir, "registry"),
		Logs:             filepath.Join(dir, "logs"),
		State:            filepath.Join(dir, "host-changes.json"),
	}
}
