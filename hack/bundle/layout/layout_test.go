package layout

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestManifestFileName_Conventions(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		gvk  schema.GroupVersionKind
		obj  string
		want string
	}{
		{"the CSV is named after the package", schema.GroupVersionKind{Group: "operators.coreos.com", Version: "v1alpha1", Kind: "ClusterServiceVersion"}, "pkg.v1.0.0", "pkg.clusterserviceversion.yaml"},
		{"a CRD is named group_plural", schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}, "sidecarsets.apps.kruise.io", "apps.kruise.io_sidecarsets.yaml"},
		{"a core object omits the group", schema.GroupVersionKind{Version: "v1", Kind: "Service"}, "metrics", "metrics_v1_service.yaml"},
		{"a grouped object names its group", schema.GroupVersionKind{Group: "policy", Version: "v1", Kind: "PodDisruptionBudget"}, "op", "op_policy_v1_poddisruptionbudget.yaml"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tc.want, ManifestFileName("pkg", tc.gvk, tc.obj)); diff != "" {
				t.Errorf("ManifestFileName (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSupported_Kinds(t *testing.T) {
	t.Parallel()
	got := map[string]bool{}
	for _, k := range []string{"ClusterServiceVersion", "CustomResourceDefinition", "Service", "PodDisruptionBudget", "ClusterRole",
		"Deployment", "MutatingWebhookConfiguration", "Namespace", "ValidatingAdmissionPolicy"} {
		got[k] = Supported(k)
	}
	want := map[string]bool{"ClusterServiceVersion": true, "CustomResourceDefinition": true, "Service": true, "PodDisruptionBudget": true,
		"ClusterRole": true, "Deployment": false, "MutatingWebhookConfiguration": false, "Namespace": false, "ValidatingAdmissionPolicy": false}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Supported (-want +got):\n%s", diff)
	}
}

func TestDockerfileLabels_Sorted(t *testing.T) {
	t.Parallel()
	got := DockerfileLabels(map[string]string{"b": "2", "a": "1"})
	if diff := cmp.Diff("LABEL a=1\nLABEL b=2\n", got); diff != "" {
		t.Errorf("DockerfileLabels (-want +got):\n%s", diff)
	}
}
