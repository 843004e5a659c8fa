package rbac_test

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestPrometheusComponent_ScrapesTheMetricsService: config/default with the
// config/prometheus component has a ServiceMonitor, in the operator's
// namespace, that selects the metrics Service and names its port, and binds
// a ClusterRole that may get /metrics; the PrometheusRule is there too.
func TestPrometheusComponent_ScrapesTheMetricsService(t *testing.T) {
	t.Parallel()
	objects := renderWithComponent(t, "prometheus")
	var monitors, rules []*unstructured.Unstructured
	services := map[string]*corev1.Service{}
	roles := map[string]*rbacv1.ClusterRole{}
	var bindings []*rbacv1.ClusterRoleBinding
	for _, u := range objects {
		switch u.GetKind() {
		case "ServiceMonitor":
			monitors = append(monitors, u)
		case "PrometheusRule":
			rules = append(rules, u)
		case "Service":
			s := &corev1.Service{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, s); err != nil {
				t.Fatal(err)
			}
			services[s.Name] = s
		case "ClusterRole":
			r := &rbacv1.ClusterRole{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, r); err != nil {
				t.Fatal(err)
			}
			roles[r.Name] = r
		case "ClusterRoleBinding":
			b := &rbacv1.ClusterRoleBinding{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, b); err != nil {
				t.Fatal(err)
			}
			bindings = append(bindings, b)
		}
	}
	if len(monitors) != 1 || len(rules) != 1 {
		t.Fatalf("%d ServiceMonitors and %d PrometheusRules, want one of each", len(monitors), len(rules))
	}
	metrics := services["sidecarset-operator-metrics"]
	if metrics == nil {
		t.Fatal("no sidecarset-operator-metrics Service")
	}
	sm := monitors[0]
	if sm.GetNamespace() != metrics.Namespace || rules[0].GetNamespace() != metrics.Namespace {
		t.Errorf("the ServiceMonitor is in %q and the PrometheusRule in %q, want the metrics Service's namespace %q",
			sm.GetNamespace(), rules[0].GetNamespace(), metrics.Namespace)
	}
	matchLabels, _, err := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	if err != nil {
		t.Fatal(err)
	}
	if !labels.SelectorFromSet(matchLabels).Matches(labels.Set(metrics.Labels)) {
		t.Errorf("the ServiceMonitor's selector %v does not select the metrics Service (labels %v)", matchLabels, metrics.Labels)
	}
	endpoints, _, err := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if err != nil || len(endpoints) != 1 {
		t.Fatalf("the ServiceMonitor's endpoints: %v %v", endpoints, err)
	}
	port, _, _ := unstructured.NestedString(endpoints[0].(map[string]any), "port")
	if !slices.ContainsFunc(metrics.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == port }) {
		t.Errorf("the ServiceMonitor scrapes port %q, which the metrics Service does not name", port)
	}
	granted := false
	for _, b := range bindings {
		r := roles[b.RoleRef.Name]
		if b.RoleRef.Kind != "ClusterRole" || r == nil {
			continue
		}
		for _, rule := range r.Rules {
			if slices.Contains(rule.NonResourceURLs, "/metrics") && slices.Contains(rule.Verbs, "get") &&
				slices.ContainsFunc(b.Subjects, func(s rbacv1.Subject) bool {
					return s.Kind == rbacv1.ServiceAccountKind && s.Name != "sidecarset-operator"
				}) {
				granted = true
			}
		}
	}
	if !granted {
		t.Error("no ClusterRoleBinding grants get /metrics to a Prometheus' ServiceAccount")
	}
}
