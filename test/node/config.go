package node

import (
	"bytes"
	"encoding/json"
	"fmt"
	"text/template"

	"github.com/sidecarset-operator/sidecarset-operator/test/node/images"
)

// Settings are what the node's configuration files are rendered from.
type Settings struct {
	// Name is the node's name; IP its address (the host's own: the kubelet
	// refuses loopback).
	Name, IP string
	// Paths of the node's pieces.
	Paths Paths
	// Registry is the address of the node's registry.
	Registry string
	// Bridge is the pods' bridge, Subnet their /24 and Gateway the bridge's
	// address in it.
	Bridge, Subnet, Gateway string
	// CgroupRoot is the kubelet's cgroup, in every hierarchy.
	CgroupRoot string
	// ClientCA is the cluster's CA: the kubelet accepts the API server's
	// client certificate signed by it.
	ClientCA string
	// KubeletPort and KubeletHealthzPort are the kubelet's ports (the kwok
	// controller uses the defaults).
	KubeletPort, KubeletHealthzPort int
	// DNS is the pods' name server: the host's (the cluster has no DNS
	// service).
	DNS string
}

// The label and taint that keep every pod off the real node but those that
// ask for it.
const (
	Label = "sidecarset-operator.dev/real-node"
	// Taint's key is the label's; its value "true", its effect NoSchedule.
	Taint = Label
)

// NamespaceAnnotations send every pod of a namespace to the real node, the
// API server adding the node selector and the toleration (PodNodeSelector,
// PodTolerationRestriction), so that manifests run there as written.
func NamespaceAnnotations() map[string]string {
	return map[string]string{
		"scheduler.alpha.kubernetes.io/node-selector":      Label + "=true",
		"scheduler.alpha.kubernetes.io/defaultTolerations": `[{"key":"` + Taint + `","operator":"Exists","effect":"NoSchedule"}]`,
	}
}

// containerdConfig is containerd's configuration: everything under the
// node's directory, runc with cgroupfs, the CNI plugins of bin/node/cni, the
// registry as every host's mirror, and oom_score_adj left alone (root here
// lacks CAP_SYS_RESOURCE, and the kubelet asks for negative ones). NRI is
// off (it would open a socket under /var/run/nri); the opt plugin's
// directory is the node's.
var containerdConfig = template.Must(template.New("containerd").Parse(`version = 3
root = "{{.Paths.ContainerdRoot}}"
state = "{{.Paths.ContainerdState}}"
disabled_plugins = ["io.containerd.nri.v1.nri"]

[grpc]
  address = "{{.Paths.ContainerdSocket}}"

[ttrpc]
  address = "{{.Paths.ContainerdSocket}}.ttrpc"

[plugins.'io.containerd.internal.v1.opt']
  path = "{{.Paths.ContainerdOpt}}"

[plugins.'io.containerd.cri.v1.runtime']
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  enable_cdi = false

[plugins.'io.containerd.cri.v1.runtime'.cni]
  bin_dirs = ["{{.Paths.CNIBin}}"]
  conf_dir = "{{.Paths.CNIConf}}"

[plugins.'io.containerd.cri.v1.runtime'.containerd]
  default_runtime_name = "runc"

[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
  BinaryName = "{{.Paths.Runc}}"
  Root = "{{.Paths.RuncRoot}}"
  SystemdCgroup = false

[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"

[plugins.'io.containerd.cri.v1.images'.pinned_images]
  sandbox = "{{.Sandbox}}"

[plugins.'io.containerd.cri.v1.images'.registry]
  config_path = "{{.Paths.RegistryHosts}}"
`))

// ContainerdConfig renders containerd's config.toml.
func ContainerdConfig(s Settings) ([]byte, error) {
	return render(containerdConfig, struct {
		Settings
		Sandbox string
	}{s, images.SandboxImage})
}

func render(t *template.Template, data any) ([]byte, error) {
	var buf bytes.Buffer
	err := t.Execute(&buf, data)
	return buf.Bytes(), err
}

// RegistryHosts renders the hosts.toml of every registry host (containerd's
// _default): the node's registry serves them all, over plain HTTP.
func RegistryHosts(s Settings) []byte {
	return fmt.Appendf(nil, "# Every registry host is served by the real node's registry.\nserver = \"http://%s\"\n", s.Registry)
}

// CNIConfig renders the pods' network: a bridge of ours (created, with its
// address, before containerd starts) that is not the pods' gateway in the
// plugin's sense (isGateway would turn on the host's ip_forward), host-local
// addresses in the subnet, and a default route through the bridge's address,
// so that pods reach the host's own addresses (the API server) and the host
// reaches them.
func CNIConfig(s Settings) ([]byte, error) {
	conf := map[string]any{
		"cniVersion": "1.0.0",
		"name":       "sidecarset-real-node",
		"plugins": []any{map[string]any{
			"type":      "bridge",
			"bridge":    s.Bridge,
			"isGateway": false,
			"ipMasq":    false,
			"ipam": map[string]any{
				"type":    "host-local",
				"ranges":  []any{[]any{map[string]any{"subnet": s.Subnet, "gateway": s.Gateway}}},
				"routes":  []any{map[string]any{"dst": "0.0.0.0/0"}},
				"dataDir": s.Paths.CNIState,
			},
		}},
	}
	return json.MarshalIndent(conf, "", "  ")
}

// kubeletConfig is the kubelet's configuration. cgroup v1 is allowed (the
// machines have it), the kernel settings are not enforced (the kubelet would
// refuse to start) and no iptables chain is made. The kubelet serves on the
// node's address and ports of its own, authenticates the API server by the
// cluster's CA and asks it who may do what. Evictions wait for a nearly full
// disk; image garbage collection for a full one.
var kubeletConfig = template.Must(template.New("kubelet").Parse(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: {{.IP}}
port: {{.KubeletPort}}
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: {{.KubeletHealthzPort}}
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: {{.ClientCA}}
authorization:
  mode: Webhook
containerRuntimeEndpoint: unix://{{.Paths.ContainerdSocket}}
imageServiceEndpoint: unix://{{.Paths.ContainerdSocket}}
cgroupDriver: cgroupfs
cgroupRoot: {{.CgroupRoot}}
cgroupsPerQOS: true
failCgroupV1: false
failSwapOn: false
makeIPTablesUtilChains: false
protectKernelDefaults: false
podLogsDir: {{.Paths.PodLogs}}
resolvConf: /etc/resolv.conf
clusterDomain: cluster.local
{{- with .DNS}}
clusterDNS:
- {{.}}
{{- end}}
serializeImagePulls: false
maxPods: 50
evictionHard:
  memory.available: 100Mi
  nodefs.available: 1%
  nodefs.inodesFree: 1%
  imagefs.available: 1%
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
registerWithTaints:
- key: {{.Taint}}
  value: "true"
  effect: NoSchedule
`))

// KubeletConfig renders the kubelet's config.yaml.
func KubeletConfig(s Settings) ([]byte, error) {
	return render(kubeletConfig, struct {
		Settings
		Taint string
	}{s, Taint})
}
