package node

import (
	"encoding/json"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func testSettings() Settings {
	return Settings{
		Name: "real-node", IP: "192.0.2.2", Paths: newPaths("/repo/bin", "/repo/bin/dev/node"), Registry: "127.0.0.1:5123",
		Bridge: "ssnode0", Subnet: "172.30.213.0/24", Gateway: "172.30.213.1", CgroupRoot: CgroupRoot,
		ClientCA: "/pki/ca.crt", KubeletPort: 10350, KubeletHealthzPort: 10348, DNS: "10.255.255.53",
	}
}

// What the node needs of containerd on these machines, and nothing of the
// host's own paths.
func TestContainerdConfig_KeepsEverythingUnderTheNodeAndItsOOMScoresAlone(t *testing.T) {
	t.Parallel()
	got, err := ContainerdConfig(testSettings())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`root = "/repo/bin/dev/node/containerd/root"`, `state = "/repo/bin/dev/node/containerd/state"`,
		`address = "/repo/bin/dev/node/containerd/containerd.sock"`,
		`restrict_oom_score_adj = true`, `netns_mounts_under_state_dir = true`, `disabled_plugins = ["io.containerd.nri.v1.nri"]`,
		`path = "/repo/bin/dev/node/containerd/opt"`, `BinaryName = "/repo/bin/node/runc"`, `Root = "/repo/bin/dev/node/runc"`,
		`SystemdCgroup = false`, `bin_dirs = ["/repo/bin/node/cni"]`, `sandbox = "registry.k8s.io/pause:3.10.1"`,
		`config_path = "/repo/bin/dev/node/containerd/certs.d"`,
	} {
		if !strings.Contains(string(got), want) {
			t.Errorf("containerd's configuration lacks %s:\n%s", want, got)
		}
	}
	if hosts := string(RegistryHosts(testSettings())); !strings.Contains(hosts, `server = "http://127.0.0.1:5123"`) {
		t.Errorf("hosts.toml does not name the registry: %s", hosts)
	}
}

func TestKubeletConfig_AllowsCgroupV1TaintsTheNodeAndLeavesTheHostsKernelAndIPTablesAlone(t *testing.T) {
	t.Parallel()
	raw, err := KubeletConfig(testSettings())
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		t.Fatalf("%v\n%s", err, raw)
	}
	for key, want := range map[string]any{
		"failCgroupV1": false, "cgroupDriver": "cgroupfs", "cgroupRoot": CgroupRoot, "makeIPTablesUtilChains": false,
		"protectKernelDefaults": false, "failSwapOn": false, "address": "192.0.2.2", "port": float64(10350), "readOnlyPort": float64(0),
		"healthzBindAddress": "127.0.0.1", "podLogsDir": "/repo/bin/dev/node/pod-logs",
		"containerRuntimeEndpoint": "unix:///repo/bin/dev/node/containerd/containerd.sock",
	} {
		if cfg[key] != want {
			t.Errorf("%s = %v, want %v", key, cfg[key], want)
		}
	}
	taints, _ := json.Marshal(cfg["registerWithTaints"])
	if string(taints) != `[{"effect":"NoSchedule","key":"sidecarset-operator.dev/real-node","value":"true"}]` {
		t.Errorf("registerWithTaints = %s", taints)
	}
	if dns, _ := json.Marshal(cfg["clusterDNS"]); string(dns) != `["10.255.255.53"]` {
		t.Errorf("clusterDNS = %s", dns)
	}
	if anon, _ := json.Marshal(cfg["authentication"]); !strings.Contains(string(anon), `"anonymous":{"enabled":false}`) {
		t.Errorf("anonymous access: %s", anon)
	}
}

// The pods' network turns no forwarding on and routes the pods to the host
// through the bridge's address.
func TestCNIConfig_IsABridgeThatIsNotTheGateway(t *testing.T) {
	t.Parallel()
	raw, err := CNIConfig(testSettings())
	if err != nil {
		t.Fatal(err)
	}
	var conf struct {
		Plugins []struct {
			Type      string
			Bridge    string
			IsGateway bool
			IPMasq    bool
			IPAM      struct {
				Type    string
				Ranges  [][]map[string]string
				Routes  []map[string]string
				DataDir string
			}
		}
	}
	if err := json.Unmarshal(raw, &conf); err != nil {
		t.Fatal(err)
	}
	if len(conf.Plugins) != 1 {
		t.Fatalf("plugins: %s", raw)
	}
	p := conf.Plugins[0]
	if p.Type != "bridge" || p.Bridge != "ssnode0" || p.IsGateway || p.IPMasq || p.IPAM.Type != "host-local" ||
		p.IPAM.Ranges[0][0]["subnet"] != "172.30.213.0/24" || p.IPAM.Ranges[0][0]["gateway"] != "172.30.213.1" ||
		p.IPAM.Routes[0]["dst"] != "0.0.0.0/0" || p.IPAM.DataDir != "/repo/bin/dev/node/cni/ipam" {
		t.Errorf("the pods' network: %s", raw)
	}
}

func TestPushReference_NamesTheHostAsContainerdDoes(t *testing.T) {
	t.Parallel()
	for ref, want := range map[string]string{
		"nginx:1.25":                             "127.0.0.1:5123/docker.io/library/nginx:1.25",
		"openkruise/hotupgrade-sample:sidecarv1": "127.0.0.1:5123/docker.io/openkruise/hotupgrade-sample:sidecarv1",
		"ghcr.io/sidecarset-operator/x:v0.1.0":   "127.0.0.1:5123/ghcr.io/sidecarset-operator/x:v0.1.0",
		"registry.k8s.io/pause:3.10.1":           "127.0.0.1:5123/registry.k8s.io/pause:3.10.1",
		"busybox":                                "127.0.0.1:5123/docker.io/library/busybox:latest",
	} {
		got, err := PushReference("127.0.0.1:5123", ref)
		if err != nil {
			t.Fatal(err)
		}
		if got.String() != want {
			t.Errorf("PushReference(%q) = %s, want %s", ref, got, want)
		}
	}
}
