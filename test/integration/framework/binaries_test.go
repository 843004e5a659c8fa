package framework

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/version"
)

func TestBinariesFor(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		env  map[string]string
		want Binaries
	}{
		{"nothing set: bin/k8s", nil,
			Binaries{APIServer: "/repo/bin/k8s/kube-apiserver", Kubectl: "/repo/bin/k8s/kubectl", Etcd: "/repo/bin/k8s/etcd"}},
		{"make's KUBEBUILDER_ASSETS: etcd from there, the rest from bin/k8s", map[string]string{"KUBEBUILDER_ASSETS": "/b/k8s"},
			Binaries{APIServer: "/repo/bin/k8s/kube-apiserver", Kubectl: "/repo/bin/k8s/kubectl", Etcd: "/b/k8s/etcd"}},
		{"the oldest minor: its API server and kubectl, etcd from KUBEBUILDER_ASSETS",
			map[string]string{"KUBEBUILDER_ASSETS": "/b/k8s", K8sBinDirEnv: "/b/k8s-1.35"},
			Binaries{APIServer: "/b/k8s-1.35/kube-apiserver", Kubectl: "/b/k8s-1.35/kubectl", Etcd: "/b/k8s/etcd"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := binariesFor("/repo", func(k string) string { return tc.env[k] }); got != tc.want {
				t.Errorf("binariesFor = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestTooOld(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		server   string
		minor    uint
		wantSkip bool
		wantMsg  string
	}{
		{"v1.35.4", 37, true, "needs Kubernetes 1.37, the API server is v1.35.4: why"},
		{"v1.37.1", 37, false, ""},
		{"v1.38.0", 37, false, ""},
		{"v1.35.4", 35, false, ""},
	} {
		msg, skip := tooOld(version.MustParseGeneric(tc.server), tc.minor, "why")
		if skip != tc.wantSkip || msg != tc.wantMsg {
			t.Errorf("tooOld(%s, 1.%d) = %q, %v; want %q, %v", tc.server, tc.minor, msg, skip, tc.wantMsg, tc.wantSkip)
		}
	}
}
