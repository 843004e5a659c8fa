package decide

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/internal/candidate"
)

// TestDecide_UncachedNamespace: a pod created right after its namespace,
// before the cache has it, is decided with the namespace read from the API
// server; when it cannot be read at all, only the SidecarSets that need its
// labels and select the pod fail, and a candidate with a namespaceSelector
// that does not select the pod fails nothing.
func TestDecide_UncachedNamespace(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "fresh", Labels: map[string]string{"team": "a"}}}
	empty := fake.NewClientBuilder().WithScheme(scheme).Build()
	live := fake.NewClientBuilder().WithScheme(scheme).WithObjects(ns).Build()

	sidecarSet := func(name, app string, bestEffort bool) *appsv1beta1.SidecarSet {
		s := &appsv1beta1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: name}}
		s.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
		s.Spec.Containers = []appsv1beta1.SidecarContainer{{Container: corev1.Container{Name: name + "-sidecar", Image: "agent:1"}}}
		if bestEffort {
			s.Annotations = map[string]string{appsv1beta1.FailurePolicyAnnotation: appsv1beta1.FailurePolicyIgnore}
		}
		appsv1beta1.SetDefaults(s)
		return s
	}
	teamOnly := func(s *appsv1beta1.SidecarSet) *appsv1beta1.SidecarSet {
		s.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
		return s
	}
	// A candidate of every pod (negative-only selector), selecting neither
	// web nor db pods.
	notWebNorDB := sidecarSet("not-web-nor-db", "", true)
	notWebNorDB.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "app", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"web", "db"}},
	}}
	registry, err := candidate.New(
		sidecarSet("mesh", "web", false),
		teamOnly(sidecarSet("db-agent", "db", false)),
		teamOnly(sidecarSet("cache-agent", "cache", true)),
		teamOnly(notWebNorDB),
	)
	if err != nil {
		t.Fatal(err)
	}
	pod := func(app string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: app, Namespace: "fresh", Labels: map[string]string{"app": app}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "app:1"}}}}
	}
	cases := []struct {
		name         string
		live         client.Reader
		app          string
		injected     string
		denied, warn string
	}{
		{"a pod no namespaceSelector SidecarSet selects does not need the namespace", nil, "web", "mesh", "", ""},
		{"the namespace is read from the API server", live, "db", "db-agent", "", ""},
		{"unreadable: a required SidecarSet that needs it denies the pod, saying why", nil, "db", "", `SidecarSet "db-agent": its namespaceSelector cannot be evaluated: the labels of namespace "fresh" could not be read`, ""},
		{"unreadable: a best-effort one is left out, with a warning", nil, "cache", "", "", `best-effort SidecarSet "cache-agent" was not injected`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := &Injector{Registry: registry, Reader: empty, LiveReader: tc.live}
			d, err := h.Decide(context.Background(), pod(tc.app), "fresh")
			if err != nil {
				t.Fatalf("the decision failed: %v", err)
			}
			switch {
			case tc.denied != "":
				if d.Denied == nil || !strings.Contains(d.Denied.Error(), tc.denied) {
					t.Fatalf("denied with %v, want %q", d.Denied, tc.denied)
				}
				return
			case d.Denied != nil:
				t.Fatalf("denied: %v", d.Denied)
			}
			if got := strings.Join(d.Output.Injected, ","); got != tc.injected {
				t.Fatalf("injected %q, want %q", got, tc.injected)
			}
			if tc.warn != "" && !strings.Contains(strings.Join(d.Output.Warnings, "\n"), tc.warn) {
				t.Fatalf("warnings %q, want %q", d.Output.Warnings, tc.warn)
			}
		})
	}
}
